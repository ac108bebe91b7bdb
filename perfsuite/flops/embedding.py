"""Embedding lookup and its dense backward.

Forward is a gather: 0 FLOP; bytes are the indices plus the gathered rows read and written
(numel(indices) * D each), not the whole table. Dense backward scatter-adds every grad_output
element into the gradient table: numel(grad_output) FLOPs; bytes: grad_output and indices read,
the full [num_weights, D] gradient written.
"""

from __future__ import annotations

from perfsuite.flops.call import Cost, OpCall, TensorMeta
from perfsuite.flops.registry import register


@register("aten::embedding", family="embedding")
def embedding(call: OpCall) -> Cost:
    """(weight[V, D], indices, padding_idx, scale_grad_by_freq, sparse): 0 FLOP."""
    w, idx = call.tensor(0), call.tensor(1)
    if w is None or idx is None:
        return Cost(0, call.io_bytes())
    rows = idx.numel * w.shape[-1] * w.itemsize
    return Cost(0, idx.nbytes + 2 * rows)


@register("aten::embedding_dense_backward", "aten::embedding_backward", family="embedding")
def embedding_dense_backward(call: OpCall) -> Cost:
    """(grad_output[..., D], indices, num_weights, padding_idx, scale_grad_by_freq):
    numel(grad_output) adds."""
    g, idx = call.tensor(0), call.tensor(1)
    if g is None or idx is None:
        return Cost(0, call.io_bytes())
    table = TensorMeta((int(call.arg(2, 0)), g.shape[-1]), g.dtype)
    return Cost(g.numel, g.nbytes + idx.nbytes + table.nbytes)
