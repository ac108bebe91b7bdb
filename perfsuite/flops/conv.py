"""Convolution: forward, input-gradient and weight-gradient (N-d, groups, dilation, transposed).

MACs of a forward convolution = N * Cout * prod(out_spatial) * (Cin / groups) * prod(kernel);
FLOPs = 2 * MACs, plus one add per output element when there is a bias. A transposed
convolution does N * Cin * prod(in_spatial) * (Cout / groups) * prod(kernel) MACs. The
input-gradient and the weight-gradient each cost the forward MACs again; the bias gradient is
one add per grad_output element.
"""

from __future__ import annotations

import math

from perfsuite.flops.call import Cost, OpCall, TensorMeta, as_list
from perfsuite.flops.registry import register


def conv_out_spatial(
    in_spatial: list[int],
    kernel: list[int],
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    transposed: bool = False,
    output_padding: list[int] | None = None,
) -> list[int]:
    """Output spatial size, PyTorch's rule (floor for direct, exact for transposed)."""
    out = []
    for i, n in enumerate(in_spatial):
        k, s, p, d = kernel[i], stride[i], padding[i], dilation[i]
        if transposed:
            op = output_padding[i] if output_padding else 0
            out.append((n - 1) * s - 2 * p + d * (k - 1) + op + 1)
        else:
            out.append((n + 2 * p - d * (k - 1) - 1) // s + 1)
    return out


def conv_macs(
    x: TensorMeta, w: TensorMeta, out_spatial: list[int], transposed: bool, groups: int
) -> int:
    """Multiply-accumulates of one forward convolution."""
    n = x.shape[0]
    kernel = math.prod(w.shape[2:])
    if transposed:  # weight: [Cin, Cout/groups, *k]
        return n * x.shape[1] * math.prod(x.shape[2:]) * w.shape[1] * kernel
    return n * w.shape[0] * math.prod(out_spatial) * (x.shape[1] // groups) * kernel


def _geometry(call: OpCall, x: TensorMeta, w: TensorMeta, first: int) -> tuple:
    """(out_spatial, transposed, groups, cout) from the stride..groups args starting at `first`.

    Both convolution and convolution_backward list: stride, padding, dilation, transposed,
    output_padding, groups (backward has bias_sizes before them).
    """
    nd = x.ndim - 2
    stride = as_list(call.arg(first, 1), nd)
    padding = as_list(call.arg(first + 1, 0), nd)
    dilation = as_list(call.arg(first + 2, 1), nd)
    transposed = bool(call.arg(first + 3, False))
    output_padding = as_list(call.arg(first + 4, 0), nd)
    groups = int(call.arg(first + 5, 1))
    kernel = list(w.shape[2:])
    out_sp = conv_out_spatial(
        list(x.shape[2:]), kernel, stride, padding, dilation, transposed, output_padding
    )
    cout = w.shape[1] * groups if transposed else w.shape[0]
    return out_sp, transposed, groups, cout


@register("aten::convolution", "aten::_convolution", family="convolution")
def convolution(call: OpCall) -> Cost:
    """convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
    groups): 2 * MACs + N*Cout*prod(out) when bias is given. The output size is the real
    output's when known (TensorFlow's asymmetric SAME padding has no PyTorch padding
    argument), else PyTorch's rule on the arguments (traces)."""
    x, w, bias = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None or w is None:
        return Cost(0, call.io_bytes())
    out_sp, transposed, groups, cout = _geometry(call, x, w, 3)
    if call.outputs and call.outputs[0].ndim == x.ndim:
        out_sp = list(call.outputs[0].shape[2:])
    out = TensorMeta((x.shape[0], cout, *out_sp), x.dtype)
    flops = 2 * conv_macs(x, w, out_sp, transposed, groups)
    if bias is not None:
        flops += out.numel
    return Cost(flops, call.io_bytes([out]))


def _conv_nd(call: OpCall, transposed: bool) -> Cost:
    """conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups) (composite ops);
    conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation)."""
    if transposed:
        a = call.args
        args = [*a[:3], a[3] if len(a) > 3 else 1, a[4] if len(a) > 4 else 0,
                a[7] if len(a) > 7 else 1, True, a[5] if len(a) > 5 else 0,
                a[6] if len(a) > 6 else 1]  # fmt: skip
    else:
        a = call.args
        args = [*a[:6], False, 0, a[6] if len(a) > 6 else 1]
    return convolution(OpCall("aten::convolution", args, call.outputs))


@register("aten::conv1d", "aten::conv2d", "aten::conv3d", family="convolution", composite=True)
def conv_nd(call: OpCall) -> Cost:
    return _conv_nd(call, transposed=False)


@register(
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
    family="convolution", composite=True,
)  # fmt: skip
def conv_transpose_nd(call: OpCall) -> Cost:
    return _conv_nd(call, transposed=True)


@register("aten::convolution_backward", family="convolution")
def convolution_backward(call: OpCall) -> Cost:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask=[grad_input, grad_weight, grad_bias]):
    2 * MACs for each of grad_input and grad_weight requested, plus numel(grad_output) adds
    for grad_bias. Bytes: inputs read once, requested gradients written once."""
    g, x, w = call.tensor(0), call.tensor(1), call.tensor(2)
    if g is None or x is None or w is None:
        return Cost(0, call.io_bytes())
    out_sp = list(g.shape[2:])
    transposed = bool(call.arg(7, False))
    groups = int(call.arg(9, 1))
    mask = [bool(m) for m in call.arg(10, [True, True, True])]
    macs = conv_macs(x, w, out_sp, transposed, groups)
    flops = 2 * macs * (int(mask[0]) + int(mask[1])) + (g.numel if mask[2] else 0)
    outs = []
    if mask[0]:
        outs.append(x)
    if mask[1]:
        outs.append(w)
    if mask[2]:
        outs.append(TensorMeta((g.shape[1],), g.dtype))
    # Inputs the requested gradients do not need are not read: grad_input needs the weight,
    # grad_weight needs the input.
    read = g.nbytes + (w.nbytes if mask[0] else 0) + (x.nbytes if mask[1] else 0)
    written = sum(t.nbytes for t in outs) if call.outputs is None else call.output_bytes()
    return Cost(flops, read + written)
