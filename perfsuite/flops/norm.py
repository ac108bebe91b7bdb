"""Batch, layer, group and RMS normalization, forward and backward.

FLOPs per element of the input (documented model, per-channel/per-row work is not counted):
- forward computing batch statistics (batch norm in training, layer/group norm always):
  mean 1 + variance 3 (sub, square, add) + normalize 2 (sub, mul by 1/std) = 6,
  plus 1 for the weight (scale) and 1 for the bias (shift) when present: 8 with both.
- forward with running statistics (batch norm in eval): normalize 2 + scale 1 + shift 1.
- backward: 10 per element with batch statistics (x_hat recompute 2, sum(g) 1,
  sum(g*x_hat) 2, grad_input 5), 7 with running statistics (grad_input is 2, no mean terms).
  Only the terms the requested gradients (output_mask) need: grad_weight needs x_hat and
  sum(g*x_hat), grad_bias sum(g), grad_input with batch statistics all of them (with running
  statistics only its own 2). A first layer's batch norm (input without grad) costs 5.
- RMS norm: forward 3 (square, add, mul by 1/rms) + 1 for the weight; backward 7.
Bytes: every input read once, every output (incl. saved mean / inverse std) written once;
backward reads the input only when x_hat is needed, and writes the requested gradients.
"""

from __future__ import annotations

import math

from perfsuite.flops.call import Cost, OpCall, TensorMeta
from perfsuite.flops.registry import register

STATS = 6  # mean 1 + variance 3 + normalize 2
NORMALIZE = 2
BACKWARD_BATCH_STATS = 10  # every gradient requested: x_hat 2 + sums 3 + grad_input 5
BACKWARD_RUNNING_STATS = 7  # x_hat 2 + sums 3 + grad_input 2
XHAT_AND_SUM_GXHAT = 2 + 2
SUM_G = 1
GRAD_INPUT_BATCH_STATS = 5


def _affine(weight: TensorMeta | None, bias: TensorMeta | None) -> int:
    return int(weight is not None) + int(bias is not None)


def _bn_forward(call: OpCall, training: bool) -> Cost:
    """Batch norm forward on input [N, C, *]: (6 or 2) + affine FLOPs per element."""
    x, w, b = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None:
        return Cost(0, call.io_bytes())
    per = (STATS if training else NORMALIZE) + _affine(w, b)
    c = x.shape[1] if x.ndim > 1 else 1
    stats = [TensorMeta((c,), "float32")] * 2 if training else []
    return Cost(per * x.numel, call.io_bytes([x, *stats]))


@register(
    "aten::native_batch_norm",
    "aten::_native_batch_norm_legit_functional",
    "aten::cudnn_batch_norm",
    "aten::miopen_batch_norm",
    "aten::batch_norm",
    family="normalization",
)
def batch_norm(call: OpCall) -> Cost:
    """(input, weight, bias, running_mean, running_var, training, momentum, eps, ...)."""
    return _bn_forward(call, bool(call.arg(5, False)))


@register("aten::_native_batch_norm_legit", family="normalization")
def batch_norm_legit(call: OpCall) -> Cost:
    """(input, weight, bias, running_mean, running_var, training, ...) or, overload no_stats,
    (input, weight, bias, training, momentum, eps)."""
    if isinstance(call.arg(3), bool) or call.overload == "no_stats":
        return _bn_forward(call, bool(call.arg(3)))
    return _bn_forward(call, bool(call.arg(5, False)))


@register("aten::_batch_norm_with_update", family="normalization")
def batch_norm_with_update(call: OpCall) -> Cost:
    """Training-mode batch norm that also updates running stats."""
    return _bn_forward(call, True)


@register(
    "aten::_native_batch_norm_legit_no_training", "aten::_batch_norm_no_update",
    family="normalization",
)  # fmt: skip
def batch_norm_eval(call: OpCall) -> Cost:
    """Batch norm with running statistics."""
    return _bn_forward(call, False)


def backward_per_element(mask: list[bool], training: bool) -> int:
    """FLOPs per element of a norm backward computing the gradients `mask` asks for
    ([grad_input, grad_weight, grad_bias]); all three: 10 (batch stats) or 7 (running)."""
    want_in, want_w, want_b = mask
    per = 0
    if want_w or (want_in and training):
        per += XHAT_AND_SUM_GXHAT
    if want_b or (want_in and training):
        per += SUM_G
    if want_in:
        per += GRAD_INPUT_BATCH_STATS if training else NORMALIZE
    return per


def _bn_backward(
    call: OpCall, g_i: int, x_i: int, w_i: int, training: bool, mask_i: int | None = None
) -> Cost:
    """Norm backward: the terms the requested gradients need. Bytes: grad_out and the small
    per-channel tensors read, the input too when x_hat is needed; requested gradients written."""
    g, x, w = call.tensor(g_i), call.tensor(x_i), call.tensor(w_i)
    if g is None or x is None:
        return Cost(0, call.io_bytes())
    raw = call.arg(mask_i) if mask_i is not None else None
    mask = [True] * 3
    if isinstance(raw, (list, tuple)) and len(raw) == 3:
        mask = [bool(m) for m in raw]
    outs = [x] if mask[0] else []
    if w is not None:
        outs += [w] * (int(mask[1]) + int(mask[2]))
    others = [t for i, t in enumerate(call.args) if isinstance(t, TensorMeta) and i != x_i]
    needs_x = mask[1] or (mask[0] and training)  # x_hat needs the input's values
    read = sum(t.nbytes for t in others) + (x.nbytes if needs_x else 0)
    per = backward_per_element(mask, training)
    return Cost(per * x.numel, read + call.output_bytes(outs))


@register("aten::native_batch_norm_backward", family="normalization")
def native_batch_norm_backward(call: OpCall) -> Cost:
    """(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train,
    eps, output_mask): 10 (train) or 7 FLOPs per element with every gradient requested."""
    return _bn_backward(call, 0, 1, 2, bool(call.arg(7, True)), 9)


@register("aten::batch_norm_backward", family="normalization")
def batch_norm_backward(call: OpCall) -> Cost:
    """(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update,
    eps, output_mask, reserve)."""
    return _bn_backward(call, 0, 1, 2, bool(call.arg(7, True)), 9)


@register("aten::cudnn_batch_norm_backward", "aten::miopen_batch_norm_backward",
          family="normalization")  # fmt: skip
def cudnn_batch_norm_backward(call: OpCall) -> Cost:
    """(input, grad_output, weight, ...): cuDNN puts the input first; training mode."""
    return _bn_backward(call, 1, 0, 2, True)


@register("aten::native_layer_norm", "aten::layer_norm", family="normalization")
def layer_norm(call: OpCall) -> Cost:
    """(input, normalized_shape, weight, bias, eps): 6 + affine FLOPs per element."""
    x, w, b = call.tensor(0), call.tensor(2), call.tensor(3)
    if x is None:
        return Cost(0, call.io_bytes())
    norm_dims = len(call.arg(1, [x.shape[-1]]))
    rows = math.prod(x.shape[: x.ndim - norm_dims])
    stats = [TensorMeta((rows,), "float32")] * 2
    return Cost((STATS + _affine(w, b)) * x.numel, call.io_bytes([x, *stats]))


@register("aten::native_layer_norm_backward", family="normalization")
def layer_norm_backward(call: OpCall) -> Cost:
    """(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask): 10/elem."""
    return _bn_backward(call, 0, 1, 5, True, 7)


@register("aten::native_group_norm", family="normalization")
def group_norm(call: OpCall) -> Cost:
    """(input, weight, bias, N, C, HxW, group, eps): 6 + affine FLOPs per element."""
    x, w, b = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None:
        return Cost(0, call.io_bytes())
    stats = [TensorMeta((x.shape[0] * int(call.arg(6, 1)),), "float32")] * 2
    return Cost((STATS + _affine(w, b)) * x.numel, call.io_bytes([x, *stats]))


@register("aten::group_norm", family="normalization", composite=True)
def group_norm_composite(call: OpCall) -> Cost:
    """(input, num_groups, weight, bias, eps, cudnn_enabled)."""
    x, w, b = call.tensor(0), call.tensor(2), call.tensor(3)
    if x is None:
        return Cost(0, call.io_bytes())
    return Cost((STATS + _affine(w, b)) * x.numel, call.io_bytes([x]))


@register("aten::native_group_norm_backward", family="normalization")
def group_norm_backward(call: OpCall) -> Cost:
    """(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask): 10/elem."""
    return _bn_backward(call, 0, 1, 4, True, 9)


@register("aten::_fused_rms_norm", "aten::rms_norm", family="normalization")
def rms_norm(call: OpCall) -> Cost:
    """(input, normalized_shape, weight, eps): 3 + 1 (weight) FLOPs per element."""
    x, w = call.tensor(0), call.tensor(2)
    if x is None:
        return Cost(0, call.io_bytes())
    return Cost((3 + int(w is not None)) * x.numel, call.io_bytes([x]))


@register("aten::_fused_rms_norm_backward", family="normalization")
def rms_norm_backward(call: OpCall) -> Cost:
    """(grad_out, input, normalized_shape, rstd, weight, output_mask): 7/elem."""
    g, x, w = call.tensor(0), call.tensor(1), call.tensor(4)
    if g is None or x is None:
        return Cost(0, call.io_bytes())
    outs = [x] + ([w] if w is not None else [])
    return Cost(7 * x.numel, call.io_bytes(outs))
