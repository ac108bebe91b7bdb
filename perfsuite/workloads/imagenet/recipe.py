"""The `imagenet` recipes: presets (with the warm-up + cosine schedule of `base.lr_factor`) and
the progressive-resizing schedule in force.

Designed here in the spirit of the fast DAWNBench and MLPerf ResNet-50 entries (label smoothing
0.1, Nesterov SGD with a linear warm-up, a cosine or linear decay to zero, no weight decay on
batch-norm and bias, smaller images early): their ideas, none of their code. The `dawnbench`
preset has not been trained to 93% top-5 on this project's hardware (no GPU, no ImageNet
copy); docs/imagenet.md says what was and was not measured.
"""

from __future__ import annotations

import copy

from perfsuite.workloads.base import Recipe
from perfsuite.workloads.progressive import Stage, parse_schedule

PRESETS: dict[str, Recipe] = {
    # 32 epochs, 5 of warm-up; learning rate 0.1 per 256 images (Goyal et al.'s rule, so
    # --batch-size N --switch lr_rule=linear scales it); weight decay 5e-5 on conv/linear
    # weights only. With the progressive_resize switch (bare) the first 13 epochs train at
    # 128 px and the next 13 at 192 px, then 224 px, as the evaluation is.
    "dawnbench": Recipe(
        epochs=32,
        batch_size=256,
        lr=0.1,
        momentum=0.9,
        nesterov=True,
        weight_decay=5e-5,
        label_smoothing=0.1,
        warmup_fraction=5 / 32,
        extra={
            "image_size": 224,
            "eval_resize": 256,
            "min_scale": 0.25,
            "lr_schedule": "cosine",
            "progressive_resize": "off",
            "resize_schedule": "1-13:128/14-26:192/27-:224",
            "train_limit": 0,
            "eval_limit": 0,
            "num_workers": -1,
            "tta_flip": False,
            "zero_init_residual": True,
        },
    ),
    # Small images and batches for runs on a CPU (smoke tests of the pipeline on real files);
    # accuracy after 2 epochs means nothing for the benchmark.
    "cpu": Recipe(
        epochs=2,
        batch_size=16,
        lr=0.1 * 16 / 256,
        momentum=0.9,
        nesterov=True,
        weight_decay=5e-5,
        label_smoothing=0.1,
        warmup_fraction=0.25,
        extra={
            "image_size": 64,
            "eval_resize": 73,
            "min_scale": 0.25,
            "lr_schedule": "cosine",
            "progressive_resize": "off",
            "resize_schedule": "1-1:48/2-:64",
            "train_limit": 0,
            "eval_limit": 0,
            "num_workers": -1,
            "tta_flip": False,
            "zero_init_residual": True,
        },
    ),
}


def preset(name: str) -> Recipe:
    return copy.deepcopy(PRESETS[name])


def resize_stages(recipe: Recipe) -> list[Stage] | None:
    """The progressive-resizing schedule in force, or None for a fixed image size.

    `progressive_resize` is "off", "on" (the recipe's `resize_schedule`) or a schedule."""
    value = str(recipe.extra.get("progressive_resize", "off") or "off")
    if value == "off":
        return None
    text = str(recipe.extra.get("resize_schedule", "")) if value == "on" else value
    try:
        return parse_schedule(text)
    except ValueError as exc:
        raise ValueError(f"recipe field 'resize_schedule': {exc}") from None


def check(recipe: Recipe) -> None:
    """One-line errors for recipe values that would fail later, deep inside a worker."""
    ex = recipe.extra
    size, resize = int(ex.get("image_size", 224)), int(ex.get("eval_resize", 256))
    if size < 8:
        raise ValueError(f"recipe field 'image_size': must be at least 8, got {size}")
    if resize < size:
        raise ValueError(
            f"recipe field 'eval_resize': {resize} is smaller than image_size {size} "
            "(the centre crop is cut from the resized image)"
        )
    scale = float(ex.get("min_scale", 0.08))
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"recipe field 'min_scale': must be in (0, 1], got {scale}")
    resize_stages(recipe)
