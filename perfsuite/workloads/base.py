"""The workload seam: a workload owns its model, data and training step; the runner owns the
clock, the evaluation schedule, the threshold rule, the record and the instrumentation hooks.

`Workload.train_step` is THE training step: the runner's epochs, the FLOP count and the profile
window all call it (with a different `phase` marker), so what is counted and profiled is what
is timed. A workload may override it (EMA, lookahead, several inputs); the default is one
forward/loss/backward/optimizer step with the switches in the TrainState applied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from perfsuite.workloads.data import Batch, DataSource, SyntheticSource
from perfsuite.workloads.state import TrainState, no_phase
from perfsuite.workloads.switches import COMMON

Phase = Callable[[str], AbstractContextManager[Any]]


@dataclass
class Recipe:
    """Training hyper-parameters. Every field can be overridden with `run --set key=value`."""

    epochs: int = 10
    batch_size: int = 64
    lr: float = 0.1
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 5e-4
    label_smoothing: float = 0.0
    warmup_fraction: float = 0.25
    extra: dict[str, Any] = field(default_factory=dict)

    def override(self, key: str, raw: str) -> None:
        """Set a field (or an `extra` entry) from a string, converting to the field's type."""
        names = {f.name: f for f in dataclasses.fields(self)}
        if key in names and key != "extra":
            current = getattr(self, key)
            setattr(self, key, _convert(raw, type(current), key))
        elif key in self.extra:
            self.extra[key] = _convert(raw, type(self.extra[key]), key)
        else:
            known = sorted([n for n in names if n != "extra"] + list(self.extra))
            raise ValueError(f"unknown recipe field {key!r}; known: {', '.join(known)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def one_cycle_schedule(optimizer: Any, recipe: Recipe, steps_per_epoch: int) -> Any:
    """LambdaLR: linear warm-up over `warmup_fraction` of all steps, then linear decay to 0
    (shared by the workloads' optimizers, SGD or Adam)."""
    import torch

    total = max(1, recipe.epochs * steps_per_epoch)
    warm = max(1, int(recipe.warmup_fraction * total))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total - step) / max(1, total - warm))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _convert(raw: str, kind: type, key: str) -> Any:
    try:
        if kind is bool:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        return kind(raw)
    except ValueError:
        raise ValueError(f"recipe field {key!r}: cannot read {raw!r} as {kind.__name__}") from None


class Workload:
    """Base class. Subclasses set the class attributes and implement the data and model."""

    name: str = ""
    task: str = ""  # task name in records, e.g. "cifar10"
    metric: str = "top1"
    default_threshold: float = 0.0
    input_shape: tuple[int, ...] = ()  # one example of the (first) input, no batch dimension
    num_classes: int = 0
    dataset: str = ""
    needs_data_dir: bool = False
    train_size: int = 0  # examples per epoch (sizes the synthetic data)
    eval_size: int = 0
    switches: frozenset[str] = COMMON  # the optimization switches this workload supports
    recipe: Recipe | None = None
    class_names: tuple[str, ...] = ()  # label order; image folders name their classes so

    def default_recipe(self, device: str = "cpu") -> Recipe:
        raise NotImplementedError

    def presets(self) -> dict[str, Recipe]:
        """Named recipes a user can pick with `run --recipe NAME` (none by default)."""
        return {}

    def configure(self, recipe: Recipe) -> None:
        """Called by the runner before training: the recipe in force for this run."""
        self.recipe = recipe

    def build_model(self, recipe: Recipe | None = None) -> Any:
        """A freshly initialized torch.nn.Module (seed torch before calling)."""
        raise NotImplementedError

    def model_name(self, recipe: Recipe) -> str:
        """Short architecture description for records and leaderboards."""
        return f"{self.name} model"

    # -- data ----------------------------------------------------------------------------

    def load_data(self, data_dir: str | None, device: Any) -> DataSource:
        raise NotImplementedError

    def synthetic_data(self, device: Any, seed: int) -> DataSource:
        """Random inputs of this workload's shape (`run --synthetic`)."""
        if not self.input_shape or not self.num_classes:
            raise ValueError(f"workload {self.name} does not declare its input shape")
        limit = int((self.recipe.extra if self.recipe else {}).get("train_limit", 0) or 0)
        return SyntheticSource(
            (tuple(self.input_shape),),
            self.num_classes,
            device,
            num_train=limit or self.train_size or 1024,
            num_eval=self.eval_size or 256,
            seed=seed,
        )

    def steps_per_epoch(self, data: DataSource, recipe: Recipe) -> int:
        return (data.num_train + recipe.batch_size - 1) // recipe.batch_size

    # -- training ------------------------------------------------------------------------

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(logits, target, label_smoothing=recipe.label_smoothing)

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        """SGD (Nesterov) with a one-cycle schedule: linear warm-up, then linear decay to 0."""
        import torch

        decay, no_decay = [], []
        for p in model.parameters():
            (no_decay if p.ndim <= 1 else decay).append(p)
        opt = torch.optim.SGD(
            [
                {"params": decay, "weight_decay": recipe.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=recipe.lr,
            momentum=recipe.momentum,
            nesterov=recipe.nesterov,
        )
        return opt, one_cycle_schedule(opt, recipe, steps_per_epoch)

    def train_step(self, state: TrainState, batch: Batch, phase: Phase = no_phase) -> Any:
        """One optimization step on `batch`; returns the detached loss (not synchronised).

        `phase(name)` marks forward/backward/optimizer for the FLOP counter; it is a no-op
        while training."""
        with phase("forward"), state.autocast():
            loss = self.loss(state.model(*state.inputs(batch.inputs)), batch.target, state.recipe)
        state.optimizer.zero_grad(set_to_none=True)
        with phase("backward"):
            (state.scaler.scale(loss) if state.scaler is not None else loss).backward()
        with phase("optimizer"):
            if state.scaler is not None:
                state.scaler.step(state.optimizer)
                state.scaler.update()
            else:
                state.optimizer.step()
        if state.scheduler is not None:
            state.scheduler.step()
        return loss.detach()

    def on_epoch_start(self, state: TrainState, data: DataSource, epoch: int) -> None:
        """Called inside the training clock before epoch `epoch`'s first batch (1-based):
        data-dependent initialisation (e.g. whitening from training images) belongs here, so
        it counts as training time."""

    def on_epoch_end(self, state: TrainState, data: DataSource, epoch: int) -> None:
        """Called inside the training clock after the epoch's last step, before evaluation
        (e.g. copying averaged weights into the model)."""

    # -- evaluation ----------------------------------------------------------------------

    def evaluate(self, model: Any, data: DataSource, batch_size: int = 1024) -> dict[str, float]:
        """Top-1 accuracy (fraction) on the held-out set."""
        import torch

        model.eval()
        correct = 0
        with torch.no_grad():
            for b in data.eval_batches(batch_size):
                logits = self.predict(model, *b.inputs)
                correct += int((logits.argmax(1) == b.target).sum())
        model.train()
        return {"top1": correct / data.num_eval}

    def predict(self, model: Any, *inputs: Any) -> Any:
        """Logits used for evaluation (a workload may add test-time augmentation)."""
        return model(*inputs)

    # -- generalization (perfsuite eval; docs/generalization.md) ---------------------------

    def classes(self) -> list[str]:
        """Class names in label order: `class_names`, else "0", "1", ..."""
        return list(self.class_names) or [str(i) for i in range(self.num_classes)]

    def to_images(self, x: Any) -> Any:
        """Model inputs (N, C, H, W) back to images in [0, 1] (undo the normalization), so
        the test set can be corrupted. Image workloads override it with from_images."""
        raise NotImplementedError(
            f"workload {self.name or type(self).__name__}: its inputs are not images "
            "(Workload.to_images/from_images not defined)"
        )

    def from_images(self, images: Any) -> Any:
        """Images (N, C, H, W) in [0, 1] to model inputs (the workload's normalization)."""
        raise NotImplementedError(
            f"workload {self.name or type(self).__name__}: its inputs are not images "
            "(Workload.to_images/from_images not defined)"
        )

    def features(self, model: Any, *inputs: Any) -> Any:
        """Penultimate features (N, D) for a linear probe: by default the input of the
        model's last nn.Linear, caught with a forward pre-hook during a plain forward pass
        (no test-time augmentation). Override for models whose head is not a Linear."""
        from torch import nn

        heads = [m for m in model.modules() if isinstance(m, nn.Linear)]
        if not heads:
            raise NotImplementedError(
                f"workload {self.name}: the model has no nn.Linear head; override Workload.features"
            )
        caught: list[Any] = []
        handle = heads[-1].register_forward_pre_hook(lambda mod, args: caught.append(args[0]))
        try:
            model(*inputs)
        finally:
            handle.remove()
        return caught[-1].detach().flatten(1)
