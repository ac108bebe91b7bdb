"""Element-wise arithmetic, activations and reductions.

Rule: each arithmetic operation of the textbook formula is 1 FLOP per output element, and
each transcendental (exp, log, sqrt, tanh, erf, pow) also counts 1. Comparisons and selects
(relu, clamp, max) count 1. The table `PER_ELEMENT` is the documented cost; add/sub with
alpha != 1 and addcmul/addcdiv with value != 1 add one multiply. Reductions cost 1 FLOP per
input element (the adds plus the final divide of a mean). In-place (`add_`) and out= variants
cost the same as the functional op. Bytes: every input tensor read once (broadcast operands
at their own size), the output written once.

Reductions, per input element, whatever `dim` (an int, a tuple, none: all), `keepdim` and
`dtype`: sum, mean, prod, amax/amin, max/min, argmax/argmin, any/all 1 (the add or compare;
a mean's divide is per output element, folded in); var/std (and _mean) 4 (mean 1, subtract,
square, add); logsumexp 4 (max, subtract, exp, add); vector norms by their order: 2 for
ord 2 (square, add), 1 (abs, add), +-inf (abs, max) and 0 (compare, add), 3 for any other
p (abs, pow, add); the final root per output element is folded in too. Without the real
output (a trace) its shape comes from `dim` and `keepdim` and its dtype from `dtype`.
"""

from __future__ import annotations

from perfsuite.flops.call import DTYPE_BYTES, Cost, OpCall, TensorMeta, broadcast_shape, words
from perfsuite.flops.registry import register

PER_ELEMENT: dict[str, int] = {
    # 1 FLOP: arithmetic, comparisons, selects, one transcendental
    **dict.fromkeys(
        words("""add sub rsub mul div neg abs reciprocal relu threshold threshold_backward clamp
        clamp_min clamp_max hardtanh hardtanh_backward leaky_relu leaky_relu_backward maximum
        minimum where masked_fill eq ne lt le gt ge sign floor ceil round trunc sqrt rsqrt exp
        exp2 log log2 log10 log1p expm1 tanh erf sin cos pow square logical_not logical_and
        logical_or bitwise_not fmod remainder relu6 sgn frac"""),
        1,
    ),
    "sigmoid": 4,  # 1 / (1 + exp(-x)): neg, exp, add, div
    "sigmoid_backward": 3,  # g * y * (1 - y)
    "tanh_backward": 3,  # g * (1 - y * y)
    "gelu": 5,  # 0.5 * x * (1 + erf(x / sqrt 2)); tanh approximation: 9
    "gelu_backward": 11,  # g * (cdf(x) + x * pdf(x))
    "silu": 5,  # x * sigmoid(x)
    "silu_backward": 9,  # g * s * (1 + x * (1 - s))
    "hardswish": 5,  # x * min(max(x + 3, 0), 6) / 6
    "hardswish_backward": 3,
    "hardsigmoid": 4,
    "hardsigmoid_backward": 2,
    "elu": 3,
    "elu_backward": 2,
    "softplus": 3,  # log(1 + exp(x))
    "softplus_backward": 5,
    "mish": 5,
    "lerp": 3,  # self + w * (end - self)
    "addcmul": 3,  # self + value * t1 * t2 (2 when value == 1)
    "addcdiv": 3,  # self + value * t1 / t2 (2 when value == 1)
    "native_dropout": 2,  # draw-and-compare 1, scale 1
    "native_dropout_backward": 2,  # mask 1, scale 1
}

REDUCTIONS: dict[str, int] = {
    **dict.fromkeys(words("sum mean amax amin max min argmax argmin prod any all"), 1),
    "linalg_vector_norm": 2,  # square and add (ord 2); see norm_per_element
    "norm": 2,
    **dict.fromkeys(("var", "std", "var_mean", "std_mean"), 4),  # mean, sub, square, add
    "logsumexp": 4,  # max, sub, exp, add
}
_NORMS = ("linalg_vector_norm", "norm")


def norm_per_element(ord_: object) -> int:
    """FLOPs per input element of a vector norm of order `ord_` (None: 2)."""
    if ord_ is None or isinstance(ord_, bool):
        return 2
    if isinstance(ord_, (int, float)) and float(ord_) in (
        0.0,
        1.0,
        2.0,
        float("inf"),
        -float("inf"),
    ):
        return 2
    return 3


def _out_dtype(call: OpCall, x: TensorMeta) -> str:
    """The `dtype=` argument of a reduction, where one is given (a dtype name), else x's."""
    for a in call.args[1:]:
        if isinstance(a, str) and (a.startswith("torch.") or a in DTYPE_BYTES):
            return a.removeprefix("torch.")
    return x.dtype


_SCALED_ALPHA = {"add": 2, "sub": 2, "rsub": 2}  # position of alpha
_SCALED_VALUE = {"addcmul": 3, "addcdiv": 3}  # position of value


def pointwise_cost(call: OpCall, per_element: int) -> Cost:
    """`per_element` FLOPs for each element of the broadcast output shape."""
    tensors = [a for a in call.args if isinstance(a, TensorMeta)]
    if call.outputs:
        out = call.outputs[0]
    elif tensors:
        out = TensorMeta(broadcast_shape(*(t.shape for t in tensors)), tensors[0].dtype)
    else:
        return Cost(0, 0)
    return Cost(per_element * out.numel, call.io_bytes([out]))


def _make_pointwise(base: str, per: int):
    def formula(call: OpCall) -> Cost:
        cost = per
        if base in _SCALED_ALPHA and call.arg(_SCALED_ALPHA[base], 1) != 1:
            cost += 1
        if base in _SCALED_VALUE and call.arg(_SCALED_VALUE[base], 1) == 1:
            cost -= 1
        if base == "gelu" and call.arg(1, "none") == "tanh":
            cost = 9
        return pointwise_cost(call, cost)

    formula.__doc__ = f"{base}: {per} FLOP per output element (see module docstring)."
    return formula


for _base, _per in PER_ELEMENT.items():
    register(f"aten::{_base}", f"aten::{_base}_", family="elementwise")(
        _make_pointwise(_base, _per)
    )


def _reduced_shape(x: TensorMeta, dims: object, keepdim: bool) -> tuple[int, ...]:
    """The output shape of reducing `x` over `dims` (an int, a list of ints, or None / [] for
    every dim)."""
    if dims is None or dims == []:
        return (1,) * x.ndim if keepdim else ()
    dlist = [dims] if isinstance(dims, int) else list(dims)  # type: ignore[arg-type]
    norm = {int(d) % x.ndim for d in dlist} if x.ndim else set()
    return tuple(1 if i in norm else s for i, s in enumerate(x.shape) if keepdim or i not in norm)


def _dims(value: object) -> object:
    """A `dim` argument as the formula reads it: an int or a list of ints; anything else (a
    dimension name, a dtype string, absent) means every dimension."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, (list, tuple)) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in value
    ):
        return list(value)
    return None


def _flag(value: object) -> bool:
    return value if isinstance(value, bool) else False


# Where `dim` and `keepdim` sit in each reduction's schema (all overloads of one op agree):
# sum/mean/prod/amax/max.dim/argmax/logsumexp (self, dim, keepdim, ...); the norms (self,
# ord, dim, keepdim, *, dtype); var/std[_mean] (self, dim, unbiased | correction, keepdim),
# except var.default / std.default (self, unbiased), whose second argument is a bool.
_ARG_POSITIONS: dict[str, tuple[int, int]] = {
    "linalg_vector_norm": (2, 3),
    "norm": (2, 3),
    **dict.fromkeys(("var", "std", "var_mean", "std_mean"), (1, 3)),
}


def reduction_args(base: str, call: OpCall) -> tuple[object, bool]:
    """(dims, keepdim) of a reduction call, read by its schema (None dims: every dim)."""
    dim_at, keep_at = _ARG_POSITIONS.get(base, (1, 2))
    return _dims(call.arg(dim_at)), _flag(call.arg(keep_at))


def _make_reduction(base: str, per: int):
    def formula(call: OpCall) -> Cost:
        x = call.tensor(0)
        if x is None:
            return Cost(0, call.io_bytes())
        if isinstance(call.arg(1), TensorMeta):  # max.other / min.other: element-wise
            return pointwise_cost(call, 1)
        dims, keep = reduction_args(base, call)
        out = TensorMeta(_reduced_shape(x, dims, keep), _out_dtype(call, x))
        cost = norm_per_element(call.arg(1)) if base in _NORMS else per
        outs = [out]
        if base.endswith("_mean"):  # var_mean, std_mean: (var or std, mean)
            outs.append(out)
        elif base in ("max", "min") and dims is not None:  # max.dim: (values, int64 indices)
            outs.append(TensorMeta(out.shape, "int64"))
        return Cost(cost * x.numel, call.io_bytes(outs))

    formula.__doc__ = f"{base}: {per} FLOP per input element (module docstring)."
    return formula


for _base, _per in REDUCTIONS.items():
    register(f"aten::{_base}", family="elementwise")(_make_reduction(_base, _per))
