"""Copies, fills, concatenation and indexing: 0 FLOP, but they move bytes.

Copy-like ops read their input and write their output (in + out bytes); fills and factory
functions (zeros, ones, full, random draws) only write their output. Views and metadata ops
are in registry.ZERO_COST_OPS instead: no FLOPs and no bytes.
"""

from __future__ import annotations

from perfsuite.flops.call import Cost, OpCall, words
from perfsuite.flops.registry import register

COPY_OPS = words("""copy_ _copy_from clone _to_copy to contiguous cat stack index_select gather
index scatter scatter_ scatter_add scatter_add_ index_put_ index_put index_add_ index_copy_
constant_pad_nd reflection_pad2d replication_pad2d roll flip repeat masked_select
_unsafe_index nonzero tril triu tril_ triu_ _index_put_impl_ masked_scatter_ upsample_nearest2d
upsample_nearest2d_backward slice_backward select_backward index_select_backward
unfold_backward""")

FILL_OPS = words("""zero_ fill_ zeros ones full zeros_like ones_like full_like new_zeros new_ones
new_full scalar_tensor arange randn rand randint randperm randn_like rand_like randint_like
bernoulli bernoulli_ normal_ uniform_ random_ exponential_ empty_permuted""")


@register(*(f"aten::{n}" for n in COPY_OPS), family="memory")
def copy_like(call: OpCall) -> Cost:
    """0 FLOP; every input read and every output written once. When the output is unknown
    (traces), it is assumed as large as the first input."""
    first = next(call.input_tensors(), None)
    return Cost(0, call.io_bytes([first] if first is not None else []))


@register(*(f"aten::{n}" for n in FILL_OPS), family="memory")
def fill_like(call: OpCall) -> Cost:
    """0 FLOP; only the output is written (an in-place fill writes its self tensor)."""
    if call.outputs is not None:
        return Cost(0, call.output_bytes())
    first = next(call.input_tensors(), None)
    return Cost(0, first.nbytes if first is not None else 0)
