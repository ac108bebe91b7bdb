"""The runner's framework hooks: what `runner/routes/run.py` asks of PyTorch or TensorFlow.

The loop owns the clock, evaluations, threshold rule and record for both frameworks; the few
things that touch a framework's objects (building the model and train state, reading switch
effects back, the FLOP count, the profile window, inference, the loss accumulator) go through
one of these objects. `TorchParts` wraps the existing PyTorch code in `assemble` and `capture`;
the TensorFlow hooks live in `runner/frameworks/tf_parts.py`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from perfsuite.backends import parse_device, torch_backend
from perfsuite.backends.tensorflow import TFBackend
from perfsuite.runner.engine import capture
from perfsuite.runner.engine.profile_window import ProfileWindow
from perfsuite.runner.frameworks import assemble
from perfsuite.runner.frameworks.tf_parts import TFRunParts
from perfsuite.runner.record import checkpoint

FRAMEWORKS = ("pytorch", "tensorflow")

# The framework's own objects pass through the loop untouched; the names say what each is.
Workload = Any  # a workloads.base.Workload (or its TensorFlow twin)
Recipe = Any  # the workload's resolved recipe
Backend = Any  # backends.pytorch.TorchBackend or backends.tensorflow.TFBackend
Switches = Any  # workloads.switches.Switches: the run's parsed --switch values
Model = Any  # torch.nn.Module or a Keras model
TrainState = Any  # the workload's train state (model, optimizer, schedule)
Batch = Any
Tensor = Any  # a framework scalar (the loss)


@runtime_checkable
class FrameworkParts(Protocol):
    """What the run loop needs from a framework: every call that touches a framework's objects.
    `TorchParts` below and `tf_parts.TFRunParts` implement it."""

    framework: str  # "pytorch" or "tensorflow"

    def apply_process_switches(self, switches: Switches) -> Callable[[], None]:
        """Apply process-wide switches (tf32); the returned call restores them."""
        ...

    def check_switches(self, switches: Switches, backend: Backend) -> None:
        """One-line ValueError for a switch this device cannot run."""
        ...

    def load_data(self, wl: Workload, data_dir: str | None, backend: Backend,
                  switches: Switches) -> Any:  # fmt: skip
        ...

    def build_model(self, wl: Workload, recipe: Recipe, backend: Backend, switches: Switches,
                    seed: int) -> Model:  # fmt: skip
        ...

    def build_state(self, wl: Workload, recipe: Recipe, model: Model, steps_per_epoch: int,
                    backend: Backend, switches: Switches) -> TrainState:  # fmt: skip
        ...

    def parameter_count(self, model: Model) -> int: ...

    def watch_first_layer(self, state: TrainState) -> tuple[dict[str, Any], Any]:
        """(what the first layer saw, the call that removes the watch)."""
        ...

    def switch_effects(self, state: TrainState, switches: Switches,
                       seen: dict[str, Any]) -> dict:  # fmt: skip
        ...

    def math_section(self, state: TrainState, seen: dict[str, Any]) -> dict[str, Any]: ...

    def count_step_work(self, wl: Workload, state: TrainState, batch: Batch) -> dict[str, Any]: ...

    def profile_window(self, run_dir: Any, backend: Backend, wl: Workload, state: TrainState,
                       batches: Any, active: int) -> dict[str, Any] | None:  # fmt: skip
        ...

    def save_threshold_model(self, run_dir: Any, module: Model, **where: Any) -> dict[str, Any]: ...

    def threshold_model(self, record: dict[str, Any], module: Model) -> Model: ...

    def zero_loss(self, backend: Backend) -> Tensor: ...

    def add_loss(self, total: Tensor, loss: Tensor) -> Tensor: ...


def framework_backend(framework: str, device: str) -> Any:
    """The backend of `framework` for `device`; one-line ValueError for an unknown one."""
    if framework == "pytorch":
        return torch_backend(device)
    if framework == "tensorflow":
        return TFBackend(parse_device(device))
    raise ValueError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")


def run_parts(framework: str) -> FrameworkParts:
    """The hooks of `framework` (TensorFlow is imported by its backend, when a run builds one)."""
    if framework == "tensorflow":
        return TFRunParts()
    return TorchParts()


class TorchParts:
    """PyTorch: the hooks delegate to runner/frameworks/assemble.py and runner/engine/capture.py."""

    framework = "pytorch"

    def apply_process_switches(self, switches: Any) -> Any:
        return assemble.apply_process_switches(switches)

    def check_switches(self, switches: Any, backend: Any) -> None:
        return None

    def load_data(self, wl: Any, data_dir: str | None, backend: Any, switches: Any) -> Any:
        return wl.load_data(data_dir, backend.torch_device)

    def build_model(self, wl: Any, recipe: Any, backend: Any, switches: Any, seed: int) -> Any:
        return wl.build_model(recipe).to(backend.torch_device)

    def build_state(self, wl: Any, recipe: Any, model: Any, steps_per_epoch: int,
                    backend: Any, switches: Any) -> Any:  # fmt: skip
        return assemble.build_state(wl, recipe, model, steps_per_epoch, backend, switches)

    def parameter_count(self, model: Any) -> int:
        return sum(p.numel() for p in model.parameters())

    def watch_first_layer(self, state: Any) -> tuple[dict[str, Any], Any]:
        return assemble.watch_first_layer(state)

    def switch_effects(self, state: Any, switches: Any, seen: dict[str, Any]) -> dict:
        return assemble.switch_effects(state, switches, seen)

    def math_section(self, state: Any, seen: dict[str, Any]) -> dict[str, Any]:
        return assemble.math_section(state, seen)

    def count_step_work(self, wl: Any, state: Any, batch: Any) -> dict[str, Any]:
        return capture.count_step_work(wl, state, batch)

    def profile_window(self, run_dir: Any, backend: Any, wl: Any, state: Any, batches: Any,
                       active: int) -> dict[str, Any] | None:  # fmt: skip
        window = ProfileWindow(run_dir, backend, wait=2, warmup=1, active=active)
        return capture.profile_window(wl, state, batches, window)

    def save_threshold_model(self, run_dir: Any, module: Any, **where: Any) -> dict[str, Any]:
        return checkpoint.save_threshold_model(run_dir, module, **where)

    def threshold_model(self, record: dict[str, Any], module: Any) -> Any:
        """A copy of `module` holding the checkpoint's weights (with --keep-going the live
        model is the last epoch's, not the one that met the target)."""
        model = copy.deepcopy(module)
        model.load_state_dict(checkpoint.load_threshold_model(record))
        return model

    def zero_loss(self, backend: Any) -> Any:
        import torch

        return torch.zeros((), device=backend.torch_device)

    def add_loss(self, total: Any, loss: Any) -> Any:
        return total + loss.float()
