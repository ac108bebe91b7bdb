"""The GPT model's `model_flops` record section: its config and 6N + 12·L·d·T per token.

The runner completes the section at the end of the run (tokens/s, MFU, counted FLOPs per
token: perfsuite/runner/model_flops.py, from analyzers.mfu).
"""

from __future__ import annotations

from typing import Any

from analyzers.mfu import FORMULA, model_flops_per_token
from perfsuite.record import quantity


def model_flops_section(model: Any, batch_size: int) -> dict[str, Any]:
    from perfsuite.workloads.gpt.model import count_parameters

    cfg = model.cfg
    params = count_parameters(model)
    n = params["non_embedding"]
    per_token = model_flops_per_token(n, cfg.n_layer, cfg.n_embd, cfg.block_size)
    return {
        "formula": FORMULA,
        "config": {
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
            "n_embd": cfg.n_embd,
            "block_size": cfg.block_size,
            "vocab_size": cfg.vocab_size,
            "batch_size": int(batch_size),
        },
        "parameters": params,
        "tokens_per_sample": cfg.block_size,
        "per_token": quantity(
            per_token,
            "FLOP",
            "modeled",
            f"6 x N {n:,} (non-embedding parameters: every parameter but the position table"
            + (
                " and the untied token table"
                if cfg.untied_head
                else "; the tied head's matrix once"
            )
            + f") + 12 x L {cfg.n_layer} x d {cfg.n_embd} x T {cfg.block_size}",
        ),
    }
