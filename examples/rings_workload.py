"""A workload written from scratch: `perfsuite run examples/rings_workload.py:Rings`.

Everything is its own: the data (points on three noisy concentric rings, made from a seed,
with a DataSource that shuffles and jitters them), the model, the optimizer (Adadelta) and a
per-epoch learning-rate schedule (StepLR(step_size=1, gamma=0.7), as PyTorch's MNIST example
writes it). The contract it relies on is in perfsuite/workloads/base.py (`Workload`) and
docs/workloads.md: the runner steps the scheduler as `scheduler_interval` says, calls
`train_step` off the clock too (warm-up, FLOP count, profile window) and puts back what those
calls change, and runs `on_epoch_start` on the clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.data import Batch

CLASSES = 3


def rings(n: int, seed: int) -> tuple[Any, Any]:
    """`n` points (x, y) on rings of radius 1, 2 and 3 (the label), with radial noise."""
    import torch

    g = torch.Generator().manual_seed(seed)
    label = torch.randint(0, CLASSES, (n,), generator=g)
    angle = torch.rand(n, generator=g) * 2 * math.pi
    radius = label.float() + 1 + 0.25 * torch.randn(n, generator=g)
    points = torch.stack([radius * angle.cos(), radius * angle.sin()], dim=1)
    return points, label


class RingsSource:
    """The DataSource: tensors in memory; each epoch a shuffle and a small jitter drawn from the
    runner's generator (so a seed gives the same run)."""

    kind = "in-memory"

    def __init__(self, num_train: int, num_eval: int, device: Any) -> None:
        self.train_x, self.train_y = (t.to(device) for t in rings(num_train, seed=1))
        self.test_x, self.test_y = (t.to(device) for t in rings(num_eval, seed=2))
        self.num_train, self.num_eval = num_train, num_eval
        self.description = f"three rings, {num_train} training and {num_eval} test points"

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import torch

        order = torch.randperm(self.num_train, generator=generator)
        jitter = 0.05 * torch.randn(self.num_train, 2, generator=generator)
        for i in range(0, self.num_train, batch_size):
            idx = order[i : i + batch_size]
            x = self.train_x[idx] + jitter[i : i + batch_size].to(self.train_x.device)
            yield Batch((x,), self.train_y[idx], len(idx))

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        for i in range(0, self.num_eval, batch_size):
            y = self.test_y[i : i + batch_size]
            yield Batch((self.test_x[i : i + batch_size],), y, len(y))

    def sample(self, n: int) -> Batch:
        return Batch((self.test_x[:n],), self.test_y[:n], min(n, self.num_eval))

    def close(self) -> None:
        return None


class Rings(Workload):
    name = "rings"
    task = "rings"
    default_threshold = 0.95
    input_shape = (2,)
    num_classes = CLASSES
    dataset = "three rings (generated)"
    train_size = 3000
    eval_size = 600
    # StepLR(step_size=1) counts epochs: the runner steps it after each epoch. Left at the
    # default "step", the rate would be 0.7**47 of its start after the first epoch.
    scheduler_interval = "epoch"

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return Recipe(epochs=4, batch_size=64, lr=1.0, extra={"gamma": 0.7})

    def build_model(self, recipe: Recipe | None = None) -> Any:
        from torch import nn

        return nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                             nn.Linear(64, CLASSES))  # fmt: skip

    def model_name(self, recipe: Recipe) -> str:
        return "MLP 2-64-64-3"

    def load_data(self, data_dir: str | None, device: Any) -> RingsSource:
        return RingsSource(self.train_size, self.eval_size, device)

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        import torch

        opt = torch.optim.Adadelta(model.parameters(), lr=recipe.lr)
        gamma = float(recipe.extra["gamma"])
        return opt, torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=gamma)
