"""Muon on the conv filters: the optimizer of the 2024-2025 CIFAR-10 speed records.

Written here from Keller Jordan's write-ups of Muon (kellerjordan.github.io/posts/muon, and the
airbench94_muon record that ran 2.59 s on an A100) and the 2025 community record built on it;
none of their code. The idea: for a weight that acts as a matrix (a conv filter bank, out x
in*k*k), replace the momentum update by its nearest semi-orthogonal matrix, so that every
direction the update spans moves by the same amount instead of the few dominant ones. The
orthogonalization is a few steps of a quintic Newton-Schulz iteration (matrix products only,
cheap in bf16 on tensor cores), not an SVD. Each step also rescales the filter bank to a fixed
norm (sqrt of its output channels), so the effective step size does not shrink as weights grow.

Everything that is not a trainable filter bank (BN shifts, the whitening bias, the head) stays
on Nesterov SGD at its own learning rate, with decoupled weight decay. There is no Lookahead:
the record drops it. The schedule is a linear decay to zero over the run, and the whitening
bias's rate decays to zero over the epochs it trains (`whiten_bias_epochs`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from perfsuite.workloads.base import Recipe
from perfsuite.workloads.newton_schulz import newton_schulz


class MuonSGD(torch.optim.Optimizer):
    """One optimizer, two rules, chosen per parameter group by its `rule`:

    - "muon" (4-D filter banks): buf <- m buf + g; u = g + m buf (Nesterov); the filter bank
      is rescaled to norm sqrt(out channels); then p <- p - lr * NS(u as out x rest);
    - "sgd": Nesterov SGD as torch.optim.SGD computes it, with decoupled weight decay
      p <- p (1 - lr * weight_decay) applied before the step.

    One object, so the runner's detours snapshot and restore all of its state through one
    `state_dict`, as for any optimizer."""

    def __init__(self, groups: list[dict], momentum: float = 0.85, ns_steps: int = 3) -> None:
        for g in groups:
            if g.get("rule") not in ("muon", "sgd"):
                raise ValueError(f"MuonSGD: group rule must be muon or sgd, got {g.get('rule')!r}")
        super().__init__(groups, {"momentum": momentum, "weight_decay": 0.0, "lr": 0.0})
        self.ns_steps = ns_steps

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        for group in self.param_groups:
            lr, m = group["lr"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p.grad)
                buf = state["momentum_buffer"]
                buf.mul_(m).add_(p.grad)
                update = p.grad.add(buf, alpha=m)
                if group["rule"] == "muon":
                    p.mul_(math.sqrt(p.shape[0]) / (p.norm() + 1e-12))
                    ortho = newton_schulz(update.reshape(p.shape[0], -1), self.ns_steps)
                    p.add_(ortho.view_as(p), alpha=-lr)
                else:
                    if group["weight_decay"]:
                        p.mul_(1.0 - lr * group["weight_decay"])
                    p.add_(update, alpha=-lr)
        return None


def muon_groups(model: nn.Module, recipe: Recipe) -> list[dict]:
    """Parameter groups of the fast net: trainable 4-D filter banks on Muon at `muon_lr`
    (momentum `muon_momentum`); BN shifts and the whitening bias on SGD at `bias_lr`;
    everything else (the head) at `head_lr`. `sgd_weight_decay` is the SGD groups' decoupled
    shrink per step at the schedule's start (it follows the schedule); Muon's fixed filter
    norm needs none. These are recipe `extra` keys, not the Recipe's lr/momentum/weight_decay
    (those are the SGD recipe's), so the `muon` switch works on any fast recipe."""
    ex = recipe.extra
    wd = float(ex.get("sgd_weight_decay", 0.004 / 0.15))
    filters, biases, rest = [], [], []
    whiten_bias = getattr(getattr(model, "whiten", None), "bias", None)
    for mod in model.modules():
        for p in mod.parameters(recurse=False):
            if not p.requires_grad and p is not whiten_bias:
                continue
            if p.ndim == 4:
                filters.append(p)
            elif isinstance(mod, nn.modules.batchnorm._BatchNorm) or p is whiten_bias:
                biases.append(p)
            else:
                rest.append(p)
    bias_lr, head_lr = float(ex.get("bias_lr", 0.053)), float(ex.get("head_lr", 8.28e-4))
    # the whitening bias comes first: its schedule differs (see muon_from_recipe)
    whiten = [p for p in biases if p is whiten_bias]
    others = [p for p in biases if p is not whiten_bias]
    groups = [
        {"params": whiten, "rule": "sgd", "lr": bias_lr, "weight_decay": wd / bias_lr},
        {"params": others, "rule": "sgd", "lr": bias_lr, "weight_decay": wd / bias_lr},
        {"params": rest, "rule": "sgd", "lr": head_lr, "weight_decay": wd / head_lr},
        {
            "params": filters,
            "rule": "muon",
            "lr": float(ex.get("muon_lr", 0.24)),
            "momentum": float(ex.get("muon_momentum", 0.6)),
        },
    ]
    return [g for g in groups if g["params"]]


def muon_from_recipe(
    model: nn.Module, recipe: Recipe, steps_per_epoch: int
) -> tuple[MuonSGD, torch.optim.lr_scheduler.LambdaLR]:
    """`MuonSGD` over `muon_groups` with `sgd_momentum`, and its schedule: every
    group decays linearly to zero over the run; the whitening bias's group (when trainable at
    all) decays to zero over `whiten_bias_epochs`, after which the workload freezes it."""
    if steps_per_epoch < 1 or recipe.epochs <= 0:
        raise ValueError("muon optimizer: epochs and steps_per_epoch must be positive")
    groups = muon_groups(model, recipe)
    ex = recipe.extra
    opt = MuonSGD(
        groups,
        momentum=float(ex.get("sgd_momentum", 0.85)),
        ns_steps=int(ex.get("ns_steps", 3)),
    )
    total = math.ceil(recipe.epochs * steps_per_epoch)
    bias_steps = max(1, int(recipe.extra.get("whiten_bias_epochs", 3)) * steps_per_epoch)
    whiten_bias = getattr(getattr(model, "whiten", None), "bias", None)

    def linear(n: int) -> float:
        return max(0.0, 1.0 - n / total)

    def whiten(n: int) -> float:
        return max(0.0, 1.0 - n / bias_steps)

    rules = [
        whiten if any(p is whiten_bias for p in g["params"]) else linear for g in opt.param_groups
    ]
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, rules)
