"""Model FLOPs of a decoder-only transformer, the MFU convention (PaLM, Chowdhery et al. 2022,
appendix B). An op-model formula like the per-op ones beside it, so capture (which writes
the record's `model_flops` section) and analysis (which reads it) share one definition."""

from __future__ import annotations

FORMULA = "6N + 12·L·d·T (PaLM, appendix B)"
CONFIG_KEYS = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size", "batch_size")


def model_flops_per_token(non_embedding: int, n_layer: int, n_embd: int, block_size: int) -> int:
    """6N + 12·L·d·T: training FLOPs (forward + backward) per token of the model."""
    return 6 * non_embedding + 12 * n_layer * n_embd * block_size
