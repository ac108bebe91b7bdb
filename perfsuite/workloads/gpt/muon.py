"""Muon: momentum SGD whose update for a hidden weight matrix is orthogonalized.

Written here from Keller Jordan's write-up "Muon: An optimizer for hidden layers in neural
networks" (2024) and the modded-nanoGPT speedrun records that use it. For a 2-D parameter W
with gradient G: the Nesterov momentum of G is replaced by the nearest semi-orthogonal matrix
(U V^T of its SVD U S V^T, all singular values pushed towards 1), approximated by a few
Newton-Schulz iterations, scaled by sqrt(max(1, rows / cols)), and applied with the learning
rate. Embeddings, the head and 1-D parameters (norm scales, biases) stay with AdamW: Muon is
for the matrices inside the blocks.

The Newton-Schulz iterations (perfsuite/workloads/newton_schulz.py) are matrix products, so
they are FLOPs of the optimizer phase; `newton_schulz_flops` there is their analytic count,
which the tests compare with the counter.
"""

from __future__ import annotations

from typing import Any

import torch

from perfsuite.workloads.newton_schulz import newton_schulz

NS_STEPS = 5


class Muon(torch.optim.Optimizer):
    """Muon for 2-D parameters. `lr` is the step length of the orthogonalized update;
    `momentum` the Nesterov momentum of the gradient (0.95 in the write-up)."""

    def __init__(
        self,
        params: Any,
        lr: float = 0.02,
        momentum: float = 0.95,
        nesterov: bool = True,
        steps: int = NS_STEPS,
        weight_decay: float = 0.0,
    ) -> None:
        defaults = dict(
            lr=lr, momentum=momentum, nesterov=nesterov, steps=steps, weight_decay=weight_decay
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon takes 2-D parameters only, got shape {tuple(p.shape)}")

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(g)
                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(g)
                d = g.add(buf, alpha=group["momentum"]) if group["nesterov"] else buf
                update = newton_schulz(d.float(), group["steps"]).to(p.dtype)
                scale = max(1.0, p.shape[0] / p.shape[1]) ** 0.5
                if group["weight_decay"]:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(update, alpha=-group["lr"] * scale)
        return loss


class Combined:
    """Several optimizers stepped as one (Muon for hidden matrices, AdamW for the rest), with
    the optimizer interface the runner and the LR schedule use: `param_groups` (all of them,
    so one LambdaLR scales every group), `state_dict`/`load_state_dict`, `zero_grad`, `step`."""

    def __init__(self, *optimizers: torch.optim.Optimizer) -> None:
        self.optimizers = optimizers

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return [g for o in self.optimizers for g in o.param_groups]

    @property
    def state(self) -> dict[Any, Any]:
        return {k: v for o in self.optimizers for k, v in o.state.items()}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers:
            o.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Any = None) -> None:
        for o in self.optimizers:
            o.step()

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [o.state_dict() for o in self.optimizers]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for o, s in zip(self.optimizers, state["optimizers"], strict=True):
            o.load_state_dict(s)
