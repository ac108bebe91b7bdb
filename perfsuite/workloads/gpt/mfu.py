"""The `model_flops` record section of a transformer: its config and 6N + 12·L·d·T per token.

`model_flops_section` reads the GPT model built here; `transformer_section` takes the figures
from anyone (`perfsuite.track(..., model_flops={...})` on a user's own model). The runner
completes the section at the end of the run (tokens/s, MFU, counted FLOPs per token:
perfsuite/runner/measure/model_flops.py, from perfsuite.flops.mfu).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsuite.flops.transformer import CONFIG_KEYS, FORMULA, model_flops_per_token
from perfsuite.record import quantity


def transformer_section(
    config: Mapping[str, Any], non_embedding: int, how_n: str = "", parameters: dict | None = None
) -> dict[str, Any]:
    """The section from a config holding CONFIG_KEYS and the non-embedding parameter count."""
    missing = [k for k in CONFIG_KEYS if k not in config]
    if missing:
        raise ValueError(f"model_flops: missing config field(s) {', '.join(missing)}")
    try:
        cfg = {k: int(config[k]) for k in CONFIG_KEYS}
        n = int(non_embedding)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"model_flops: config values must be integers ({exc})") from None
    bad = [k for k, v in cfg.items() if v < 1] + (["non_embedding_parameters"] if n < 1 else [])
    if bad:
        raise ValueError(f"model_flops: field(s) {', '.join(bad)} must be >= 1")
    per_token = model_flops_per_token(n, cfg["n_layer"], cfg["n_embd"], cfg["block_size"])
    return {
        "formula": FORMULA,
        "config": cfg,
        "parameters": dict(parameters or {"non_embedding": n}),
        "tokens_per_sample": cfg["block_size"],
        "per_token": quantity(
            per_token,
            "FLOP",
            "modeled",
            f"6 x N {n:,} (non-embedding parameters{how_n}) + 12 x L {cfg['n_layer']} x "
            f"d {cfg['n_embd']} x T {cfg['block_size']}",
        ),
    }


def model_flops_section(model: Any, batch_size: int) -> dict[str, Any]:
    from perfsuite.workloads.gpt.model import count_parameters

    cfg = model.cfg
    params = count_parameters(model)
    how = ": every parameter but the position table" + (
        " and the untied token table" if cfg.untied_head else "; the tied head's matrix once"
    )
    config = {k: getattr(cfg, k) for k in CONFIG_KEYS if k != "batch_size"}
    return transformer_section(
        {**config, "batch_size": batch_size}, params["non_embedding"], how, params
    )
