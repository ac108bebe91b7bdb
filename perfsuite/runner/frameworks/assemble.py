"""Putting a run together: the recipe in force, the switches applied, the TrainState.

Switch effects are read back from the live objects (parameter memory format, the dtype a
first layer really produced, the compiled wrapper, torch's TF32 flags), so the record shows
what happened, not only what was asked for.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from perfsuite.backends.torch_math import math_policy
from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.state import TrainState
from perfsuite.workloads.switches import Switches, scaled_lr


def prepare_recipe(
    workload: Workload,
    device: str,
    recipe_name: str | None,
    overrides: list[str],
    epochs: int | None,
    batch_size: int | None,
    switches: Switches,
) -> Recipe:
    if recipe_name:
        presets = workload.presets()
        if recipe_name not in presets:
            known = ", ".join(sorted(presets)) or "none"
            raise ValueError(f"unknown recipe {recipe_name!r} for {workload.name}; known: {known}")
        recipe = copy.deepcopy(presets[recipe_name])
    else:
        recipe = workload.default_recipe(device)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects key=value, got {item!r}")
        recipe.override(key.strip(), value.strip())
    if epochs is not None:
        recipe.epochs = epochs
    if batch_size is not None and batch_size != recipe.batch_size:
        recipe.lr = scaled_lr(recipe.lr, recipe.batch_size, batch_size, switches.lr_rule)
        recipe.batch_size = batch_size
    if switches.label_smoothing is not None:
        recipe.label_smoothing = switches.label_smoothing
    if switches.tta is not None:
        recipe.extra["tta_flip"] = switches.tta
    if switches.data is not None:
        recipe.extra["data"] = switches.data
    if switches.progressive_resize is not None:
        recipe.extra["progressive_resize"] = switches.progressive_resize
    recipe.extra.update(switches.recipe_flags)  # a workload technique turned on or off
    return recipe


def apply_process_switches(switches: Switches) -> Callable[[], None]:
    """Process-wide settings (TF32 flags); returns the function that puts them back."""
    import torch

    saved = (
        torch.backends.cudnn.allow_tf32,
        torch.backends.cuda.matmul.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    if switches.tf32 is not None:
        torch.backends.cudnn.allow_tf32 = switches.tf32
        torch.set_float32_matmul_precision("high" if switches.tf32 else "highest")

    def restore() -> None:
        torch.backends.cudnn.allow_tf32 = saved[0]
        torch.backends.cuda.matmul.allow_tf32 = saved[1]
        torch.set_float32_matmul_precision(saved[2])

    return restore


def build_state(
    workload: Workload,
    recipe: Recipe,
    model: Any,
    steps_per_epoch: int,
    backend: Any,
    switches: Switches,
) -> TrainState:
    import torch

    if switches.channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt, sched = workload.make_optimizer(model, recipe, steps_per_epoch)
    scaler = None
    if switches.precision == "fp16":
        scaler = torch.amp.GradScaler(backend.device.kind)
    runnable = model
    if switches.compile:
        runnable = torch.compile(
            model, mode=None if switches.compile == "default" else switches.compile
        )
    return TrainState(
        model=runnable,
        module=model,
        optimizer=opt,
        scheduler=sched,
        recipe=recipe,
        backend=backend,
        precision=switches.precision,
        scaler=scaler,
        channels_last=switches.channels_last,
    )


def watch_first_layer(state: TrainState) -> tuple[dict[str, Any], Callable[[], None]]:
    """Record the dtype and memory format the first conv/linear layer really produces during
    the next forward pass; returns (observation dict filled in place, remove-hook function)."""
    import torch

    seen: dict[str, Any] = {}
    first = next(
        (m for m in state.module.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))),
        None,
    )
    if first is None:
        return seen, lambda: None

    def hook(module: Any, args: Any, out: Any) -> None:
        if "output_dtype" not in seen and isinstance(out, torch.Tensor):
            seen["layer"] = type(module).__name__
            seen["output_dtype"] = str(out.dtype).replace("torch.", "")
            if out.ndim == 4:
                cl = out.is_contiguous(memory_format=torch.channels_last) and out.shape[1] > 1
                seen["output_memory_format"] = "channels_last" if cl else "contiguous (NCHW)"

    handle = first.register_forward_hook(hook)
    return seen, handle.remove


def switch_effects(state: TrainState, switches: Switches, observed: dict[str, Any]) -> dict:
    """What the switches did, read from the live objects (the record's `switches.effect`)."""
    import torch

    # a weight whose two layouts differ in memory (more than one input channel and pixel)
    weight = next(
        (
            p
            for p in state.module.parameters()
            if p.ndim == 4 and p.shape[1] > 1 and p.shape[2:].numel() > 1
        ),
        None,
    )
    if weight is None:
        layout = "no 4-D parameters"
    elif weight.is_contiguous(memory_format=torch.channels_last) and not weight.is_contiguous():
        layout = "channels_last"
    else:
        layout = "contiguous (NCHW)"
    on_gpu = state.backend.device.is_gpu
    return {
        "autocast": {"bf16": "bfloat16", "fp16": "float16"}.get(state.precision or ""),
        "loss_scaling": "dynamic (torch.amp.GradScaler)" if state.scaler is not None else None,
        "parameter_dtype": str(next(state.module.parameters()).dtype).replace("torch.", ""),
        "first_layer": observed or None,
        "parameter_memory_format": layout,
        "compiled": (
            f"torch.compile mode={switches.compile}" if state.model is not state.module else None
        ),
        "tf32": {
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "applies": on_gpu,
        },
        "batch_size": state.recipe.batch_size,
        "lr": state.recipe.lr,
        "lr_rule": switches.lr_rule,
        "label_smoothing": state.recipe.label_smoothing,
        "tta": state.recipe.extra.get("tta_flip"),
        "source": "read back from the model, optimizer and torch flags after setup; "
        "first_layer observed during the warm-up step",
    }


def math_section(state: TrainState, observed: dict[str, Any]) -> dict[str, Any]:
    """The record's `math`: the precision policy in effect (torch's live flags, autocast, the
    parameter dtype, and the activation dtype the first layer was seen to produce)."""
    param = str(next(state.module.parameters()).dtype).replace("torch.", "")
    autocast = {"bf16": "bfloat16", "fp16": "float16"}.get(state.precision or "")
    return math_policy(
        autocast_dtype=autocast,
        param_dtype=param,
        activation_dtype=observed.get("output_dtype") or autocast or param,
        on_cpu=not state.backend.device.is_gpu,
    )
