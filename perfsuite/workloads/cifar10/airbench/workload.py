"""The airbench family of the cifar10 workload: `AirbenchWorkload`.

Presets `airbench` (the paper's settings), `airbench_muon` (the record method after it: Muon
on the conv filters, muon.py) and `cpu-fast` (sized for a 2-core CPU); presets.py. What the
workload does beyond the base seam:

- data: `FastCifarSource` holds the normalized, UNPADDED training set (random_translate pads
  by 2 itself) and applies the paper's alternating flip, which needs each image's dataset
  position and the epoch number (the plain InMemorySource augment sees neither);
- optimizer: `make_fast_optimizer`, with the Lookahead riding on the optimizer's state dict
  (`attach_lookahead`) so that the runner's detours (warm-up, FLOP count, profile window),
  which snapshot and restore the optimizer, restore the averaged weights and the step count
  too: no detour flag is needed and no detour can move the average;
- `train_step`: the base step on the summed loss, plus a Lookahead update every k steps; it
  returns the mean per-example loss for the record;
- `on_epoch_start`: whitening from training images at epoch 1 (inside the training clock, as
  the paper counts it), whitening-bias freeze after `whiten_bias_epochs`, the flip epoch;
- `on_epoch_end`: Lookahead sync after the recipe's last epoch (the paper's final copy-back);
- `predict`: `tta_logits` at the recipe's level (0 when the `tta` switch is off).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import torch

from perfsuite.workloads.base import Phase, Recipe
from perfsuite.workloads.cifar10.airbench.muon import muon_from_recipe
from perfsuite.workloads.cifar10.airbench.net import (
    init_whitening,
    net_from_recipe,
    scaled_widths,
    set_whitening_bias_trainable,
)
from perfsuite.workloads.cifar10.airbench.optim import (
    Lookahead,
    fast_loss,
    lookahead_from_recipe,
    optimizer_from_recipe,
)
from perfsuite.workloads.cifar10.airbench.presets import PRESETS
from perfsuite.workloads.cifar10.airbench.views import (
    alternating_flip,
    random_translate,
    tta_logits,
)
from perfsuite.workloads.cifar10.task import Cifar10Task, check_muon_flag
from perfsuite.workloads.data import Batch, InMemorySource
from perfsuite.workloads.state import TrainState, no_phase

LOOKAHEAD_KEY = "perfsuite.lookahead"


def wants_channels_last(recipe: Recipe) -> bool:
    return bool(recipe.extra.get("channels_last", False))


# -- optimizer + Lookahead --------------------------------------------------------------------


def attach_lookahead(opt: torch.optim.Optimizer, lookahead: Lookahead) -> None:
    """Make `lookahead` part of `opt`'s state dict: `opt.state_dict()` carries its averaged
    weights and step count under LOOKAHEAD_KEY and `opt.load_state_dict` puts them back. A
    detour deep-copies the optimizer's state dict on entry and loads it on exit, so the
    average survives a detour exactly as the weights and momenta do."""

    def add(_opt: Any, state: dict[str, Any]) -> dict[str, Any]:
        state[LOOKAHEAD_KEY] = lookahead.state_dict()
        return state

    def take(_opt: Any, state: dict[str, Any]) -> dict[str, Any]:
        saved = state.pop(LOOKAHEAD_KEY, None)  # `state` is already a shallow copy
        if saved is not None:
            lookahead.load_state_dict(saved)
        return state

    opt.register_state_dict_post_hook(add)
    opt.register_load_state_dict_pre_hook(take)
    opt.lookahead = lookahead  # type: ignore[attr-defined]


def uses_muon(recipe: Recipe) -> bool:
    return recipe.extra.get("muon") is True


def lookahead_of(state: Any) -> Lookahead:
    la = getattr(state.optimizer, "lookahead", None)
    if la is None:
        raise ValueError("fast recipe: the optimizer has no Lookahead (built elsewhere?)")
    state.extras.setdefault("lookahead", la)  # for inspection; the optimizer owns it
    return la


# -- data ---------------------------------------------------------------------------------------


class FastCifarSource(InMemorySource):
    """In-memory CIFAR-10 with the paper's training augmentation: alternating flip (by
    dataset position and epoch) then random translate by `translate` pixels. `epoch` is set
    by the workload's on_epoch_start (1-based); the first-epoch flip mask is drawn from the
    run's generator on the first training batch."""

    def __init__(self, *args: Any, translate: int = 2, flip: str = "alternating", **kw: Any):
        super().__init__(*args, **kw)
        if flip not in ("alternating", "random", "none"):
            raise ValueError(f"recipe field 'flip': expected alternating, random or none: {flip!r}")
        self.translate, self.flip = translate, flip
        self.epoch = 1
        self.first_mask: torch.Tensor | None = None

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        device = self.train_y.device
        if self.first_mask is None:
            self.first_mask = (torch.rand(self.num_train, generator=generator) < 0.5).to(device)
        perm = torch.randperm(self.num_train, generator=generator).to(device)
        for i in range(0, self.num_train, batch_size):
            idx = perm[i : i + batch_size]
            x = self.train_x[idx]
            if self.flip == "alternating":
                x = alternating_flip(x, self.first_mask[idx], self.epoch - 1)
            elif self.flip == "random":
                flip = (torch.rand(len(idx), generator=generator) < 0.5).to(device)
                x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
            x = random_translate(x, self.translate, generator)
            yield Batch((x,), self.train_y[idx], len(idx))


def whitening_images(data: Any, n: int) -> torch.Tensor:
    """The first `n` training images (unaugmented when the source holds them; otherwise drawn
    from the source with a private generator so the run's random stream is untouched)."""
    if hasattr(data, "train_x"):
        return data.train_x[:n]
    g = torch.Generator().manual_seed(0)
    parts, have = [], 0
    for b in data.train_batches(min(n, 1024), g):
        parts.append(b.inputs[0])
        have += b.size
        if have >= n:
            break
    return torch.cat(parts)[:n]


def tta_level(recipe: Recipe | None) -> int:
    if recipe is None:
        return 2
    if not bool(recipe.extra.get("tta_flip", True)):
        return 0
    return int(recipe.extra.get("tta_level", 2))


class AirbenchWorkload(Cifar10Task):
    """cifar10 with the airbench recipes (`airbench`, `airbench_muon`, `cpu-fast`)."""

    scheduler_interval = "step"  # make_optimizer's LambdaLR factors are per optimizer step

    def presets(self) -> dict[str, Recipe]:
        return dict(PRESETS)

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return copy.deepcopy(PRESETS["cpu-fast" if str(device).startswith("cpu") else "airbench"])

    def configure(self, recipe: Recipe) -> None:
        check_muon_flag(recipe)
        super().configure(recipe)

    def build_model(self, recipe: Recipe | None = None) -> torch.nn.Module:
        """The fast net at the recipe's widths, channels_last when the recipe asks for it (the
        layout it was sized in; the `channels_last` switch does the same for any recipe)."""
        recipe = recipe or self.recipe
        if recipe is None:
            raise ValueError("airbench: build_model needs a recipe (configure one first)")
        net = net_from_recipe(recipe, self.num_classes)
        if wants_channels_last(recipe):
            net = net.to(memory_format=torch.channels_last)
        return net

    def model_name(self, recipe: Recipe) -> str:
        return "airbench-style fast net, widths " + ",".join(str(w) for w in scaled_widths(recipe))

    def make_optimizer(self, model: Any, recipe: Recipe, steps_per_epoch: int) -> tuple[Any, Any]:
        """The recipe's optimizer: Muon on the filters (no Lookahead, as the record has none), or
        the paper's Nesterov SGD with its Lookahead."""
        if uses_muon(recipe):
            return muon_from_recipe(model, recipe, steps_per_epoch)
        opt, sched = optimizer_from_recipe(model, recipe, steps_per_epoch)
        attach_lookahead(opt, lookahead_from_recipe(recipe, steps_per_epoch))
        return opt, sched

    def loss(self, logits: Any, target: Any, recipe: Recipe) -> Any:
        return fast_loss(logits, target, recipe.label_smoothing)

    def train_step(self, state: TrainState, batch: Batch, phase: Phase = no_phase) -> Any:
        """The base step on the summed loss (the lr assumes it), then the Lookahead update
        (counted as optimizer work); returns the mean per-example loss for the record."""
        if wants_channels_last(state.recipe) and not state.channels_last:
            batch = Batch(
                tuple(x.contiguous(memory_format=torch.channels_last) for x in batch.inputs),
                batch.target,
                batch.size,
            )
        loss = super().train_step(state, batch, phase)
        if not uses_muon(state.recipe):
            la = lookahead_of(state)
            la.steps += 1
            with phase("optimizer"):
                la.update(state.module, la.steps)
        return loss / batch.size

    def on_epoch_start(self, state: TrainState, data: Any, epoch: int) -> None:
        ex = state.recipe.extra
        if epoch == 1:
            init_whitening(
                state.module.whiten,
                whitening_images(data, int(ex.get("whiten_images", 5000))),
                float(ex.get("whiten_eps", 5e-4)),
            )
        trainable = epoch <= int(ex.get("whiten_bias_epochs", 3))
        if state.model is state.module or trainable:
            set_whitening_bias_trainable(state.module, trainable)
        # Compiled: the freeze is skipped, because flipping requires_grad recompiles the step
        # inside the training clock (the warm-up compiled only the trainable variant). The Muon
        # schedule has taken the bias's rate to 0 by then, so only the saved backward is lost;
        # an SGD recipe under `compile` keeps training the bias (docs/recipes.md).
        if isinstance(data, FastCifarSource):
            data.epoch = epoch

    def on_epoch_end(self, state: TrainState, data: Any, epoch: int) -> None:
        if epoch == state.recipe.epochs and not uses_muon(state.recipe):
            lookahead_of(state).sync(state.module)

    def in_memory_source(
        self, train_x: Any, train_y: Any, test_x: Any, test_y: Any, description: str
    ) -> FastCifarSource:
        """Unpadded: random_translate pads by its own amount per batch."""
        ex = self.recipe.extra if self.recipe else {}
        return FastCifarSource(
            train_x,
            train_y,
            test_x,
            test_y,
            description=description,
            translate=int(ex.get("translate", 2)),
            flip=str(ex.get("flip", "alternating")),
        )

    def predict(self, model: Any, *inputs: Any) -> Any:
        (x,) = inputs
        if self.recipe is not None and wants_channels_last(self.recipe):
            x = x.contiguous(memory_format=torch.channels_last)
        return tta_logits(model, x, tta_level(self.recipe))
