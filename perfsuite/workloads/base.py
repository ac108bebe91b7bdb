"""The workload seam: a workload owns its model, data and training step; the runner owns the
clock, the evaluation schedule, the threshold rule, the record and the instrumentation hooks.

`Workload.train_step` is THE training step: the runner's epochs, the FLOP count and the profile
window all call it (with a different `phase` marker), so what is counted and profiled is what
is timed. A workload may override it (EMA, lookahead, several inputs); the default is one
forward/loss/backward/optimizer step with the switches in the TrainState applied.
"""

from __future__ import annotations

import dataclasses
import math
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


def one_cycle(
    recipe: Recipe, steps_per_epoch: int, schedule: str = "onecycle"
) -> Callable[[int], float]:
    """The per-step learning-rate factor of a run (every framework uses this one): linear
    warm-up over `warmup_fraction` of the steps, then `schedule`'s decay (see lr_factor)."""
    total = max(1, recipe.epochs * steps_per_epoch)
    warm = max(1, int(recipe.warmup_fraction * total))
    return lambda step: lr_factor(step, total, warm, schedule)


def one_cycle_schedule(
    optimizer: Any, recipe: Recipe, steps_per_epoch: int, schedule: str = "onecycle"
) -> Any:
    """`one_cycle` as a torch LambdaLR on `optimizer` (the workloads' SGD or AdamW)."""
    import torch

    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, one_cycle(recipe, steps_per_epoch, schedule)
    )


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


LR_SCHEDULES = ("onecycle", "cosine")
SCHEDULER_INTERVALS = ("step", "epoch")


def lr_factor(step: int, total: int, warm: int, schedule: str = "onecycle") -> float:
    """Multiplier of the base learning rate at `step` (0-based) of `total`: linear warm-up over
    `warm` steps to 1, then linear ("onecycle") or half-cosine ("cosine") decay to 0."""
    if step < warm:
        return (step + 1) / warm
    if schedule == "cosine":
        progress = min(1.0, (step - warm) / max(1, total - warm))
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return max(0.0, (total - step) / max(1, total - warm))


def decay_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    """Optimizer parameter groups: weight decay on weights of two or more dimensions (convs,
    linear layers), none on batch-norm scales and shifts and on biases (1-D), as the fast
    DAWNBench and MLPerf recipes do: decaying them only pulls normalization toward zero."""
    decay, no_decay = [], []
    for p in model.parameters():
        (no_decay if p.ndim <= 1 else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


class Workload:
    """Base class. Subclasses set the class attributes and implement the data and model.

    The contract with the runner (docs/workloads.md has the long form and an example):

    - `make_optimizer` returns (optimizer, scheduler or None). The runner steps the scheduler,
      never `train_step`: after every training step when `scheduler_interval` is "step" (the
      default, what the base class's one-cycle schedule expects), after each epoch's
      `on_epoch_end` when it is "epoch" (PyTorch's StepLR(step_size=1) as written for an
      epoch loop). A class that overrides `make_optimizer` and returns a scheduler must
      declare `scheduler_interval` itself: the run refuses to start otherwise. The record
      keeps the learning rate each epoch started with (`extra.lr_at_epoch_start`).
    - `train_step` is called by the timed epochs and also, off the clock, by the untimed
      warm-up (2 steps, plus one at the epoch's partial-batch size), the FLOP count and the
      profile window, on batches of `DataSource.train_batches` drawn from generators of their
      own. Those calls run in a detour (`perfsuite.workloads.state.detour`) that puts back, on
      exit: the model, optimizer, scheduler, scaler, gradients, the torch, Python and NumPy
      RNGs, `state.extras`, and the attributes of the workload and of its data source (values
      rebound, tensors, lists, dicts and objects with `state_dict` restored in place). An
      attribute holding an iterator (a loader's position) cannot be put back: the detour
      refuses it with an error naming the attribute; create iterators inside
      `train_batches`.
    - `on_epoch_start` and `on_epoch_end` run inside the training clock: what they do counts
      as training time. Evaluation (`evaluate`) runs off the clock.
    """

    name: str = ""
    task: str = ""  # task name in records, e.g. "cifar10"
    metric: str = "top1"
    direction: str = "higher"  # "lower" for a metric that falls to its target (a loss, WER)
    default_threshold: float = 0.0
    input_shape: tuple[int, ...] = ()  # one example of the (first) input, no batch dimension
    num_classes: int = 0
    dataset: str = ""
    needs_data_dir: bool = False
    train_size: int = 0  # examples per epoch (sizes the synthetic data)
    eval_size: int = 0
    switches: frozenset[str] = COMMON  # the optimization switches this workload supports
    # When the runner steps make_optimizer's scheduler: "step" (after every train_step) or
    # "epoch" (after each epoch). Declare it in any class that overrides make_optimizer.
    scheduler_interval: str = "step"
    recipe: Recipe | None = None
    class_names: tuple[str, ...] = ()  # label order; image folders name their classes so
    # per-channel input normalization (mean, std) on the 0-255 scale, for image workloads
    image_stats: tuple[tuple[float, ...], tuple[float, ...]] | None = None

    def default_recipe(self, device: str = "cpu") -> Recipe:
        raise NotImplementedError

    def notes(self) -> list[str]:
        """Lines the runner adds to the record's flags after setup: caveats only the workload
        knows (e.g. a FLOP count taken at one of several image sizes). None by default."""
        return []

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
        """Random inputs of this workload's shape (`run --synthetic`). Recipe `train_limit` N
        also caps the evaluation set at N: accuracy on random labels is chance whatever the
        size, and a full-size synthetic evaluation (10,000 CIFAR images, 50,000 ImageNet ones)
        would dominate a short throughput run."""
        if not self.input_shape or not self.num_classes:
            raise ValueError(f"workload {self.name} does not declare its input shape")
        limit = int((self.recipe.extra if self.recipe else {}).get("train_limit", 0) or 0)
        return SyntheticSource(
            (tuple(self.input_shape),),
            self.num_classes,
            device,
            num_train=limit or self.train_size or 1024,
            num_eval=min(self.eval_size or 256, limit) if limit else self.eval_size or 256,
            seed=seed,
        )

    def steps_per_epoch(self, data: DataSource, recipe: Recipe) -> int:
        return (data.num_train + recipe.batch_size - 1) // recipe.batch_size

    # -- training ------------------------------------------------------------------------

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(logits, target, label_smoothing=recipe.label_smoothing)

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        """SGD (Nesterov) with linear warm-up, then the recipe's `lr_schedule` decay to 0:
        "onecycle" (linear; the default) or "cosine"."""
        import torch

        schedule = str(recipe.extra.get("lr_schedule", "onecycle"))
        if schedule not in LR_SCHEDULES:
            raise ValueError(
                f"recipe field 'lr_schedule': {schedule!r} is not one of {', '.join(LR_SCHEDULES)}"
            )
        opt = torch.optim.SGD(
            decay_groups(model, recipe.weight_decay),
            lr=recipe.lr,
            momentum=recipe.momentum,
            nesterov=recipe.nesterov,
        )
        return opt, one_cycle_schedule(opt, recipe, steps_per_epoch, schedule)

    def train_step(self, state: TrainState, batch: Batch, phase: Phase = no_phase) -> Any:
        """One optimization step on `batch`; returns the detached loss (not synchronised).

        `phase(name)` marks forward/backward/optimizer for the FLOP counter; it is a no-op
        while training. It does not step the scheduler: the runner does, as
        `scheduler_interval` says (an override must not step it either)."""
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

    def _stats(self, device: Any) -> tuple[Any, Any]:
        """`image_stats` as (1, C, 1, 1) tensors; a one-line error for non-image workloads."""
        import torch

        if self.image_stats is None:
            raise NotImplementedError(
                f"workload {self.name or type(self).__name__}: its inputs are not images "
                "(Workload.to_images/from_images not defined)"
            )
        mean, std = self.image_stats
        return (
            torch.tensor(mean, device=device).view(1, -1, 1, 1),
            torch.tensor(std, device=device).view(1, -1, 1, 1),
        )

    def to_images(self, x: Any) -> Any:
        """Model inputs (N, C, H, W) back to images in [0, 1] (undo the normalization by
        `image_stats`), so the test set can be corrupted. Other inputs: override it."""
        mean, std = self._stats(getattr(x, "device", None))
        return (x.float() * std + mean) / 255.0

    def from_images(self, images: Any) -> Any:
        """Images (N, C, H, W) in [0, 1] to model inputs (the workload's normalization)."""
        mean, std = self._stats(getattr(images, "device", None))
        return (images * 255.0 - mean) / std

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


def scheduler_interval(workload: Workload, scheduler: Any) -> str | None:
    """When the runner steps `scheduler` ("step" or "epoch"; None without one). A one-line
    ValueError when the class that wrote `make_optimizer` (or one below it) does not declare
    `scheduler_interval`: a per-epoch schedule stepped per step trains silently wrong (a
    StepLR(step_size=1, gamma=0.7) is at 0.7**steps after one epoch)."""
    if scheduler is None:
        return None
    workload = getattr(workload, "__wrapped__", workload)  # a proxy's (a data-parallel rank's)
    cls = type(workload)
    label = f"workload {workload.name or cls.__name__}"
    value = getattr(workload, "scheduler_interval", None)
    if value not in SCHEDULER_INTERVALS:
        raise ValueError(f"{label}: scheduler_interval must be 'step' or 'epoch', got {value!r}")
    mro = cls.__mro__
    wrote = next(i for i, c in enumerate(mro) if "make_optimizer" in vars(c))
    declared = "scheduler_interval" in vars(workload) or any(
        "scheduler_interval" in vars(c) for c in mro[: wrote + 1]
    )
    if not declared:
        raise ValueError(
            f"{label}: {mro[wrote].__name__}.make_optimizer returns a scheduler "
            f"({type(scheduler).__name__}) but the class does not declare scheduler_interval: "
            "set scheduler_interval = 'epoch' (stepped after each epoch) or 'step' (after "
            "every train_step)"
        )
    step = getattr(scheduler, "step", None)
    if not callable(step) or _required_args(step):
        raise ValueError(
            f"{label}: the runner calls scheduler.step() with no arguments; "
            f"{type(scheduler).__name__}.step needs {_required_args(step) or 'to exist'} "
            "(a schedule driven by a metric is not supported: return None and set the "
            "learning rate in on_epoch_start)"
        )
    return str(value)


def _required_args(fn: Any) -> str:
    """Names of `fn`'s parameters that have no default ("" when it takes none)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ""
    return ", ".join(
        p.name
        for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )
