"""Scaled dot-product attention (fused kernels): forward and backward.

q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev]. Forward = the two matrix products
Q K^T (2*B*H*L*S*E) and P V (2*B*H*L*S*Ev). Backward = the four products dV = P^T dO,
dP = dO V^T, dQ = dS K, dK = dS^T Q: 4*B*H*L*S*(E + Ev). Conventions (the same as
torch.utils.flop_counter): the scale, mask and softmax element-wise work is not counted, the
causal mask does not halve the count, and the Q K^T recomputation of flash backward is not
counted (this is the algorithm's work, not one kernel's).
"""

from __future__ import annotations

from perfsuite.flops.call import Cost, OpCall, TensorMeta
from perfsuite.flops.registry import register


def _dims(q: TensorMeta, k: TensorMeta, v: TensorMeta) -> tuple[int, int, int, int, int]:
    """(B*H, L, S, E, Ev); leading dims other than the last two are all batch-like."""
    bh = q.numel // (q.shape[-2] * q.shape[-1])
    return bh, q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]


def sdpa_forward_flops(q: TensorMeta, k: TensorMeta, v: TensorMeta) -> int:
    bh, lq, s, e, ev = _dims(q, k, v)
    return 2 * bh * lq * s * (e + ev)


def sdpa_backward_flops(q: TensorMeta, k: TensorMeta, v: TensorMeta) -> int:
    bh, lq, s, e, ev = _dims(q, k, v)
    return 4 * bh * lq * s * (e + ev)


@register(
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_fused_attention_overrideable",
    family="attention",
)
def sdpa_forward(call: OpCall) -> Cost:
    """(query, key, value, ...): 2*B*H*L*S*(E+Ev). Bytes: q, k, v (and mask) read, output
    [B, H, L, Ev] (plus log-sum-exp when known) written."""
    q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
    if q is None or k is None or v is None:
        return Cost(0, call.io_bytes())
    out = TensorMeta((*q.shape[:-1], v.shape[-1]), q.dtype)
    return Cost(sdpa_forward_flops(q, k, v), call.io_bytes([out]))


@register("aten::scaled_dot_product_attention", family="attention", composite=True)
def sdpa_composite(call: OpCall) -> Cost:
    return sdpa_forward(call)


@register(
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_cudnn_attention_backward",
    "aten::_scaled_dot_product_fused_attention_overrideable_backward",
    family="attention",
)
def sdpa_backward(call: OpCall) -> Cost:
    """(grad_out, query, key, value, out, logsumexp, ...): 4*B*H*L*S*(E+Ev). Bytes: all
    inputs read, dQ, dK, dV written."""
    q, k, v = call.tensor(1), call.tensor(2), call.tensor(3)
    if q is None or k is None or v is None:
        return Cost(0, call.io_bytes())
    return Cost(sdpa_backward_flops(q, k, v), call.io_bytes([q, k, v]))
