"""The workload interface. The runner owns the training loop; a workload supplies the parts.

Keeping the loop in the runner means every workload gets the same instrumentation and the same
time-to-accuracy rules, and a workload author writes no timing code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


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


@dataclass
class DataBundle:
    """Tensors for one run: training and held-out evaluation sets, already on the device."""

    train_x: Any
    train_y: Any
    test_x: Any
    test_y: Any
    description: str = ""


class Workload:
    """Base class. Subclasses set the class attributes and implement the methods."""

    name: str = ""
    task: str = ""  # task name in records, e.g. "cifar10"
    metric: str = "top1"
    default_threshold: float = 0.0
    input_shape: tuple[int, ...] = ()
    num_classes: int = 0
    dataset: str = ""
    needs_data_dir: bool = False
    recipe: Recipe | None = None

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

    def load_data(self, data_dir: str | None, device: Any) -> DataBundle:
        raise NotImplementedError

    def train_batches(
        self, data: DataBundle, recipe: Recipe, generator: Any
    ) -> Iterator[tuple[Any, Any]]:
        """One epoch of shuffled, augmented (x, y) batches (data preparation counts as training
        time under the DAWNBench rule, so it happens here, inside the timed loop)."""
        raise NotImplementedError

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
        total = max(1, recipe.epochs * steps_per_epoch)
        warm = max(1, int(recipe.warmup_fraction * total))

        def factor(step: int) -> float:
            if step < warm:
                return (step + 1) / warm
            return max(0.0, (total - step) / max(1, total - warm))

        return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)

    def steps_per_epoch(self, data: DataBundle, recipe: Recipe) -> int:
        n = len(data.train_y)
        return (n + recipe.batch_size - 1) // recipe.batch_size

    def evaluate(self, model: Any, data: DataBundle, batch_size: int = 1024) -> dict[str, float]:
        """Top-1 accuracy (fraction) on the held-out set."""
        import torch

        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(data.test_y), batch_size):
                logits = self.predict(model, data.test_x[i : i + batch_size])
                correct += int((logits.argmax(1) == data.test_y[i : i + batch_size]).sum())
        model.train()
        return {"top1": correct / len(data.test_y)}

    def predict(self, model: Any, x: Any) -> Any:
        """Logits used for evaluation (a workload may add test-time augmentation)."""
        return model(x)


def shuffled_batches(n: int, batch_size: int, generator: Any, device: Any) -> Iterator[Any]:
    """Index tensors of a random permutation, split into batches (last one may be smaller)."""
    import torch

    perm = torch.randperm(n, generator=generator).to(device)
    for i in range(0, n, batch_size):
        yield perm[i : i + batch_size]
