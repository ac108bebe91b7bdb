"""`cifar10`: the DAWNBench task (94% top-1 on the 10,000 test images), with two recipe
families, each its own workload class:

- `ResNet9Workload` (resnet9.py): the DAWNBench-style ResNet-9, presets `dawnbench` and `cpu`;
- `AirbenchWorkload` (airbench/workload.py): the airbench-style fast net, presets `airbench`,
  `airbench_muon` and `cpu-fast`.

`Cifar10Workload`, the one `perfsuite run cifar10` names, offers both families' presets and
hands every call to the family of the recipe it concerns: the recipe's `extra["family"]`
("fast" for airbench; absent means ResNet-9), read in `family_of`. The default recipe is
`airbench` on GPUs and `cpu-fast` on CPU.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Phase, Recipe
from perfsuite.workloads.cifar10.airbench.workload import AirbenchWorkload
from perfsuite.workloads.cifar10.resnet9 import ResNet9Workload
from perfsuite.workloads.cifar10.task import Cifar10Task
from perfsuite.workloads.data import Batch, DataSource
from perfsuite.workloads.state import TrainState, no_phase

FAMILIES: dict[str, type[Cifar10Task]] = {"resnet9": ResNet9Workload, "fast": AirbenchWorkload}


def family_of(recipe: Recipe | None) -> str:
    """The recipe's family name ("resnet9" without a recipe or a `family` field)."""
    family = "resnet9" if recipe is None else recipe.extra.get("family", "resnet9")
    if family not in FAMILIES:
        raise ValueError(f"recipe field 'family': expected resnet9 or fast, got {family!r}")
    return family


class Cifar10Workload(Cifar10Task):
    """cifar10 with both families' presets; each call goes to the family of its recipe."""

    scheduler_interval = "step"  # both families' schedules are per optimizer step

    def __init__(self) -> None:
        super().__init__()
        self.families = {name: cls() for name, cls in FAMILIES.items()}

    def family(self, recipe: Recipe | None = None) -> Cifar10Task:
        """The workload of `recipe`'s family (default: the recipe in force), holding this
        workload's recipe and download setting."""
        impl = self.families[family_of(recipe if recipe is not None else self.recipe)]
        impl.recipe, impl.download = self.recipe, self.download
        return impl

    def presets(self) -> dict[str, Recipe]:
        return {**self.families["resnet9"].presets(), **self.families["fast"].presets()}

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return self.families["fast"].default_recipe(device)

    def configure(self, recipe: Recipe) -> None:
        self.family(recipe).configure(recipe)
        super().configure(recipe)

    def build_model(self, recipe: Recipe | None = None) -> Any:
        return self.family(recipe).build_model(recipe)

    def model_name(self, recipe: Recipe) -> str:
        return self.family(recipe).model_name(recipe)

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        return self.family(recipe).make_optimizer(model, recipe, steps_per_epoch)

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        return self.family(recipe).loss(logits, target, recipe)

    def train_step(self, state: TrainState, batch: Batch, phase: Phase = no_phase) -> Any:
        return self.family(state.recipe).train_step(state, batch, phase)

    def on_epoch_start(self, state: TrainState, data: Any, epoch: int) -> None:
        self.family(state.recipe).on_epoch_start(state, data, epoch)

    def on_epoch_end(self, state: TrainState, data: Any, epoch: int) -> None:
        self.family(state.recipe).on_epoch_end(state, data, epoch)

    def load_data(self, data_dir: str | None, device: Any) -> DataSource:
        return self.family().load_data(data_dir, device)

    def predict(self, model: Any, *inputs: Any) -> Any:
        return self.family().predict(model, *inputs)
