"""Copies, fills, concatenation and indexing: 0 FLOP, but they move bytes.

Copy-like ops read their input and write their output (in + out bytes); fills and factory
functions (zeros, ones, full, random draws) only write their output. `copy_` reads only its
source (its destination is overwritten, never read). Partial in-place writes (`index_put_`,
`scatter_`, `index_add_`, ...) touch only the indexed elements of `self`: they read the index
and the values and write (accumulating ones also read) those elements, when the shapes say how
many; a boolean-mask index (`index_put_` with a mask, `masked_scatter_`) touches a number of
elements that only the mask's values know, so those charge a full read and write of `self`.
Views and metadata ops are in registry.ZERO_COST_OPS instead: no FLOPs and no bytes.
"""

from __future__ import annotations

import math

from perfsuite.flops.call import Cost, OpCall, TensorMeta, broadcast_shape, words
from perfsuite.flops.registry import register

COPY_OPS = words("""clone _to_copy to contiguous cat stack index_select gather
index scatter scatter_add index_put constant_pad_nd reflection_pad2d replication_pad2d roll
flip repeat masked_select _unsafe_index nonzero tril triu tril_ triu_ masked_scatter_
upsample_nearest2d upsample_nearest2d_backward slice_backward select_backward
index_select_backward unfold_backward""")

FILL_OPS = words("""zero_ fill_ zeros ones full zeros_like ones_like full_like new_zeros new_ones
new_full scalar_tensor arange randn rand randint randperm randn_like rand_like randint_like
bernoulli bernoulli_ normal_ uniform_ random_ exponential_ empty_permuted""")

MASK_DTYPES = ("bool", "uint8", "unsigned char")  # index tensors that select by value


@register(*(f"aten::{n}" for n in COPY_OPS), family="memory")
def copy_like(call: OpCall) -> Cost:
    """0 FLOP; every input read and every output written once. When the output is unknown
    (traces), it is assumed as large as the first input."""
    first = next(call.input_tensors(), None)
    return Cost(0, call.io_bytes([first] if first is not None else []))


def _moved(call: OpCall, src: int, dst: int) -> Cost:
    """0 FLOP; argument `src` read, argument `dst` written (its old values are not read)."""
    source, target = call.tensor(src), call.tensor(dst)
    if source is None or target is None:
        return copy_like(call)
    return Cost(0, source.nbytes + call.output_bytes([target]))


@register("aten::copy_", family="memory")
def copy_(call: OpCall) -> Cost:
    """copy_(self, src, non_blocking): src read, self written."""
    return _moved(call, src=1, dst=0)


@register("aten::_copy_from", family="memory")
def copy_from(call: OpCall) -> Cost:
    """_copy_from(self, dst, non_blocking): self read, dst written."""
    return _moved(call, src=0, dst=1)


def _touched_bytes(self_: TensorMeta, touched: int, accumulate: bool) -> int:
    """The indexed elements of self written, and read first when the op accumulates (repeated
    indices touch an element once more, not another element: at most numel(self))."""
    return min(touched, self_.numel) * self_.itemsize * (2 if accumulate else 1)


@register("aten::index_put_", "aten::_index_put_impl_", family="memory")
def index_put_(call: OpCall) -> Cost:
    """(self, indices, values, accumulate, [unsafe]): integer indices select
    prod(broadcast(index shapes)) * (the sizes of the dims they leave out) elements of self:
    indices and values read, those elements written (read too when accumulating)."""
    x, values, indices = call.tensor(0), call.tensor(2), call.arg(1)
    if x is None or values is None or not isinstance(indices, (list, tuple)) or not indices:
        return copy_like(call)  # traces do not record the index list
    index = [t for t in indices if isinstance(t, TensorMeta)]
    if not index or len(indices) > x.ndim or any(t.dtype.lower() in MASK_DTYPES for t in index):
        return copy_like(call)
    full = [x.shape[d] for d, t in enumerate(indices) if not isinstance(t, TensorMeta)]
    touched = math.prod(broadcast_shape(*(t.shape for t in index)))
    touched *= math.prod(full) * math.prod(x.shape[len(indices) :])
    read = sum(t.nbytes for t in index) + values.nbytes
    return Cost(0, read + _touched_bytes(x, touched, bool(call.arg(3, False))))


@register("aten::scatter_", "aten::scatter_add_", family="memory")
def scatter_(call: OpCall) -> Cost:
    """(self, dim, index, src or value, [reduce]): numel(index) elements of self written (and
    read when adding or reducing), index read, and src at those numel(index) positions."""
    x, index = call.tensor(0), call.tensor(2)
    if x is None or index is None:
        return copy_like(call)
    src = call.tensor(3)
    touched = index.numel
    accumulate = call.name.endswith("scatter_add_") or isinstance(call.arg(4), str)
    read = index.nbytes + (touched * src.itemsize if src is not None else 0)
    return Cost(0, read + _touched_bytes(x, touched, accumulate))


@register("aten::index_add_", "aten::index_copy_", family="memory")
def index_add_(call: OpCall) -> Cost:
    """(self, dim, index, source, ...): numel(source) elements of self written (index_add_
    reads them too), index and source read."""
    x, index, source = call.tensor(0), call.tensor(2), call.tensor(3)
    if x is None or index is None or source is None:
        return copy_like(call)
    accumulate = call.name.endswith("index_add_")
    read = index.nbytes + source.nbytes
    return Cost(0, read + _touched_bytes(x, source.numel, accumulate))


@register(*(f"aten::{n}" for n in FILL_OPS), family="memory")
def fill_like(call: OpCall) -> Cost:
    """0 FLOP; only the output is written (an in-place fill writes its self tensor)."""
    if call.outputs is not None:
        return Cost(0, call.output_bytes())
    first = next(call.input_tensors(), None)
    return Cost(0, first.nbytes if first is not None else 0)
