"""Recipes of the GPT workload (`perfsuite run gpt --recipe NAME`) and its learning-rate rule.

- `shakespeare_char`: nanoGPT's published character-level Shakespeare recipe (its
  `config/train_shakespeare_char.py`: 6 layers, 6 heads, 384 wide, block 256, batch 64,
  dropout 0.2, AdamW lr 1e-3 with beta2 0.99, 100 warm-up iterations then cosine decay to 1e-4
  at 5,000 iterations, weight decay 0.1, gradient clipping 1.0). nanoGPT's README reports a best
  validation loss of about 1.47 after about 3 minutes on one A100: the target.
- `cpu`: the laptop-CPU variant nanoGPT's README gives (4 layers, 4 heads, 128 wide, block 64,
  batch 12, no dropout, 2,000 iterations; about 1.88 there), sized for 2 cores; its target is
  the one measured here (docs/gpt.md, docs/results/).
- `fast`: `shakespeare_char`'s model and data with the techniques the NanoGPT speedrun records
  credit, each one a recipe flag that a switch of the same name turns on or off (`--switch
  muon=off`), so lesion and factor studies take them apart: Muon for the hidden matrices,
  rotary embeddings, QK-norm, ReLU², an untied zero-initialized head with tanh logit
  soft-capping, no dropout. bf16 and `torch.compile` are the common switches `bf16` and
  `compile`. Not tuned on a GPU here: its step count and target are `shakespeare_char`'s.

An "epoch" of this workload is `iters_per_epoch` optimizer steps: the evaluation interval
(nanoGPT's `eval_interval`), so `epochs x iters_per_epoch` is nanoGPT's `max_iters`.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from perfsuite.workloads.base import Recipe

# The speedrun techniques: recipe flags, each with a switch of the same name (switches.py).
TECHNIQUES = ("muon", "rotary", "qk_norm", "relu2", "untied_head", "softcap")

_BASE: dict[str, Any] = {
    "n_layer": 6,
    "n_head": 6,
    "n_embd": 384,
    "block_size": 256,
    "vocab_size": 65,  # synthetic data only: real data bring their own vocabulary
    "dropout": 0.2,
    "bias": False,
    "iters_per_epoch": 250,
    "eval_batches": 200,
    "min_lr_fraction": 0.1,  # cosine decay ends at lr x this (nanoGPT: 1e-4 / 1e-3)
    "beta1": 0.9,
    "beta2": 0.99,
    "grad_clip": 1.0,
    "target": 1.47,
    "muon": False,
    "muon_lr": 0.02,
    "muon_momentum": 0.95,
    "rotary": False,
    "qk_norm": False,
    "relu2": False,
    "untied_head": False,
    "softcap": False,
    "softcap_value": 15.0,
    "gen_prompt": 0,  # batch-1 generation: prompt tokens (0: half the block)
    "gen_tokens": 32,  # tokens generated after the prompt
    "gen_prompts": 5,  # prompts timed (the first validation windows)
}


def _recipe(epochs: int, batch: int, lr: float, warmup: float, **extra: Any) -> Recipe:
    return Recipe(
        epochs=epochs,
        batch_size=batch,
        lr=lr,
        momentum=0.0,
        nesterov=False,
        weight_decay=0.1,
        label_smoothing=0.0,
        warmup_fraction=warmup,
        extra={**_BASE, **extra},
    )


PRESETS: dict[str, Recipe] = {
    "shakespeare_char": _recipe(20, 64, 1e-3, 100 / 5000),
    "cpu": _recipe(
        8,
        12,
        1e-3,
        100 / 2000,
        n_layer=4,
        n_head=4,
        n_embd=128,
        block_size=64,
        dropout=0.0,
        eval_batches=20,
        target=2.0,
    ),
    "fast": _recipe(
        20,
        64,
        1e-3,
        100 / 5000,
        dropout=0.0,
        **{t: True for t in TECHNIQUES},
    ),
}


def presets() -> dict[str, Recipe]:
    return copy.deepcopy(PRESETS)


def lr_factor(step: int, total: int, warm: int, floor: float) -> float:
    """Multiplier of the base learning rate at `step` (0-based) of `total`: linear warm-up
    over `warm` steps, then a half cosine from 1 down to `floor` at the last step."""
    if step < warm:
        return (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, total - warm))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


class GroupSchedule:
    """Sets every parameter group's lr to its base lr x `lr_factor(step)`; one object for
    one optimizer or several combined (torch's LambdaLR takes a torch Optimizer only)."""

    def __init__(self, optimizer: Any, total: int, warm: int, floor: float) -> None:
        self.optimizer = optimizer
        self.total, self.warm, self.floor = total, max(1, warm), floor
        self.base = [g["lr"] for g in optimizer.param_groups]
        self.step_count = 0
        self._apply()

    def _apply(self) -> None:
        f = lr_factor(self.step_count, self.total, self.warm, self.floor)
        for g, base in zip(self.optimizer.param_groups, self.base, strict=True):
            g["lr"] = base * f

    def step(self) -> None:
        self.step_count += 1
        self._apply()

    def state_dict(self) -> dict[str, Any]:
        return {"step_count": self.step_count, "base": list(self.base)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step_count = int(state["step_count"])
        self.base = list(state["base"])
        self._apply()
