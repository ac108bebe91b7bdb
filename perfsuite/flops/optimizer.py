"""Optimizer steps: the multi-tensor `_foreach_*` ops and the fused `_fused_sgd_/adam(w)_`.

Single-tensor optimizers (torch's default on CPU) issue ordinary element-wise ops
(`add_`, `lerp_`, `addcdiv_`...), counted by elementwise.py under the optimizer phase.
`_foreach_X` costs what X costs per element (elementwise.PER_ELEMENT) times the elements of
its first TensorList. The fused kernels count the same per-element algebra as the unfused
step, per parameter element:
- SGD: update 2 (param -= lr*d) + weight decay 2 (d = g + wd*p, when wd != 0) + momentum 2
  (buf = m*buf + d; 0 on the first step, where buf = d) + Nesterov 2 (d = g + m*buf).
- Adam: 13 = lerp of m 3 + v*b2 1 + addcmul of v 3 + sqrt 1 + bias-correction divide 1 +
  eps add 1 + addcdiv update 3; + 2 for L2 weight decay; AdamW: + 1 (p *= 1 - lr*wd);
  amsgrad + 1 (max).
Bytes: every TensorList read once; lists updated in place are also written once.
"""

from __future__ import annotations

from perfsuite.flops.call import Cost, OpCall, TensorMeta
from perfsuite.flops.elementwise import PER_ELEMENT, norm_per_element
from perfsuite.flops.registry import register

FOREACH_EXTRA = {"norm": 2, "copy": 0, "zero": 0, "add": 1, "sub": 1}


def _lists(call: OpCall) -> list[list[TensorMeta]]:
    return [
        [t for t in a if isinstance(t, TensorMeta)]
        for a in call.args
        if isinstance(a, (list, tuple)) and any(isinstance(t, TensorMeta) for t in a)
    ]


def _list_bytes(ts: list[TensorMeta]) -> int:
    return sum(t.nbytes for t in ts)


def _foreach_cost(call: OpCall, base: str, per: int) -> Cost:
    lists = _lists(call)
    if not lists:
        return Cost(0, call.io_bytes())
    first = lists[0]
    if base == "norm":  # (self, ord, dtype): as linalg_vector_norm of that order
        per = norm_per_element(call.arg(1))
    if (
        base in ("add", "sub")
        and call.arg(2, 1) not in (1, 1.0)
        and not isinstance(call.arg(2), TensorMeta)
    ):
        per += 1
    if base in ("addcmul", "addcdiv"):
        value = call.arg(3, 1)
        values = value if isinstance(value, (list, tuple)) else [value]
        if all(v == 1 for v in values):
            per -= 1
    elements = sum(t.numel for t in first)
    in_place = call.name.endswith("_")
    read = call.input_bytes() if base not in ("zero", "copy") else _list_bytes(lists[-1])
    if base == "zero":
        read = 0
    if in_place:
        written = _list_bytes(first)
    elif base == "norm":
        written = 4 * len(first)
    else:
        written = _list_bytes(first)
    return Cost(per * elements, read + written)


def _make_foreach(base: str, per: int):
    def formula(call: OpCall) -> Cost:
        return _foreach_cost(call, base, per)

    formula.__doc__ = f"_foreach_{base}: {per} FLOP per element of the first TensorList."
    return formula


for _base, _per in {**PER_ELEMENT, **FOREACH_EXTRA}.items():
    register(f"aten::_foreach_{_base}", f"aten::_foreach_{_base}_", family="optimizer")(
        _make_foreach(_base, _per)
    )


def sgd_per_element(weight_decay: float, momentum: float, dampening: float, nesterov: bool,
                    first_step: bool) -> int:  # fmt: skip
    """FLOPs per parameter element of one SGD step (see module docstring)."""
    per = 2
    if weight_decay:
        per += 2
    if momentum:
        if not first_step:
            per += 2 if dampening == 0 else 3
        if nesterov:
            per += 2
    return per


def adam_per_element(weight_decay: float, decoupled: bool, amsgrad: bool) -> int:
    """FLOPs per parameter element of one Adam (decoupled=False) or AdamW step."""
    per = 13
    if weight_decay:
        per += 1 if decoupled else 2
    return per + int(bool(amsgrad))


@register("aten::_fused_sgd_", "aten::_fused_sgd", family="optimizer")
def fused_sgd(call: OpCall) -> Cost:
    """(params, grads, momentum_buffers, weight_decay, momentum, lr, dampening, nesterov,
    maximize, is_first_step, grad_scale, found_inf)."""
    params, grads, bufs = call.tensor_list(0), call.tensor_list(1), call.tensor_list(2)
    momentum = float(call.arg(4, 0) or 0)
    first = bool(call.arg(9, False))
    per = sgd_per_element(float(call.arg(3, 0) or 0), momentum, float(call.arg(6, 0) or 0),
                          bool(call.arg(7, False)), first)  # fmt: skip
    elements = sum(t.numel for t in params)
    read = _list_bytes(params) + _list_bytes(grads) + (_list_bytes(bufs) if not first else 0)
    written = _list_bytes(params) + (_list_bytes(bufs) if momentum else 0)
    return Cost(per * elements, read + written)


def _fused_adam(call: OpCall, decoupled: bool) -> Cost:
    """(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
    weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)."""
    params = call.tensor_list(0)
    amsgrad = bool(call.arg(11, False))
    per = adam_per_element(float(call.arg(9, 0) or 0), decoupled, amsgrad)
    state = [call.tensor_list(2), call.tensor_list(3)]
    if amsgrad:
        state.append(call.tensor_list(4))
    elements = sum(t.numel for t in params)
    read = call.input_bytes() - (0 if amsgrad else _list_bytes(call.tensor_list(4)))
    written = _list_bytes(params) + sum(_list_bytes(s) for s in state)
    return Cost(per * elements, read + written)


@register("aten::_fused_adam_", "aten::_fused_adam", family="optimizer")
def fused_adam(call: OpCall) -> Cost:
    return _fused_adam(call, decoupled=False)


@register("aten::_fused_adamw_", "aten::_fused_adamw", family="optimizer")
def fused_adamw(call: OpCall) -> Cost:
    return _fused_adam(call, decoupled=True)
