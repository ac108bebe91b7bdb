"""Per-operator roofline points from a trace recorded with shapes (record_shapes=True).

FLOPs and bytes come from the torch-free op registry (perfsuite.flops) applied to the shapes
the profiler wrote ("Input Dims", "Input type", "Concrete Inputs"): modeled. Time is the
device time of the kernels the operator launched: measured. A kernel is credited to the
innermost enclosing operator that has shapes and a registry formula, so aten::linear ->
aten::addmm counts once, at aten::addmm.

Shapes come from an untrusted file: a point is dropped (and counted in a note) unless every
recorded dimension is a non-negative integer and the modeled FLOP and bytes are finite and
non-negative, so a corrupt or hand-edited trace cannot put -120 FLOP or 1e600 on a plot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perfsuite.analyzers.timeline.device import US, DeviceArrays
from perfsuite.analyzers.timeline.hostmap import HostMap
from perfsuite.analyzers.timeline.keys import unique_ints
from perfsuite.analyzers.timeline.model import RooflinePoint
from perfsuite.flops import registry
from perfsuite.flops.call import OpCall, TensorMeta
from perfsuite.traces.reader import TraceData

# "Input type" values that are not tensors.
_NON_TENSOR = {"", "Scalar", "ScalarList", "GenericList", "None", "String", "Device", "Layout"}


_MAX_CONCRETE = 256  # longer "Concrete Inputs" text is kept as text, never parsed


def _atom(text: str) -> Any:
    """One scalar of a "Concrete Inputs" string: bool, None, int, float, else the text."""
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", ""):
        return None
    for convert in (int, float):
        try:
            return convert(t)
        except ValueError:
            pass
    return t.strip("'\"")


def _concrete(value: Any) -> Any:
    """A "Concrete Inputs" string ("False", "2", "[1, 1]", "") as a Python value.

    Parsed by hand, never evaluated: the trace is untrusted, and `ast.literal_eval` on long or
    deeply nested text costs unbounded time and memory. Flat lists and tuples of scalars are
    all the op formulas use; anything else (or anything long) stays a string.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text == "" or len(text) > _MAX_CONCRETE:
        return None if text == "" else value
    if text[0] in "[(" and text[-1] in "])":
        inner = text[1:-1]
        if any(c in inner for c in "[](){}"):
            return value
        items = [_atom(x) for x in inner.split(",")] if inner.strip() else []
        if items and items[-1] is None and inner.rstrip().endswith(","):
            items.pop()  # "(1,)"
        return items
    return _atom(text)


def trace_call(name: str, dims: Any, types: Any, concrete: Any) -> Any:
    """An `OpCall` from profiler args: tensors from dims+type, other args from Concrete Inputs.

    The trace names no overload and types a TensorList only as "TensorList": an out= call's
    out tensor (its last argument) stays among the inputs, TensorList elements are float32
    and broadcast views count at full size. Modeled bytes of such calls are upper bounds
    (docs/flops.md, "Trace limits")."""
    dims = list(dims or ())
    types = list(types or ())
    concrete = list(concrete or ())
    args: list[Any] = []
    for i in range(max(len(dims), len(types))):
        d = dims[i] if i < len(dims) else ()
        t = types[i] if i < len(types) else ""
        c = concrete[i] if i < len(concrete) else ""
        if t == "TensorList" or (d and all(isinstance(x, (list, tuple)) for x in d)):
            args.append([TensorMeta(tuple(s)) for s in d if isinstance(s, (list, tuple))])
        elif t not in _NON_TENSOR and isinstance(d, (list, tuple)):
            args.append(TensorMeta(tuple(d), str(t)))
        else:
            args.append(_concrete(c))
    return OpCall(name=name, args=args)


# op_work's answer for shapes no point may be drawn from (negative dims, infinite FLOP).
INVALID = (math.nan, math.nan)


def _dims_ok(dims: Any) -> bool:
    """Every leaf of "Input Dims" is a non-negative int (nested lists for TensorLists)."""
    if isinstance(dims, (list, tuple)):
        return all(_dims_ok(d) for d in dims)
    return type(dims) is int and dims >= 0


def op_work(name: str, shape: tuple[Any, Any, Any]) -> tuple[float, float] | None:
    """(FLOP, byte) of one call from its recorded shapes; None when no formula applies;
    INVALID when one does but the shapes or its result cannot describe a real call."""
    try:
        if registry.lookup(name) is None:
            return None
    except ImportError:  # op models not available: no roofline points
        return None
    if not _dims_ok(shape[0]):
        return INVALID
    try:
        est = registry.estimate(trace_call(name, *shape))
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError):
        return None  # shapes the formula cannot use (e.g. missing arguments in old traces)
    except ArithmeticError:  # OverflowError: dims so large the FLOP count is not a float
        return INVALID
    except Exception:  # a formula's own bug (a user's): that op is not modeled, as live
        return None
    if not est.known or (est.flops == 0 and est.bytes == 0):
        return None  # zero work from shapes means the shapes were not recorded (TensorList)
    flops, nbytes = est.flops, est.bytes
    if not (math.isfinite(flops) and math.isfinite(nbytes) and flops >= 0 and nbytes >= 0):
        return INVALID
    return flops, nbytes


def _modeled_ops(
    data: TraceData, parent: np.ndarray
) -> tuple[dict[tuple[int, int], tuple[float, float] | None], np.ndarray]:
    """Per range, the innermost modeled cpu_op at or above it (-1: none), with the work of
    each (name, shapes) pair of cpu_ops. A cpu_op is modeled when a formula applies to its
    recorded shapes (INVALID included: such a point is counted as dropped)."""
    rg = data.ranges
    n = len(rg.ts)
    kind = np.asarray(rg.kind, dtype=np.int64)
    name = np.asarray(rg.name, dtype=np.int64)
    shape = np.asarray(rg.shape, dtype=np.int64)
    cand = np.flatnonzero((kind == 0) & (shape >= 0))
    work: dict[tuple[int, int], tuple[float, float] | None] = {}
    is_modeled = np.zeros(n, dtype=bool)
    if len(cand):
        width = int(shape.max()) + 1
        keys, inv = np.unique(name[cand] * width + shape[cand], return_inverse=True)
        names, shapes = data.names.values, data.shapes.values
        ok = np.zeros(len(keys), dtype=bool)
        for i, key in enumerate(keys.tolist()):
            nm, sh = divmod(key, width)
            work[(nm, sh)] = op_work(names[nm], shapes[sh])
            ok[i] = work[(nm, sh)] is not None
        is_modeled[cand] = ok[inv.reshape(-1)]
    # Walk every range up its parents at once until a modeled op (or the top) is reached.
    found = np.where(is_modeled, np.arange(n), -1)
    cur = np.where(is_modeled, -1, np.asarray(parent, dtype=np.int64))
    todo = np.flatnonzero(cur >= 0)
    while len(todo):
        at = cur[todo]
        hit = is_modeled[at]
        found[todo[hit]] = at[hit]
        nxt = np.where(hit, -1, parent[at])
        cur[todo] = nxt
        todo = todo[nxt >= 0]
    return work, found


def roofline_points(
    data: TraceData, host: HostMap, arrays: DeviceArrays, mask: np.ndarray
) -> tuple[list[RooflinePoint], int]:
    """Group device time by (operator, shapes) of the modeled operator that launched it; in
    a trace without device events (CPU), host self time by the innermost modeled operator
    around each op, itself included. Also returns how many (operator, shapes) groups were
    dropped as INVALID."""
    rg = data.ranges
    on_host = arrays.n == 0
    if not len(data.shapes.values):
        return [], 0
    names = data.names.values
    work_cache, modeled = _modeled_ops(data, host.parent)
    if on_host:  # each cpu_op's own time goes to the modeled op it runs in (or is)
        kind = np.asarray(rg.kind, dtype=np.int64)
        m_seq = modeled[kind == 0]
        t_seq = np.asarray(host.self_time, dtype=np.float64)[kind == 0]
    else:
        op, dur = arrays.op[mask], arrays.dur[mask]
        keep = op >= 0
        ops, inv = unique_ints(op[keep], return_inverse=True)
        t_seq = np.bincount(inv.reshape(-1), weights=dur[keep], minlength=len(ops))
        m_seq = modeled[ops]
    sel = m_seq >= 0
    m_seq, t_seq = m_seq[sel], t_seq[sel]
    # Per modeled op, its time summed in sequence order (bincount adds in input order), the
    # ops taken in order of first appearance; then per (operator, shapes) group likewise.
    uniq, first, inv = unique_ints(m_seq, return_index=True, return_inverse=True)
    per_m = np.bincount(inv.reshape(-1), weights=t_seq, minlength=len(uniq))
    by_first = np.argsort(first, kind="stable")
    m_ord, t_ord = uniq[by_first], per_m[by_first]
    r_name = np.asarray(rg.name, dtype=np.int64)[m_ord]
    r_shape = np.asarray(rg.shape, dtype=np.int64)[m_ord]
    groups: dict[tuple[int, int], list[float]] = {}
    if len(m_ord):
        width = int(r_shape.max()) + 1
        g_keys, g_first, g_inv = np.unique(
            r_name * width + r_shape, return_index=True, return_inverse=True
        )
        g_inv = g_inv.reshape(-1)
        g_calls = np.bincount(g_inv, minlength=len(g_keys))
        g_time = np.bincount(g_inv, weights=t_ord, minlength=len(g_keys))
        for g in np.argsort(g_first, kind="stable").tolist():
            key = (int(r_name[g_first[g]]), int(r_shape[g_first[g]]))
            groups[key] = [int(g_calls[g]), float(g_time[g])]
    points = []
    dropped = 0
    for (nm, sh), (calls, t) in groups.items():
        flops, nbytes = work_cache[(nm, sh)]  # type: ignore[misc]
        if flops != flops:  # INVALID: the innermost modeled op's shapes are not a real call
            dropped += 1
            continue
        secs = t * US
        tot_f, tot_b = flops * calls, nbytes * calls
        dims, types, _ = data.shapes.values[sh]
        points.append(
            RooflinePoint(
                op=names[nm],
                input_dims=dims,
                input_types=types,
                calls=int(calls),
                flops=flops,
                bytes=nbytes,
                device_time_s=None if on_host else secs,
                flops_per_s=tot_f / secs if secs > 0 else None,
                bytes_per_s=tot_b / secs if secs > 0 else None,
                intensity=flops / nbytes if nbytes > 0 else None,
                time_s=secs,
                time_kind="host" if on_host else "device",
            )
        )
    points.sort(key=lambda p: (-p.time_s, p.op))
    return points, dropped
