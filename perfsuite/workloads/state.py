"""What one training step works on, and the detour that runs steps off the books.

`TrainState` bundles the model, optimizer, schedule and the switches in effect, so the one
`Workload.train_step` serves training, FLOP counting and profiling alike. `detour(state)` runs
extra steps (the untimed warm-up, the FLOP-counted step, the profile window) on the run's own
model and then puts every weight, buffer, gradient, optimizer moment, schedule position and RNG
state back, including tensors the optimizer trains outside the module (a user's loop may pass
`perfsuite.track` a backbone while its optimizer also trains a head): the run continues exactly
where it was, while caches that only make later steps faster (cuDNN autotuning, compiled
graphs, the allocator's pool) stay warm, as they would anyway. The workload's and its data
source's attributes, `extras` and the Python and NumPy RNGs are put back too (keep.py).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from perfsuite.workloads import keep


@dataclass
class TrainState:
    """Everything a training step touches. `model` is what the step calls (compiled when the
    `compile` switch is on); `module` is the eager nn.Module (state dicts, FLOP counting)."""

    model: Any
    module: Any
    optimizer: Any
    scheduler: Any | None
    recipe: Any
    backend: Any
    precision: str | None = None  # autocast: None (fp32), "bf16", "fp16"
    scaler: Any | None = None  # loss scaling for fp16
    channels_last: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    # objects whose attributes a detour puts back too (the runner's: workload, data source)
    owners: tuple[Any, ...] = ()

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        return self.backend.autocast(self.precision)

    def inputs(self, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        """Inputs in the memory format the model runs in (4-D tensors only)."""
        if not self.channels_last:
            return inputs
        import torch

        return tuple(
            x.contiguous(memory_format=torch.channels_last) if getattr(x, "ndim", 0) == 4 else x
            for x in inputs
        )

    def loose_tensors(self, state: dict[str, Any]) -> list[Any]:
        """Tensors a step may change that the module's state dict (`state`, taken once by the
        caller) leaves out: parameters the optimizer trains outside the module and the
        module's non-persistent buffers."""
        held = {id(t) for t in self.module.parameters()}
        keys = set(state)
        loose = []
        for name, buf in self.module.named_buffers():
            if name not in keys and id(buf) not in held:
                held.add(id(buf))
                loose.append(buf)
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in held:
                    held.add(id(p))
                    loose.append(p)
        return loose

    def snapshot(self) -> dict[str, Any]:
        import torch

        state = self.module.state_dict()
        loose = self.loose_tensors(state)
        params = list(self.module.parameters()) + [t for t in loose if t.requires_grad]
        snap: dict[str, Any] = {
            "module": {k: v.detach().clone() for k, v in state.items()},
            "loose": [(t, t.detach().clone()) for t in loose],
            # gradients: a loop that accumulates them over several steps must find its own
            "grads": [(p, p.grad, None if p.grad is None else p.grad.clone()) for p in params],
            "optimizer": copy.deepcopy(self.optimizer.state_dict()),
            "rng": torch.get_rng_state(),
        }
        if self.scheduler is not None:
            snap["scheduler"] = copy.deepcopy(self.scheduler.state_dict())
        if self.scaler is not None:
            snap["scaler"] = copy.deepcopy(self.scaler.state_dict())
        if self.backend.device.is_gpu:
            snap["cuda_rng"] = torch.cuda.get_rng_state(self.backend.torch_device)
        return snap

    def restore(self, snap: dict[str, Any]) -> None:
        import torch

        self.module.load_state_dict(snap["module"])
        with torch.no_grad():
            for tensor, saved in snap["loose"]:
                tensor.copy_(saved)
            for p, grad, saved in snap["grads"]:
                if grad is not None:
                    grad.copy_(saved)  # the same tensor object: views into it stay valid
                p.grad = grad
        self.optimizer.load_state_dict(snap["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(snap["scheduler"])
        if self.scaler is not None:
            self.scaler.load_state_dict(snap["scaler"])
        torch.set_rng_state(snap["rng"])
        if "cuda_rng" in snap:
            torch.cuda.set_rng_state(snap["cuda_rng"], self.backend.torch_device)


@contextlib.contextmanager
def detour(state: TrainState) -> Iterator[TrainState]:
    """Run steps that must not count: on exit the state is exactly as on entry, and so are
    `state.extras`, the attributes of `state.owners` and the Python and NumPy RNGs
    (perfsuite/workloads/keep.py; an iterator held there is refused on entry)."""
    restored = ("model", "module", "optimizer", "scheduler", "scaler", "backend")
    put_back = keep.save(
        getattr(state, "owners", ()),
        getattr(state, "extras", None),
        [getattr(state, name, None) for name in restored],
    )
    snap = state.snapshot()
    try:
        yield state
    finally:
        state.backend.sync()
        state.restore(snap)
        put_back()


@contextlib.contextmanager
def no_phase(name: str) -> Iterator[None]:
    """The default `phase` of a training step: marks nothing."""
    yield
