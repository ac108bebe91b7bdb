"""Per-op FLOP and byte models, and (lazily) the torch counter that applies them.

`import perfsuite.flops` never imports torch: the registry and formulas are shared with trace
analysis. `OpCounter`, `CountResult` and `count_model` load `torch_counter` on first use.
"""

from __future__ import annotations

from typing import Any

from perfsuite.flops.call import Cost, OpCall, TensorMeta, dtype_bytes
from perfsuite.flops.registry import (
    FAMILIES,
    Estimate,
    estimate,
    family_of,
    is_ignored,
    lookup,
    register,
    registered_ops,
    unregister,
)
from perfsuite.flops.result import CountResult, OpRow

_LAZY = {"OpCounter", "count_model"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from perfsuite.flops import torch_counter

        return getattr(torch_counter, name)
    raise AttributeError(f"module 'perfsuite.flops' has no attribute {name!r}")


__all__ = [
    "FAMILIES",
    "Cost",
    "CountResult",
    "Estimate",
    "OpCall",
    "OpCounter",
    "OpRow",
    "TensorMeta",
    "count_model",
    "dtype_bytes",
    "estimate",
    "family_of",
    "is_ignored",
    "lookup",
    "register",
    "registered_ops",
    "unregister",
]
