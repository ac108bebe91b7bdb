"""FLOPs and modeled bytes of one TensorFlow training step, read from its traced graph.

The step is a `tf.function`; its concrete graph for the batch's shapes holds every op of the
step: the forward pass, the gradient ops TensorFlow's tape added (`gradient_tape/` scope) and
the update (`optimizer` scope). Each live op is mapped onto the equivalent PyTorch/aten call
(NHWC shapes turned into NCHW, HWIO kernels into OIHW) and costed by the same formulas in
`perfsuite.flops` that count PyTorch steps, so the two frameworks' counts are comparable op by
op. Dead ops (outputs nobody uses, which TensorFlow prunes before running, e.g. the input
gradient of the first convolution) are not counted. Ops without a mapping are reported by
name in `unknown_ops`, never silently zero. TensorFlow's own count
(`tf.compat.v1.profiler`, float_operation) is added alongside as a cross-check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfsuite.flops.call import Cost, OpCall, TensorMeta, words
from perfsuite.flops.registry import estimate, family_of
from perfsuite.flops.result import CountResult, OpRow

SOURCE = (
    "perfsuite.flops tf_graph: the traced tf.function graph, each op mapped to the aten "
    "formula of perfsuite.flops"
)
# No arithmetic and no data movement of their own (graph plumbing, shape arithmetic, reads).
ZERO_COST = frozenset(
    words("""Placeholder Const ReadVariableOp Identity IdentityN NoOp Reshape Shape ShapeN
    ExpandDims Squeeze StopGradient BroadcastGradientArgs Size Rank VarHandleOp""")
)
# TensorFlow op type -> the aten op whose formula applies, for ops whose arguments line up.
POINTWISE = {
    "AddV2": "aten::add", "Add": "aten::add", "Sub": "aten::sub", "Mul": "aten::mul",
    "RealDiv": "aten::div", "Div": "aten::div", "Neg": "aten::neg", "Square": "aten::square",
    "Sqrt": "aten::sqrt", "Rsqrt": "aten::rsqrt", "Exp": "aten::exp", "Log": "aten::log",
    "Maximum": "aten::maximum", "Minimum": "aten::minimum", "Relu": "aten::relu",
    "IsFinite": "aten::ne", "GreaterEqual": "aten::ge", "Greater": "aten::gt",
    "Less": "aten::lt", "Equal": "aten::eq", "SelectV2": "aten::where", "Select": "aten::where",
    "Cast": "aten::_to_copy", "Tile": "aten::repeat", "BroadcastTo": "aten::repeat",
    "OneHot": "aten::_to_copy", "ZerosLike": "aten::zeros_like", "OnesLike": "aten::ones_like",
    "Fill": "aten::full",
}  # fmt: skip
REDUCE = {"Mean": "aten::mean", "Sum": "aten::sum", "Max": "aten::amax", "All": "aten::all"}


def _meta(t: Any) -> TensorMeta:
    dims = t.shape.as_list() if t.shape.rank is not None else []
    return TensorMeta(tuple(d if d is not None else 1 for d in dims), t.dtype.name)


def _nchw(m: TensorMeta, fmt: str) -> TensorMeta:
    if fmt == "NHWC" and m.ndim == 4:
        n, h, w, c = m.shape
        return TensorMeta((n, c, h, w), m.dtype)
    return m


def _oihw(m: TensorMeta) -> TensorMeta:
    kh, kw, ci, co = m.shape
    return TensorMeta((co, ci, kh, kw), m.dtype)


def _attr(op: Any, name: str, default: Any = None) -> Any:
    try:
        value = op.get_attr(name)
    except (ValueError, AttributeError):
        return default
    return value.decode() if isinstance(value, bytes) else value


def _spatial(values: list[int], fmt: str) -> list[int]:
    return list(values[2:4] if fmt == "NCHW" else values[1:3])


def _conv_geometry(op: Any, x: TensorMeta, w: TensorMeta, out: TensorMeta) -> list[Any]:
    """stride, padding, dilation, transposed, output_padding, groups of aten::convolution
    (NCHW metas). padding is what TensorFlow pads before each dim; SAME may pad one pixel more
    after, which PyTorch's symmetric argument cannot say, so the formulas take the output size
    from the real output (forward) or grad_output (backward) shape, never from padding.
    groups: a filter with fewer input channels than x is a grouped convolution."""
    fmt = _attr(op, "data_format", "NHWC")
    stride = _spatial(list(_attr(op, "strides", [1, 1, 1, 1])), fmt)
    dil = _spatial(list(_attr(op, "dilations", [1, 1, 1, 1])), fmt)
    pad = []
    for i in range(2):
        k, n, o = w.shape[2 + i], x.shape[2 + i], out.shape[2 + i]
        pad.append(max(0, (o - 1) * stride[i] + (k - 1) * dil[i] + 1 - n) // 2)
    groups = max(1, x.shape[1] // w.shape[1]) if w.shape[1] else 1
    return [stride, pad, dil, False, [0, 0], groups]


def _conv2d(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    fmt = _attr(op, "data_format", "NHWC")
    x, w, out = _nchw(ins[0], fmt), _oihw(ins[1]), _nchw(outs[0], fmt)
    return OpCall("aten::convolution", [x, w, None, *_conv_geometry(op, x, w, out)], [out])


def _conv_backprop(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    """Conv2DBackpropInput(input_sizes, filter, grad) / Conv2DBackpropFilter(input,
    filter_sizes, grad): one gradient of aten::convolution_backward, chosen by output_mask."""
    fmt = _attr(op, "data_format", "NHWC")
    grad = _nchw(ins[2], fmt)
    if op.type == "Conv2DBackpropInput":
        x, w, mask = _nchw(outs[0], fmt), _oihw(ins[1]), [True, False, False]
    else:
        x, w, mask = _nchw(ins[0], fmt), _oihw(outs[0]), [False, True, False]
    geo = _conv_geometry(op, x, w, grad)
    return OpCall("aten::convolution_backward", [grad, x, w, None, *geo, mask], None)


def _batch_norm(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    fmt = _attr(op, "data_format", "NHWC")
    train = bool(_attr(op, "is_training", True))
    x = _nchw(ins[0], fmt)
    return OpCall("aten::native_batch_norm", [x, ins[1], ins[2], None, None, train], None)


def _batch_norm_grad(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    fmt = _attr(op, "data_format", "NHWC")
    train = bool(_attr(op, "is_training", True))
    g, x = _nchw(ins[0], fmt), _nchw(ins[1], fmt)
    return OpCall("aten::native_batch_norm_backward", [g, x, ins[2], None, None, None, None,
                  train], None)  # fmt: skip


def _max_pool(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    """The window count comes from the real output (padding 0 here: SAME is asymmetric)."""
    fmt = _attr(op, "data_format", "NHWC")
    k = _spatial(list(_attr(op, "ksize")), fmt)
    s = _spatial(list(_attr(op, "strides")), fmt)
    return OpCall("aten::max_pool2d", [_nchw(ins[0], fmt), k, s, 0, 1, False],
                  [_nchw(outs[0], fmt)])  # fmt: skip


def _max_pool_grad(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    fmt = _attr(op, "data_format", "NHWC")
    return OpCall("aten::max_pool2d_with_indices_backward",
                  [_nchw(ins[2], fmt), _nchw(ins[0], fmt)], [_nchw(outs[0], fmt)])  # fmt: skip


def max_pool_grad_cost(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> Cost:
    """MaxPoolGrad(orig_input, orig_output, grad): FLOPs of aten's max-pool backward; bytes
    differ from aten's, which reads saved argmax indices: TensorFlow saves none, so its kernel
    reads the forward input and output (to find each window's maximum again) and grad, and
    writes grad_input."""
    flops = estimate(_max_pool_grad(op, ins, outs)).flops
    return Cost(flops, sum(t.nbytes for t in ins) + sum(t.nbytes for t in outs))


def _matmul(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    a, b = ins[0], ins[1]
    if _attr(op, "transpose_a", False):
        a = TensorMeta(a.shape[::-1], a.dtype)
    if _attr(op, "transpose_b", False):
        b = TensorMeta(b.shape[::-1], b.dtype)
    return OpCall("aten::mm", [a, b], outs)


def _bias_grad(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    return OpCall("aten::sum", [ins[0], [0], False], outs)


def _relu_grad(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    return OpCall("aten::threshold_backward", [ins[0], ins[1], 0], outs)


def _assign(op: Any, ins: list[TensorMeta], outs: list[TensorMeta]) -> OpCall:
    """var -= value / var += value / var = value: the in-place aten op on the value's shape
    (assigning reads the value and writes the variable: aten::copy_ never reads its self)."""
    name = {"AssignSubVariableOp": "aten::sub_", "AssignAddVariableOp": "aten::add_"}
    value = ins[0]  # the resource handle is not among `ins`
    if op.type in name:
        return OpCall(name[op.type], [value, value], [value])
    return OpCall("aten::copy_", [value, value], [value])


MAPPERS: dict[str, Callable[[Any, list[TensorMeta], list[TensorMeta]], OpCall]] = {
    "Conv2D": _conv2d,
    "Conv2DBackpropInput": _conv_backprop,
    "Conv2DBackpropFilter": _conv_backprop,
    "FusedBatchNormV3": _batch_norm,
    "FusedBatchNormGradV3": _batch_norm_grad,
    "MaxPool": _max_pool,
    "MatMul": _matmul,
    "BiasAdd": lambda op, i, o: OpCall("aten::add", [i[0], i[1]], o),
    "BiasAddGrad": _bias_grad,
    "ReluGrad": _relu_grad,
    "AssignSubVariableOp": _assign,
    "AssignAddVariableOp": _assign,
    "AssignVariableOp": _assign,
}


def softmax_xent_cost(ins: list[TensorMeta], outs: list[TensorMeta]) -> Cost:
    """SoftmaxCrossEntropyWithLogits(logits, labels) -> (loss, backprop), one fused op with no
    aten twin: log-softmax (aten::_log_softmax), labels * log-probabilities (mul), the row sum
    (sum) and backprop = softmax - labels (sub), each costed by its aten formula."""
    logits, labels = ins
    parts = [
        OpCall("aten::_log_softmax", [logits, 1, False], [logits]),
        OpCall("aten::mul", [labels, logits], [logits]),
        OpCall("aten::sum", [logits, [1], False], [outs[0]]),
        OpCall("aten::sub", [logits, labels], [logits]),
    ]
    flops = sum(estimate(c).flops for c in parts)
    return Cost(flops, sum(t.nbytes for t in ins) + sum(t.nbytes for t in outs))


def add_n_cost(ins: list[TensorMeta], outs: list[TensorMeta]) -> Cost:
    """AddN(x1..xn): the gradient sum where a tensor feeds two ops (a residual branch); n-1
    aten::add of the output's shape, reading the n inputs once and writing the output once."""
    add = estimate(OpCall("aten::add", [ins[0], ins[1]], outs)).flops
    return Cost(add * (len(ins) - 1), sum(t.nbytes for t in ins) + sum(t.nbytes for t in outs))


def op_cost(op: Any) -> tuple[str, str, Cost] | None:
    """(family, aten name or "", cost) of one graph op; None when it has no mapping."""
    ins = [_meta(t) for t in op.inputs if t.dtype.name != "resource"]
    outs = [_meta(t) for t in op.outputs]
    if op.type in ZERO_COST:
        return "memory", "", Cost(0, 0)
    if op.type == "SoftmaxCrossEntropyWithLogits":
        return "softmax_loss", "", softmax_xent_cost(ins, outs)
    if op.type == "AddN" and len(ins) >= 2:
        return family_of("aten::add"), "aten::add", add_n_cost(ins, outs)
    if op.type == "MaxPoolGrad" and len(ins) == 3 and outs:
        name = "aten::max_pool2d_with_indices_backward"
        return family_of(name), name, max_pool_grad_cost(op, ins, outs)
    call: OpCall | None = None
    if op.type in MAPPERS:
        call = MAPPERS[op.type](op, ins, outs)
    elif op.type in POINTWISE:
        call = OpCall(POINTWISE[op.type], ins, outs)
    elif op.type in REDUCE and ins:
        axes = _const_value(op.inputs[1])
        keep = bool(_attr(op, "keep_dims", False))
        call = OpCall(REDUCE[op.type], [ins[0], axes, keep], outs)
    if call is None:
        return ("memory", "", Cost(0, 0)) if _shape_arithmetic(ins, outs) else None
    est = estimate(call)
    if not est.known:
        return None
    return family_of(call.name), call.name, Cost(est.flops, est.bytes)


def _shape_arithmetic(ins: list[TensorMeta], outs: list[TensorMeta]) -> bool:
    """Integer scalars and vectors only (ConcatV2/Pack/Slice of shapes inside fused ops):
    bookkeeping, not work."""
    metas = ins + outs
    return bool(metas) and all(m.dtype in ("int32", "int64") and m.ndim <= 1 for m in metas)


def _const_value(t: Any) -> Any:
    """The value of a constant input (reduction axes), else None (all axes)."""
    try:
        from tensorflow.python.framework import tensor_util

        value = tensor_util.constant_value(t)
    except (ImportError, TypeError, ValueError):
        return None
    return None if value is None else [int(v) for v in value.reshape(-1)]


def live_ops(graph: Any, outputs: list[Any]) -> list[Any]:
    """The ops TensorFlow runs: those the outputs or a stateful op (variable updates) need,
    through data and control inputs. Others are pruned by TensorFlow before execution."""
    roots = [t.op for t in outputs] + [op for op in graph.get_operations() if op._is_stateful]
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [op for op in graph.get_operations() if op.name in seen]


def phase_of(op_name: str) -> str:
    """forward / backward / optimizer from the name scopes of the step (digits/tensorflow.py)."""
    if "gradient_tape/" in op_name or op_name.startswith("backward/"):
        return "backward"
    if op_name.startswith("optimizer/") or "/optimizer/" in op_name:
        return "optimizer"
    return "forward"


def count_graph(graph: Any, outputs: list[Any]) -> CountResult:
    """Per (TF op type, phase) rows of the live ops of `graph`."""
    rows: dict[tuple[str, str], OpRow] = {}
    unknown: dict[str, int] = {}
    for op in live_ops(graph, outputs):
        got = op_cost(op)
        if got is None:
            unknown[op.type] = unknown.get(op.type, 0) + 1
            continue
        family, _, cost = got
        if op.type in ZERO_COST:
            continue
        key = (op.type, phase_of(op.name))
        row = rows.get(key) or rows.setdefault(key, OpRow(op.type, family, key[1]))
        row.calls += 1
        row.flops += cost.flops
        row.bytes += cost.bytes
    return CountResult(
        list(rows.values()),
        [{"op": k, "calls": v} for k, v in sorted(unknown.items())],
    )


def tf_profiler_flops(graph: Any) -> dict[str, Any]:
    """TensorFlow's own count: tf.compat.v1.profiler float_operation over the graph, per op
    type. It counts only op types with a registered `flops` statistic (Conv2D and its
    backprops, MatMul, BiasAdd, element-wise arithmetic, reductions...) and counts every op in
    the graph, dead ones included."""
    import tensorflow as tf

    opts = tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
    opts["output"] = "none"
    prof = tf.compat.v1.profiler.profile(graph=graph, cmd="op", options=opts)
    per_type: dict[str, float] = {}
    stack = list(prof.children)  # "op" view: op types nest, each node holding its own count
    while stack:
        node = stack.pop()
        if node.float_ops:
            per_type[node.name] = per_type.get(node.name, 0.0) + float(node.float_ops)
        stack.extend(node.children)
    return {"total": float(prof.total_float_ops), "per_op_type": per_type}


def count_step(state: Any, batch: Any) -> dict[str, Any]:
    """The record's `work` section for a TensorFlow step: the traced graph of the step for this
    batch's shapes, read (not run), plus TensorFlow's own count as `cross_check`."""
    import tensorflow as tf

    lr = tf.constant(state.recipe.lr, tf.float32)
    fn = state.step_fn.get_concrete_function(batch.inputs[0], batch.target, lr)
    result = count_graph(fn.graph, fn.outputs)
    work = result.to_work_section(SOURCE)
    work["batch_size"] = batch.size
    work["dtype"] = batch.inputs[0].dtype.name
    if state.precision:
        work["autocast"] = {"bf16": "bfloat16", "fp16": "float16"}[state.precision]
    theirs = tf_profiler_flops(fn.graph)
    mine = _per_type(result)
    work["cross_check"] = {
        "tool": "tf.compat.v1.profiler.profile(graph, cmd='op', float_operation())",
        "flops_per_step": theirs["total"],
        "per_op_type": [
            {"op": op, "tensorflow": flops, "perfsuite": mine.get(op)}
            for op, flops in sorted(theirs["per_op_type"].items(), key=lambda kv: -kv[1])
        ],
        "note": "TensorFlow counts only op types with a registered flops statistic "
        "(no batch norm, pooling, ReLU or fused softmax cross-entropy) and counts dead ops "
        "that TensorFlow prunes before running (e.g. the first convolution's input gradient)",
    }
    return work


def _per_type(result: CountResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in result.per_op:
        out[r.op] = out.get(r.op, 0.0) + r.flops
    return out
