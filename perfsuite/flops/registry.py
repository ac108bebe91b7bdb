"""The op registry: operator name -> (family, formula). Torch-free.

Formulas are small functions `f(call: OpCall) -> Cost`, registered with `@register(...)`.
Users add their own ops the same way. Ops nobody registered are not silently zero: `estimate`
marks them unknown and the callers report them by name with their call count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfsuite.flops.call import Cost, OpCall, words

Formula = Callable[[OpCall], Cost]

FAMILIES = (
    "convolution",
    "matmul",
    "attention",
    "normalization",
    "elementwise",
    "pooling",
    "softmax_loss",
    "embedding",
    "optimizer",
    "memory",
    "other",
)


@dataclass(frozen=True)
class OpModel:
    name: str
    family: str
    formula: Formula
    composite: bool = False  # decomposes into other registered ops under the live counter


@dataclass(frozen=True)
class Estimate:
    """Result of `estimate`: known=False means no formula (FLOPs and bytes then 0, reported)."""

    op: str
    family: str
    flops: float
    bytes: float
    known: bool


_REGISTRY: dict[str, OpModel] = {}

# Views and metadata-only ops: no arithmetic and no data movement (documented allowlist).
ZERO_COST_OPS = frozenset(
    "aten::" + n
    for n in words("""view _unsafe_view reshape _reshape_alias t transpose permute expand expand_as
    view_as detach alias squeeze unsqueeze as_strided slice select split split_with_sizes
    chunk unbind narrow flatten unflatten movedim numpy_T lift_fresh empty empty_like
    empty_strided new_empty new_empty_strided resize_ set_ _local_scalar_dense sym_size
    sym_stride sym_numel is_same_size size stride dim item result_type
    _has_compatible_shallow_copy_type
    unsafe_split unsafe_chunk real imag _conj _neg_view view_as_real view_as_complex
    _nested_tensor_from_mask_left_aligned lift lift_fresh_copy""")
)

# Namespaces that carry no work of their own (profiler markers, autograd bookkeeping).
IGNORED_NAMESPACES = ("profiler::", "autograd::", "prim::")


def _normalize(name: str) -> str:
    """`aten.convolution.default` / `convolution` -> `aten::convolution`."""
    if "::" in name:
        return name
    if name.startswith("aten."):
        return "aten::" + name.split(".")[1]
    return "aten::" + name


def register(
    *names: str, family: str, composite: bool = False, replace: bool = True
) -> Callable[[Formula], Formula]:
    """Decorator: register `formula` for one or more op names (e.g. "aten::convolution").

    `composite=True` marks ops (aten::linear, aten::conv2d) that the live counter never sees
    because they decompose into registered ops; traces do show them. Set `replace=False` to
    refuse overwriting an existing entry.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    _ensure_builtins()  # so that a user's formula for a built-in op replaces it, not vice versa

    def deco(formula: Formula) -> Formula:
        for raw in names:
            name = _normalize(raw)
            if not replace and name in _REGISTRY:
                raise ValueError(f"op {name} is already registered")
            _REGISTRY[name] = OpModel(name, family, formula, composite)
        return formula

    return deco


def unregister(name: str) -> None:
    _REGISTRY.pop(_normalize(name), None)


def lookup(name: str) -> OpModel | None:
    _ensure_builtins()
    return _REGISTRY.get(_normalize(name))


def registered_ops() -> dict[str, OpModel]:
    _ensure_builtins()
    return dict(_REGISTRY)


def is_ignored(name: str) -> bool:
    """Ops with no cost of their own: views, metadata and profiler markers."""
    return name.startswith(IGNORED_NAMESPACES) or _normalize(name) in ZERO_COST_OPS


def family_of(name: str) -> str:
    model = lookup(name)
    if model is not None:
        return model.family
    return "memory" if is_ignored(name) else "other"


def estimate(call: OpCall) -> Estimate:
    """FLOPs and bytes of one call; known=False when no formula exists (never silently 0).
    Integer and bool work (every tensor known not to be floating point) costs bytes, no FLOPs."""
    _ensure_builtins()
    name = _normalize(call.name)
    model = _REGISTRY.get(name)
    if model is not None:
        cost = model.formula(call)
        flops = 0.0 if cost.flops and call.integer_only() else float(cost.flops)
        return Estimate(name, model.family, flops, float(cost.bytes), True)
    if is_ignored(name):
        return Estimate(name, "memory", 0.0, 0.0, True)
    return Estimate(name, "other", 0.0, 0.0, False)


_LOADED = False


def _ensure_builtins() -> None:
    """Import the formula modules once (they register themselves on import)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True  # set first: the modules call register(), which comes back here
    try:
        from perfsuite.flops import (  # noqa: F401
            attention,
            conv,
            elementwise,
            embedding,
            matmul,
            memory,
            norm,
            optimizer,
            pooling,
            softmax_loss,
        )
    except BaseException:
        _LOADED = False  # a failed import must not leave a half-filled registry for good
        raise
