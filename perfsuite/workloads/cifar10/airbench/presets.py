"""The airbench family's presets: `airbench` (the paper's settings), `airbench_muon` (the
record method after it) and `cpu-fast` (sized for a 2-core CPU by measurement; docs/recipes.md).

`family: fast` marks a recipe of this family in the record's recipe values; the cifar10
workload reads it to pick the airbench workload.
"""

from __future__ import annotations

import dataclasses

from perfsuite.workloads.base import Recipe

_COMMON = {
    "family": "fast",
    "bias_lr_scale": 64.0,
    "lr_start": 0.2,
    "lr_end": 0.07,
    "bn_momentum": 0.4,
    "bn_eps": 1e-12,
    "head_scale": 1 / 9,
    "whiten_eps": 5e-4,
    "whiten_images": 5000,
    "whiten_bias_epochs": 3,
    "lookahead_start_epoch": 3,
    "lookahead_every": 5,
    "lookahead_base": 0.95,
    "lookahead_power": 3.0,
    "translate": 2,
    "flip": "alternating",
    "tta_level": 2,
    "tta_flip": True,
    "width": 1.0,
    "train_limit": 0,
    # used only with muon on (the `muon` switch or the airbench_muon preset); see
    # airbench_muon below and muon.py
    "muon_lr": 0.24,
    "muon_momentum": 0.6,
    "ns_steps": 3,
    "sgd_momentum": 0.85,
    "bias_lr": 0.053,
    "head_lr": 0.67 * (9 / 256) ** 2,
    "sgd_weight_decay": 0.004 / 0.15,
}

PRESETS: dict[str, Recipe] = {
    # The paper's airbench94 (9.9 epochs there; a whole tenth epoch here, +1% work).
    # lr and weight_decay are the decoupled per-1024-example values of make_fast_optimizer;
    # warmup_fraction is the position of the lr peak. `precision`, `compile` and
    # `channels_last` are what the recipe was tuned in: a GPU run uses them unless a switch
    # says otherwise, a CPU run falls back to fp32 eager and says so (switches.resolve_preset);
    # `family` makes the cifar10 workload use these pieces.
    "airbench": Recipe(
        epochs=10,
        batch_size=1024,
        lr=11.5,
        momentum=0.85,
        nesterov=True,
        weight_decay=0.0153,
        label_smoothing=0.2,
        warmup_fraction=0.23,
        extra={
            **_COMMON,
            "widths": "64,256,256",
            "muon": False,
            "activation": "gelu",
            "precision": "bf16",
            "compile": "",
            "channels_last": True,
        },
    ),
}


# The record method after the paper (docs/recipes.md): Muon on the conv filters
# (muon.py) at muon_lr 0.24, momentum 0.6; Nesterov SGD (momentum 0.85) on BN
# shifts and the whitening bias at 0.053 and on the head, no Lookahead, a linear decay to
# zero, batch 2000, 8 epochs; SiLU in the conv groups (the 2025 record); compiled with CUDA
# graphs on a GPU (reduce-overhead: CUDA graphs without max-autotune's minutes of kernel
# search, which every run process would pay). Rates are per summed-loss batch, as written
# up; head_lr is the write-up's 0.67 moved to this net's head parametrization (logits
# scaled by 1/9 with default init, not 1/256 with unit-std init): 0.67 * (9/256)^2.
# sgd_weight_decay is a decoupled shrink per step: the write-up's 2e-6 per example x 2000,
# coupled there through Nesterov momentum (x 1/(1 - 0.85)), so 0.004 / 0.15. The Recipe's
# own lr, momentum, weight_decay and warmup_fraction are airbench's and unused while muon is on.
PRESETS["airbench_muon"] = dataclasses.replace(
    PRESETS["airbench"],
    epochs=8,
    batch_size=2000,
    extra={
        **PRESETS["airbench"].extra,
        "muon": True,
        "activation": "silu",
        "compile": "reduce-overhead",
    },
)

# The same method for a 2-core CPU (docs/recipes.md): fp32, channels_last (faster for every
# width measured), the paper's widths and batch (per-image CPU time at 1024 was within 5% of 512
# and better than 256), all 10 epochs: 90% on the JPEG copy needs about the paper's full budget.
# Measured: 90% in 34.9 min on a 2-vCPU AMD EPYC VM.
PRESETS["cpu-fast"] = dataclasses.replace(
    PRESETS["airbench"],
    extra={**PRESETS["airbench"].extra, "precision": "fp32"},
)
