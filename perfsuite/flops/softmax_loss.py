"""Softmax, log-softmax and the classification losses, forward and backward.

Per element of the input: softmax 5 (max, subtract, exp, sum, divide), log_softmax 5 (max,
subtract, exp, sum, subtract log-sum), their backwards 4 (softmax: y * (g - sum(g*y)); log:
g - exp(y) * sum(g)). nll_loss: 1 FLOP per target (gather-and-add; 2 with class weights),
its backward 1 per target. cross_entropy (composite) = log_softmax + nll_loss.
mse_loss 3 per element (subtract, square, add), backward 3.
nll_loss bytes, like embedding's: the forward reads one gathered element of self per target
(not the whole [N, C] input), the targets and the gathered class weights; the backward reads
grad_output, the targets, the gathered weights and total_weight, and writes grad_input (the
size of self, whose values it never reads).
"""

from __future__ import annotations

import math

from perfsuite.flops.call import Cost, OpCall, TensorMeta
from perfsuite.flops.registry import register

SOFTMAX = 5
SOFTMAX_BACKWARD = 4


@register("aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax",
          "aten::_safe_softmax", family="softmax_loss")  # fmt: skip
def softmax(call: OpCall) -> Cost:
    """(self, dim, ...): 5 FLOPs per element."""
    x = call.tensor(0)
    if x is None:
        return Cost(0, call.io_bytes())
    return Cost(SOFTMAX * x.numel, call.io_bytes([x]))


@register("aten::_softmax_backward_data", "aten::_log_softmax_backward_data",
          family="softmax_loss")  # fmt: skip
def softmax_backward(call: OpCall) -> Cost:
    """(grad_output, output, dim, input_dtype): 4 FLOPs per element."""
    g = call.tensor(0)
    if g is None:
        return Cost(0, call.io_bytes())
    return Cost(SOFTMAX_BACKWARD * g.numel, call.io_bytes([g]))


def _loss_out(call: OpCall, x: TensorMeta, reduction_index: int) -> list[TensorMeta]:
    reduction = call.arg(reduction_index, 1)  # 0 none, 1 mean, 2 sum
    t = call.tensor(1)
    shape = t.shape if (reduction == 0 and t is not None) else ()
    return [TensorMeta(shape, x.dtype), TensorMeta((), x.dtype)]


def _target_bytes(target: TensorMeta, weight: TensorMeta | None) -> int:
    """The targets, plus one class weight per target (at most all of them: repeated classes
    read the same weight)."""
    w = min(target.numel, weight.numel) * weight.itemsize if weight is not None else 0
    return target.nbytes + w


@register("aten::nll_loss_forward", "aten::nll_loss2d_forward", "aten::nll_loss",
          "aten::nll_loss_nd", family="softmax_loss")  # fmt: skip
def nll_loss(call: OpCall) -> Cost:
    """(self, target, weight, reduction, ignore_index): 1 FLOP per target, 2 with weights.
    Bytes: per target one gathered element of self and of weight, the targets, the outputs."""
    x, target, weight = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None or target is None:
        return Cost(0, call.io_bytes())
    per = 2 if weight is not None else 1
    read = target.numel * x.itemsize + _target_bytes(target, weight)
    return Cost(per * target.numel, read + call.output_bytes(_loss_out(call, x, 3)))


@register("aten::nll_loss_backward", "aten::nll_loss2d_backward", family="softmax_loss")
def nll_loss_backward(call: OpCall) -> Cost:
    """(grad_output, self, target, weight, reduction, ignore_index, total_weight): 1 FLOP per
    target. Bytes: grad_output, targets, gathered weights and total_weight read; grad_input
    (the size of self) written. self gives only grad_input's shape."""
    g, x, target, weight = call.tensor(0), call.tensor(1), call.tensor(2), call.tensor(3)
    if x is None or target is None:
        return Cost(0, call.io_bytes())
    read = sum(t.nbytes for t in (g, call.tensor(6)) if t is not None)
    read += _target_bytes(target, weight)
    return Cost(target.numel, read + call.output_bytes([x]))


@register("aten::cross_entropy_loss", family="softmax_loss", composite=True)
def cross_entropy(call: OpCall) -> Cost:
    """(self, target, weight, reduction, ignore_index, label_smoothing): log_softmax + nll."""
    x = call.tensor(0)
    if x is None:
        return Cost(0, call.io_bytes())
    t = call.tensor(1)
    targets = t.numel if t is not None else math.prod(x.shape) // max(1, x.shape[-1])
    flops = SOFTMAX * x.numel + (2 if call.tensor(2) is not None else 1) * targets
    return Cost(flops, call.io_bytes([TensorMeta((), x.dtype)]))


@register("aten::mse_loss", family="softmax_loss")
def mse_loss(call: OpCall) -> Cost:
    """(self, target, reduction): 3 FLOPs per element."""
    x = call.tensor(0)
    if x is None:
        return Cost(0, call.io_bytes())
    out = TensorMeta(x.shape if call.arg(2, 1) == 0 else (), x.dtype)
    return Cost(3 * x.numel, call.io_bytes([out]))


@register("aten::mse_loss_backward", family="softmax_loss")
def mse_loss_backward(call: OpCall) -> Cost:
    """(grad_output, self, target, reduction): 3 FLOPs per element."""
    x = call.tensor(1)
    if x is None:
        return Cost(0, call.io_bytes())
    return Cost(3 * x.numel, call.io_bytes([x]))
