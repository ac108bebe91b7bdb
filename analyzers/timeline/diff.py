"""Trace diff: CPU operators and device kernels added, removed, and their count and duration
deltas between two sides (A: control, B: test), each a trace file or a folder of rank traces.

A side's totals are summed over all its ranks and over the whole trace (every iteration): the
figures are what `perfsuite timeline` reports per op and kernel. Names are compared exactly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.analyzers.timeline.analysis import analyze_trace
from perfsuite.analyzers.timeline.ranks import OpTotals, scan_files, trace_files
from perfsuite.traces.profile import read_profile

ADDED, REMOVED, CHANGED, SAME = "added", "removed", "changed", "same"


@dataclass
class DiffRow:
    """One (kind, name): kind `cpu_op` (host operator ranges) or `kernel` (every device event:
    kernels, memcpy, memset). Deltas are B - A; a mean is None on a side without the name."""

    kind: str
    name: str
    status: str  # added (only in B), removed (only in A), changed, same
    count_a: int
    count_b: int
    count_delta: int
    total_a_s: float
    total_b_s: float
    total_delta_s: float
    mean_a_s: float | None
    mean_b_s: float | None
    mean_delta_s: float | None


@dataclass
class TraceDiff:
    a: str
    b: str
    ranks_a: int
    ranks_b: int
    rows: list[DiffRow]  # by |total_delta_s|, then |count_delta|, descending
    counts: dict[str, int]  # rows per status
    total_a_s: dict[str, float]  # per kind
    total_b_s: dict[str, float]
    notes: list[str] = field(default_factory=list)


def side_totals(paths: list[Path], on_file: Callable[[int, Path], None] | None = None) -> OpTotals:
    """Op and kernel totals of one side: one trace file, or each trace of a rank folder read
    and dropped in turn (a folder's duplicate or missing ranks are TraceErrors)."""
    totals = OpTotals()
    if len(paths) == 1 and paths[0].is_file():
        totals.add(analyze_trace(read_profile(paths[0]), top=None))
        return totals
    for _ in scan_files(paths, on_file=on_file, visitors=[totals]):
        pass
    return totals


def side_files(path: str | os.PathLike[str]) -> list[Path]:
    """A trace file as itself, a folder as its rank traces."""
    p = Path(path)
    return trace_files(p) if p.is_dir() else [p]


def _mean(count: float, total: float) -> float | None:
    return total / count if count else None


def diff_totals(a: OpTotals, b: OpTotals, label_a: str = "A", label_b: str = "B") -> TraceDiff:
    """Every (kind, name) of either side, with its status and deltas."""
    rows = []
    for key in sorted(set(a.totals) | set(b.totals)):
        ca, ta = a.totals.get(key, (0, 0.0))
        cb, tb = b.totals.get(key, (0, 0.0))
        if not ca:
            status = ADDED
        elif not cb:
            status = REMOVED
        elif ca == cb and ta == tb:
            status = SAME
        else:
            status = CHANGED
        ma, mb = _mean(ca, ta), _mean(cb, tb)
        rows.append(
            DiffRow(
                kind=key[0],
                name=key[1],
                status=status,
                count_a=int(ca),
                count_b=int(cb),
                count_delta=int(cb - ca),
                total_a_s=ta,
                total_b_s=tb,
                total_delta_s=tb - ta,
                mean_a_s=ma,
                mean_b_s=mb,
                mean_delta_s=mb - ma if ma is not None and mb is not None else None,
            )
        )
    rows.sort(key=lambda r: (-abs(r.total_delta_s), -abs(r.count_delta), r.kind, r.name))
    counts = {s: sum(r.status == s for r in rows) for s in (ADDED, REMOVED, CHANGED, SAME)}

    def per_kind(t: OpTotals) -> dict[str, float]:
        out = {"cpu_op": 0.0, "kernel": 0.0}
        for (kind, _), (_, total) in t.totals.items():
            out[kind] += total
        return out

    notes = []
    if a.ranks != b.ranks:
        notes.append(
            f"A has {a.ranks} rank(s), B {b.ranks}: counts and totals are sums over ranks, "
            "so compare means, or per-rank figures"
        )
    return TraceDiff(
        label_a, label_b, a.ranks, b.ranks, rows, counts, per_kind(a), per_kind(b), notes
    )


def diff_paths(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    on_file: Callable[[int, Path], None] | None = None,
) -> TraceDiff:
    """The diff of two trace files or rank folders."""
    return diff_totals(
        side_totals(side_files(a), on_file), side_totals(side_files(b), on_file), str(a), str(b)
    )
