"""Your own workload class for `perfsuite run examples/my_workload.py:TinyDigits`.

A Workload owns its model, data and (optionally) training step; the runner adds the clock,
evaluation schedule, FLOP count, profile window, telemetry and the record. This one reuses
the built-in digits data with a smaller network and its own recipe.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Recipe
from perfsuite.workloads.digits.workload import DigitsWorkload


class TinyDigits(DigitsWorkload):
    name = "tiny-digits"
    default_threshold = 0.9

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return Recipe(epochs=4, batch_size=128, lr=0.2, extra={"shift": 0})

    def build_model(self, recipe: Recipe | None = None) -> Any:
        from torch import nn

        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 10)
        )

    def model_name(self, recipe: Recipe) -> str:
        return "tiny conv net (8 channels)"
