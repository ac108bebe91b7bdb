"""Max, average and adaptive pooling, forward and backward (1-d, 2-d, 3-d).

Forward: one FLOP per element of each window (the compares of max, the adds and final divide
of average): numel(out) * prod(kernel); adaptive pooling sums its (possibly overlapping)
window sizes exactly. Backward: max pooling scatters one add per grad_output element; average
pooling spreads each grad_output element over its window: numel(grad_out) * prod(kernel).
Bytes: backward kernels need only the shape of the forward input, not its values: max pooling
reads grad_output and the saved indices, average pooling grad_output; both write grad_input.
"""

from __future__ import annotations

import math

from perfsuite.flops.call import Cost, OpCall, TensorMeta, as_list
from perfsuite.flops.registry import register


def pool_out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size, including its ceil_mode rule."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _window(call: OpCall, x: TensorMeta, nd: int) -> tuple[list[int], list[int]]:
    """(kernel, output spatial) from (self, kernel_size, stride, padding, dilation, ceil)."""
    k = as_list(call.arg(1, 1), nd)
    stride = call.arg(2, [])
    s = as_list(stride, nd) if stride not in ([], ()) else k
    p = as_list(call.arg(3, 0), nd)
    d = as_list(call.arg(4, 1), nd)
    ceil_mode = bool(call.arg(5, False))
    spatial = list(x.shape[-nd:])
    out = [pool_out_size(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd)]
    return k, out


def _avg_window(call: OpCall, x: TensorMeta, nd: int) -> tuple[list[int], list[int]]:
    """avg_pool args: (self, kernel_size, stride, padding, ceil_mode, ...) (no dilation)."""
    k = as_list(call.arg(1, 1), nd)
    stride = call.arg(2, [])
    s = as_list(stride, nd) if stride not in ([], ()) else k
    p = as_list(call.arg(3, 0), nd)
    ceil_mode = bool(call.arg(4, False))
    spatial = list(x.shape[-nd:])
    return k, [pool_out_size(spatial[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(nd)]


def _nd(name: str) -> int:
    return 3 if "3d" in name else (1 if "1d" in name else 2)


@register(
    "aten::max_pool1d_with_indices", "aten::max_pool2d_with_indices",
    "aten::max_pool3d_with_indices", "aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d",
    "aten::mkldnn_max_pool2d", family="pooling",
)  # fmt: skip
def max_pool(call: OpCall) -> Cost:
    """(self, kernel_size, stride, padding, dilation, ceil_mode): numel(out) * prod(kernel).
    Bytes include the int64 indices of the *_with_indices variants."""
    return _windowed(call, _window, with_indices=call.name.endswith("with_indices"))


def _windowed(call: OpCall, window, with_indices: bool) -> Cost:
    """numel(out) * prod(kernel) for a pooling call, `window` reading its geometry args. The
    real output, when known, gives the output size (TensorFlow's SAME padding has no
    symmetric PyTorch padding that reproduces it)."""
    x = call.tensor(0)
    if x is None:
        return Cost(0, call.io_bytes())
    nd = _nd(call.name)
    k, out_sp = window(call, x, nd)
    out = TensorMeta((*x.shape[:-nd], *out_sp), x.dtype)
    if call.outputs and call.outputs[0].ndim == x.ndim:
        out = call.outputs[0]
    outs = [out] + ([TensorMeta(out.shape, "int64")] if with_indices else [])
    return Cost(out.numel * math.prod(k), call.io_bytes(outs))


@register(
    "aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
    "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward",
    family="pooling",
)  # fmt: skip
def max_pool_backward(call: OpCall) -> Cost:
    """(grad_output, self, ..., indices): one add per grad_output element. Bytes: grad_output
    and the indices (int64, grad_output's shape when not given) read, grad_input written;
    self only gives grad_input's shape."""
    g, x = call.tensor(0), call.tensor(1)
    if g is None or x is None:
        return Cost(0, call.io_bytes())
    idx = call.tensor(2 if "adaptive" in call.name else 7) or TensorMeta(g.shape, "int64")
    return Cost(g.numel, g.nbytes + idx.nbytes + call.output_bytes([x]))


@register("aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d", family="pooling")
def avg_pool(call: OpCall) -> Cost:
    """(self, kernel_size, stride, padding, ceil_mode, ...): numel(out) * prod(kernel)."""
    return _windowed(call, _avg_window, with_indices=False)


@register("aten::avg_pool2d_backward", "aten::avg_pool3d_backward", family="pooling")
def avg_pool_backward(call: OpCall) -> Cost:
    """(grad_output, self, kernel_size, ...): numel(grad_output) * prod(kernel). Bytes:
    grad_output read, grad_input written (self gives only its shape)."""
    g, x = call.tensor(0), call.tensor(1)
    if g is None or x is None:
        return Cost(0, call.io_bytes())
    k = as_list(call.arg(2, 1), _nd(call.name))
    return Cost(g.numel * math.prod(k), g.nbytes + call.output_bytes([x]))


def adaptive_window_elements(in_size: int, out_size: int) -> int:
    """Sum of PyTorch's adaptive window lengths along one dimension."""
    total = 0
    for i in range(out_size):
        start = (i * in_size) // out_size
        end = -(-((i + 1) * in_size) // out_size)
        total += end - start
    return total


def _adaptive_flops(x: TensorMeta, out_sp: list[int]) -> int:
    nd = len(out_sp)
    lead = math.prod(x.shape[:-nd])
    return lead * math.prod(
        adaptive_window_elements(x.shape[-nd + i], out_sp[i]) for i in range(nd)
    )


@register(
    "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d", "aten::adaptive_avg_pool1d",
    "aten::adaptive_avg_pool2d", "aten::adaptive_avg_pool3d", "aten::adaptive_max_pool2d",
    "aten::adaptive_max_pool3d", family="pooling",
)  # fmt: skip
def adaptive_pool(call: OpCall) -> Cost:
    """(self, output_size): one FLOP per element of every window (exact window sizes)."""
    x = call.tensor(0)
    if x is None:
        return Cost(0, call.io_bytes())
    nd = _nd(call.name)
    raw = call.arg(1, 1)
    vals = list(raw) if isinstance(raw, (list, tuple)) else [raw]
    vals = vals * nd if len(vals) == 1 else vals
    out_sp = [x.shape[-nd + i] if v is None else int(v) for i, v in enumerate(vals)]
    out = TensorMeta((*x.shape[:-nd], *out_sp), x.dtype)
    outs = [out] + ([TensorMeta(out.shape, "int64")] if "max" in call.name else [])
    return Cost(_adaptive_flops(x, out_sp), call.io_bytes(outs))


@register("aten::_adaptive_avg_pool2d_backward", "aten::_adaptive_avg_pool3d_backward",
          family="pooling")  # fmt: skip
def adaptive_avg_pool_backward(call: OpCall) -> Cost:
    """(grad_output, self): the forward's window sum again (each grad spread over its window).
    Bytes: grad_output read, grad_input written (self gives only its shape)."""
    g, x = call.tensor(0), call.tensor(1)
    if g is None or x is None:
        return Cost(0, call.io_bytes())
    nd = _nd(call.name)
    return Cost(_adaptive_flops(x, list(g.shape[-nd:])), g.nbytes + call.output_bytes([x]))
