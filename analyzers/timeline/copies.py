"""Copies by kind (HtoD, DtoH, DtoD, PtoP, unified-memory migrations): count and device time
from the device events' names, which Kineto and the nsys reader both write as
`Memcpy <kind> (<src> -> <dst>)`; bytes where the reader summed them (an nsys export)."""

from __future__ import annotations

import numpy as np

from perfsuite.analyzers.timeline.categories import CATEGORIES, MEMCPY
from perfsuite.analyzers.timeline.device import US, DeviceArrays
from perfsuite.analyzers.timeline.model import CopyKind
from perfsuite.traces.reader import TraceData


def copy_kind(name: str) -> str:
    """`Memcpy HtoD (Pageable -> Device)` -> `HtoD`; a name not of that form is itself."""
    if not name.startswith("Memcpy "):
        return name
    return name[len("Memcpy ") :].split(" (")[0].strip() or name


def copy_kinds(data: TraceData, arrays: DeviceArrays, mask: np.ndarray) -> list[CopyKind]:
    """One row per copy kind among the kept device events, by device time (descending).
    Bytes come from the reader's own per-kind sums (`copies` of an nsys read) and only when
    every device event was kept: a --device filter leaves them out (None)."""
    m = mask & (arrays.category == CATEGORIES.index(MEMCPY))
    if not m.any():
        return []
    names = data.names.values
    acc: dict[str, list[float]] = {}
    uniq, inv = np.unique(arrays.name[m], return_inverse=True)
    count = np.bincount(inv)
    total = np.bincount(inv, weights=arrays.dur[m])
    for n, c, t in zip(uniq.tolist(), count.tolist(), total.tolist(), strict=True):
        row = acc.setdefault(copy_kind(names[n]), [0, 0.0])
        row[0] += c
        row[1] += t
    known = {c.kind: c.bytes for c in getattr(data, "copies", ())} if mask.all() else {}
    out = [CopyKind(k, int(c), t * US, known.get(k)) for k, (c, t) in acc.items()]
    out.sort(key=lambda r: (-r.total_s, r.kind))
    return out
