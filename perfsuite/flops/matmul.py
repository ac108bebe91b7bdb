"""Matrix products: mm, addmm, bmm, baddbmm, and the composites linear, matmul, einsum.

A [M, K] x [K, N] product is M*N*K multiply-adds = 2*M*N*K FLOPs. addmm/baddbmm add the bias
(`self`) once per output element: + M*N (when beta != 0). alpha/beta scalings are not counted.
"""

from __future__ import annotations

import math

from perfsuite.flops.call import Cost, OpCall, TensorMeta, broadcast_shape
from perfsuite.flops.registry import register


def _product(call: OpCall, first: int, has_bias: bool) -> Cost:
    """[B?, M, K] x [B?, K, N] at args `first`, `first + 1`: 2*B*M*K*N, + B*M*N bias adds when
    `has_bias` and beta (the arg after the two factors) is not 0."""
    a, b = call.tensor(first), call.tensor(first + 1)
    if a is None or b is None:
        return Cost(0, call.io_bytes())
    batch = a.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out = TensorMeta((*batch, m, n), a.dtype)
    bias_adds = out.numel if has_bias and call.arg(first + 2, 1) != 0 else 0
    return Cost(2 * math.prod(batch) * m * k * n + bias_adds, call.io_bytes([out]))


@register("aten::mm", "aten::bmm", family="matmul")
def mm(call: OpCall) -> Cost:
    """mm(a[M,K], b[K,N]): 2*M*K*N; bmm(a[B,M,K], b[B,K,N]): 2*B*M*K*N."""
    return _product(call, 0, has_bias=False)


@register("aten::addmm", "aten::baddbmm", family="matmul")
def addmm(call: OpCall) -> Cost:
    """addmm(bias, a[M,K], b[K,N], beta, alpha): 2*M*K*N + M*N (bias add, unless beta == 0);
    baddbmm likewise with a batch dimension."""
    return _product(call, 1, has_bias=True)


@register("aten::linear", family="matmul", composite=True)
def linear(call: OpCall) -> Cost:
    """linear(x[..., K], weight[N, K], bias[N]): 2*rows*K*N + rows*N with bias."""
    x, w, bias = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None or w is None:
        return Cost(0, call.io_bytes())
    rows = math.prod(x.shape[:-1])
    n, k = w.shape[0], w.shape[-1]
    flops = 2 * rows * k * n + (rows * n if bias is not None else 0)
    return Cost(flops, call.io_bytes([TensorMeta((*x.shape[:-1], n), x.dtype)]))


def matmul_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    """(MACs, output shape) of torch.matmul semantics (1-D promotion, batch broadcasting)."""
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    batch = broadcast_shape(a2[:-2], b2[:-2])
    m, k, n = a2[-2], a2[-1], b2[-1]
    out = [*batch, m, n]
    if len(a) == 1:
        out.pop(-2)
    if len(b) == 1:
        out.pop(-1)
    return math.prod(batch) * m * k * n, tuple(out)


@register("aten::matmul", family="matmul", composite=True)
def matmul(call: OpCall) -> Cost:
    """matmul(a, b): 2 * batch * M*K*N with torch.matmul broadcasting."""
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None:
        return Cost(0, call.io_bytes())
    macs, out = matmul_shapes(a.shape, b.shape)
    return Cost(2 * macs, call.io_bytes([TensorMeta(out, a.dtype)]))


@register("aten::einsum", family="matmul", composite=True)
def einsum(call: OpCall) -> Cost:
    """einsum(equation, operands): pairwise left to right; a pair that sums an index away
    costs 2 * prod(sizes of all its indices) (a multiply-add each), a pair that only
    multiplies (nothing summed: 'ij,ij->ij', an outer product) 1 per element."""
    eq = str(call.arg(0, ""))
    ops = call.tensor_list(1)
    if "->" not in eq or not ops or "..." in eq:
        return Cost(0, call.io_bytes())
    lhs, rhs = eq.replace(" ", "").split("->")
    terms = lhs.split(",")
    if len(terms) != len(ops):
        return Cost(0, call.io_bytes())
    sizes: dict[str, int] = {}
    for term, t in zip(terms, ops, strict=True):
        for ch, d in zip(term, t.shape, strict=False):
            sizes[ch] = max(sizes.get(ch, 1), d)
    flops = 0
    current = terms[0]
    for i in range(1, len(terms)):
        later = set("".join(terms[i + 1 :])) | set(rhs)
        both = set(current) | set(terms[i])
        summed = any(c not in later for c in both)
        flops += (2 if summed else 1) * math.prod(sizes[c] for c in both)
        current = "".join(c for c in sorted(both) if c in later)
    if len(terms) == 1 and set(current) - set(rhs):
        flops = math.prod(sizes[c] for c in current)  # a pure reduction: one add per element
    out = TensorMeta(tuple(sizes[c] for c in rhs), ops[0].dtype)
    return Cost(flops, call.io_bytes([out]))
