"""A framework-free description of one operator call, shared by the live counter and traces.

The torch counter builds an `OpCall` from real tensors; a trace analyzer builds one from a
profiler event ("Input Dims", "Input type", "Concrete Inputs"). Formulas only see this, so the
same formula serves both, and this module never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# Bytes per element. Keys cover torch dtype names ("float32", "torch.float32"), their aliases
# ("half", "long") and the C++ type names that torch.profiler writes into "Input type"
# ("float", "c10::BFloat16", "long int", "short unsigned int"). Every torch dtype is listed
# (tests compare this table with `torch.empty(0, dtype=d).element_size()`); sub-byte dtypes
# (int1..int7, uint1..uint7, the packed float4 pair) take one byte per element, as in torch.
DTYPE_BYTES: dict[str, int] = {
    "float64": 8, "double": 8, "float32": 4, "float": 4, "float16": 2, "half": 2,
    "c10::half": 2, "bfloat16": 2, "c10::bfloat16": 2, "int64": 8, "long": 8, "long int": 8,
    "int32": 4, "int": 4, "int16": 2, "short": 2, "short int": 2, "int8": 1, "signed char": 1,
    "uint8": 1, "unsigned char": 1, "bool": 1,
    "uint16": 2, "short unsigned int": 2, "unsigned short": 2,
    "uint32": 4, "unsigned int": 4,
    "uint64": 8, "long unsigned int": 8, "unsigned long": 8,
    "complex32": 4, "chalf": 4, "c10::complex<c10::half>": 4,
    "complex64": 8, "cfloat": 8, "c10::complex<float>": 8,
    "complex128": 16, "cdouble": 16, "c10::complex<double>": 16,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1,
    "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "c10::float8_e4m3fnuz": 1,
    "c10::float8_e5m2fnuz": 1, "c10::float8_e8m0fnu": 1, "c10::float4_e2m1fn_x2": 1,
    "qint8": 1, "quint8": 1, "qint32": 4, "quint4x2": 1, "quint2x4": 1,
    "c10::qint8": 1, "c10::quint8": 1, "c10::qint32": 4, "c10::quint4x2": 1,
    "c10::quint2x4": 1,
    "bits8": 1, "bits16": 2, "bits1x8": 1, "bits2x4": 1, "bits4x2": 1,
    "c10::bits8": 1, "c10::bits16": 2, "c10::bits1x8": 1, "c10::bits2x4": 1,
    "c10::bits4x2": 1,
    **{f"int{n}": 1 for n in range(1, 8)}, **{f"uint{n}": 1 for n in range(1, 8)},
    **{f"c10::dummy_int1_7_t<{n}>": 1 for n in range(1, 8)},
    **{f"c10::dummy_uint1_7_t<{n}>": 1 for n in range(1, 8)},
}  # fmt: skip


# Dtype names known not to be floating point: their arithmetic is no FLOP (an int64 step
# counter's add_, an eq of integer labels). Names not listed (float, complex, quantized,
# unknown) are treated as floating point, so a trace's unreadable type never hides real FLOPs.
NON_FLOAT_DTYPES = frozenset({
    "int64", "long", "long int", "int32", "int", "int16", "short", "short int", "int8",
    "signed char", "uint8", "unsigned char", "uint16", "short unsigned int", "unsigned short",
    "uint32", "unsigned int", "uint64", "long unsigned int", "unsigned long", "bool",
    *(f"int{n}" for n in range(1, 8)), *(f"uint{n}" for n in range(1, 8)),
    *(f"c10::dummy_int1_7_t<{n}>" for n in range(1, 8)),
    *(f"c10::dummy_uint1_7_t<{n}>" for n in range(1, 8)),
})  # fmt: skip


def _dtype_key(dtype: str) -> str:
    return str(dtype).lower().removeprefix("torch.")


def is_non_float(dtype: str) -> bool:
    return _dtype_key(dtype) in NON_FLOAT_DTYPES


def dtype_bytes(dtype: str) -> int:
    """Element size of a dtype name; 4 (float32) when the name is unknown, e.g. in a trace."""
    return DTYPE_BYTES.get(_dtype_key(dtype), 4)


@dataclass(frozen=True)
class TensorMeta:
    """Shape and dtype of a tensor: all a formula needs to know about it.

    `stored` is the number of distinct elements in memory when it is smaller than `numel`: a
    broadcast view (`expand`, stride 0) holds one copy of the repeated values, so a kernel
    reads `stored` elements, not `numel`. Only the live counter knows strides; None means
    dense. FLOP formulas use `shape` (the logical size), `nbytes` uses `stored`.
    """

    shape: tuple[int, ...]
    dtype: str = "float32"
    stored: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return dtype_bytes(self.dtype)

    @property
    def nbytes(self) -> int:
        elements = self.numel if self.stored is None else min(self.stored, self.numel)
        return elements * self.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class Cost:
    """What one call costs: FLOPs (multiply-add = 2) and modeled compulsory bytes."""

    flops: float
    bytes: float


@dataclass
class OpCall:
    """One call of an operator, named like the schema / the profiler ("aten::convolution").

    `args` are positional arguments in schema order: `TensorMeta`, lists of `TensorMeta`
    (TensorList), numbers, bools, lists of ints, strings or None. The counter fills schema
    defaults, so formulas can index positions; `arg()` tolerates shorter lists (traces).
    `outputs` are the result tensors, or None when unknown (traces record no outputs): then
    formulas infer the output shapes they need.
    """

    name: str
    args: list[Any] = field(default_factory=list)
    outputs: list[TensorMeta] | None = None
    overload: str = ""

    def arg(self, index: int, default: Any = None) -> Any:
        """Positional argument `index`, or `default` when absent or None."""
        if index < len(self.args) and self.args[index] is not None:
            return self.args[index]
        return default

    def tensor(self, index: int) -> TensorMeta | None:
        a = self.arg(index)
        return a if isinstance(a, TensorMeta) else None

    def tensor_list(self, index: int) -> list[TensorMeta]:
        a = self.arg(index)
        if isinstance(a, (list, tuple)):
            return [t for t in a if isinstance(t, TensorMeta)]
        return []

    def input_tensors(self) -> Iterator[TensorMeta]:
        """Every tensor among the arguments, flattening TensorLists."""
        for a in self.args:
            if isinstance(a, TensorMeta):
                yield a
            elif isinstance(a, (list, tuple)):
                yield from (t for t in a if isinstance(t, TensorMeta))

    def integer_only(self) -> bool:
        """True when every tensor in and out is known to be integer or bool: no FLOPs then
        (FLOPs are floating-point operations), only bytes."""
        tensors = [*self.input_tensors(), *(self.outputs or [])]
        return bool(tensors) and all(is_non_float(t.dtype) for t in tensors)

    def input_bytes(self) -> int:
        return sum(t.nbytes for t in self.input_tensors())

    def output_bytes(self, inferred: Sequence[TensorMeta] = ()) -> int:
        """Bytes of the outputs: the real ones when known, else the formula's inferred ones."""
        outs = self.outputs if self.outputs is not None else inferred
        return sum(t.nbytes for t in outs)

    def io_bytes(self, inferred: Sequence[TensorMeta] = ()) -> int:
        """Compulsory traffic: every input tensor read once, every output written once."""
        return self.input_bytes() + self.output_bytes(inferred)


def as_list(value: Any, n: int) -> list[int]:
    """An int-or-list argument (stride=2 or stride=[2, 2]) as a list of length n."""
    if isinstance(value, (list, tuple)):
        vals = [int(v) for v in value]
        if len(vals) == 1 and n > 1:
            vals = vals * n
        return vals
    return [int(value)] * n


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes (no error checking: the framework already did that)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, start=ndim - len(s)):
            if d != 1:
                out[i] = d
    return tuple(out)


def words(text: str) -> list[str]:
    """Whitespace-separated names of a long op list (keeps the lists readable)."""
    return text.split()
