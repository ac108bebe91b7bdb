"""PyTorch operator ranges in NVTX marker text, as `torch.autograd.profiler.emit_nvtx()` writes
them.

PyTorch builds the marker in torch/csrc/profiler/util.cpp (`getNvtxStr`): the op name, then
`, seq = N` when the op has an autograd sequence number, `, op_id = N`, `, sizes = [[a, b],
[], ...]` when shapes are recorded (one list per input; an input that is not a tensor is `[]`)
and `, input_op_ids = [(id,output_nr), ...]`. For example
`aten::addmm, seq = 12, op_id = 3, sizes = [[256], [64, 128], [128, 256], [], []]`.
The marker carries no dtypes and no scalar values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKER = re.compile(
    r"(?P<name>[^,\[\]]+?)"
    r"(?:, seq = (?P<seq>-?\d+))?"
    r"(?:, op_id = (?P<op_id>\d+))?"
    r"(?:, sizes = (?P<sizes>\[[\[\]\d, ]*\]))?"
    r"(?:, input_op_ids = \[[()\d, ]*\])?"
)
_ONE_SIZE = re.compile(r"\[([\d, ]*)\]")
MAX_MARKER = 8192  # longer text is not parsed as an op marker


@dataclass(frozen=True)
class OpMarker:
    """One operator range: its name, autograd sequence number (-1: none), op id (-1: none) and
    input sizes (None: shapes not recorded)."""

    name: str
    seq: int
    op_id: int
    sizes: tuple[tuple[int, ...], ...] | None


def _sizes(text: str) -> tuple[tuple[int, ...], ...] | None:
    """`[[64, 128], [], [3]]` -> ((64, 128), (), (3,)); None when it is not that form."""
    inner = text[1:-1].strip()
    if not inner:
        return ()
    out = []
    pos = 0
    for m in _ONE_SIZE.finditer(inner):
        if inner[pos : m.start()].strip(", "):
            return None
        body = m.group(1).strip()
        out.append(tuple(int(x) for x in body.split(",")) if body else ())
        pos = m.end()
    return tuple(out) if not inner[pos:].strip(", ") else None


def parse_marker(text: str) -> OpMarker | None:
    """The operator a marker names, or None when `text` is not an emit_nvtx marker (a user's
    own range): at least one of seq, op_id or sizes must be there, in PyTorch's order."""
    if len(text) > MAX_MARKER:
        return None
    m = _MARKER.fullmatch(text)
    if m is None or (m["seq"] is None and m["op_id"] is None and m["sizes"] is None):
        return None
    sizes = _sizes(m["sizes"]) if m["sizes"] is not None else None
    if m["sizes"] is not None and sizes is None:
        return None
    return OpMarker(
        name=m["name"].strip(),
        seq=int(m["seq"]) if m["seq"] is not None else -1,
        op_id=int(m["op_id"]) if m["op_id"] is not None else -1,
        sizes=sizes,
    )


# What the marker's sizes become in a trace's shape description (Input Dims, Input type,
# Concrete Inputs): a non-empty size is a tensor whose dtype the marker does not give, read as
# float32 (so modeled bytes assume 4-byte elements); `[]` is an argument that is not a tensor
# (a 0-d tensor is written the same way and is read as such).
ASSUMED_DTYPE = "float"


def shape_description(sizes: tuple[tuple[int, ...], ...]) -> tuple:
    """(Input Dims, Input type, Concrete Inputs) of a marker's sizes, as the timeline's op
    registry lookup (analyzers.timeline.roofline.trace_call) reads a Kineto event's args."""
    dims = tuple(sizes)
    types = tuple(ASSUMED_DTYPE if s else "" for s in sizes)
    concrete = tuple("" for _ in sizes)
    return (dims, types, concrete)
