"""Time-to-accuracy at several thresholds, and where the ranking of runs changes.

A system that is fastest to 90% is not necessarily fastest to 93% (DAWNBench and MLPerf
threshold choices matter). From the recorded curves we compute the time to each threshold
with the one DAWNBench rule (`analyzers.tta.record_crossing`, in the task's direction), rank
the entries at every threshold, and list the pairs whose order swaps between consecutive
thresholds.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from analyzers import stats
from analyzers.compare_work import workload_of
from analyzers.stability import (
    group_records,
    task_direction,
    threshold_problem,
    training_records,
)
from analyzers.tta import record_crossing


@dataclass(frozen=True)
class Entry:
    """A run, or a group of runs (its members listed), as ranked in this analysis."""

    name: str
    label: str
    members: list[str]


@dataclass(frozen=True)
class Placing:
    """One entry at one threshold: time (None = did not reach, "DNR") and rank (None for DNR)."""

    name: str
    time_s: float | None
    rank: int | None
    reached_runs: int
    runs: int


@dataclass(frozen=True)
class Ranking:
    """All entries at one threshold: ranked ones first (by time), then DNR."""

    threshold: float
    placings: list[Placing]


@dataclass(frozen=True)
class Swap:
    """`faster_before` was ahead of `faster_after` at `from_threshold`, behind at `to_threshold`."""

    from_threshold: float
    to_threshold: float
    faster_before: str
    faster_after: str


@dataclass(frozen=True)
class ThresholdAnalysis:
    metric: str
    thresholds: list[float]
    by: str  # "run" or "group"
    entries: list[Entry]
    rankings: list[Ranking]  # one per threshold, ascending
    swaps: list[Swap]
    notes: list[str]
    direction: str = "higher"  # "lower": reached when metric <= threshold


def _rank(items: list[tuple[str, float | None, int, int]]) -> list[Placing]:
    """Competition ranking (1, 1, 3) by time, ties listed by name; DNR last, unranked."""
    counts = {name: (k, n) for name, _, k, n in items}
    done = stats.competition_ranks([(name, t) for name, t, _, _ in items if t is not None])
    out = [Placing(name, t, rank, *counts[name]) for name, t, rank in done]
    out += [Placing(n, None, None, k, m) for n, _, k, m in sorted(i for i in items if i[1] is None)]
    return out


def _order(a: Placing, b: Placing) -> int:
    """-1 if a is ahead of b, 1 if behind, 0 if tied (same time, or both DNR)."""
    if a.time_s is None and b.time_s is None:
        return 0
    if a.time_s is None:
        return 1
    if b.time_s is None:
        return -1
    return (a.time_s > b.time_s) - (a.time_s < b.time_s)


def find_swaps(rankings: Sequence[Ranking]) -> list[Swap]:
    """Pairs strictly ordered one way at a threshold and strictly the other way at the next."""
    swaps = []
    for r_lo, r_hi in itertools.pairwise(rankings):
        lo, hi = r_lo.threshold, r_hi.threshold
        before = {p.name: p for p in r_lo.placings}
        after = {p.name: p for p in r_hi.placings}
        names = sorted(before)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                o1, o2 = _order(before[a], before[b]), _order(after[a], after[b])
                if o1 * o2 == -1:
                    first, second = (a, b) if o1 < 0 else (b, a)
                    swaps.append(Swap(lo, hi, first, second))
    return swaps


def _common_metric(records: Sequence[dict[str, Any]], metric: str | None) -> str:
    if metric is not None:
        return metric
    metrics = sorted({str((r.get("task") or {}).get("metric")) for r in records})
    if len(metrics) != 1:
        raise ValueError(f"records use different metrics ({', '.join(metrics)}); pass --metric")
    return metrics[0]


def analyze_thresholds(
    records: Sequence[dict[str, Any]],
    thresholds: Sequence[float],
    metric: str | None = None,
    by_group: bool = False,
) -> ThresholdAnalysis:
    """Time to each threshold per run (or per group: the mean over its runs), ranks and swaps.

    A group counts as reaching a threshold only when all its runs reach it (the mean of the
    runs that reached would flatter it); otherwise it is DNR at that threshold.
    """
    notes: list[str] = []
    records, inference_only = training_records(records)
    if inference_only:
        notes.append(f"skipped {len(inference_only)} inference-only record(s): no training curve")
    if not records:
        raise ValueError("no training records")
    if not thresholds:
        raise ValueError("no thresholds")
    for t in thresholds:
        problem = threshold_problem(float(t), records, metric)
        if problem:
            raise ValueError(f"threshold {t:g}: {problem}")
    ts = sorted(set(float(t) for t in thresholds))
    m = _common_metric(records, metric)
    tasks = sorted({str(workload_of(r)) for r in records})
    if len(tasks) > 1:  # one metric name, different tasks: a ranking across them means little
        notes.append(f"records of different workloads ({', '.join(tasks)}) are ranked together: "
                     "the same metric value is a different target on each")  # fmt: skip

    if by_group:
        groups = group_records(records)
        entries = [Entry(k, label, [str(r.get("run_id")) for r in rs]) for k, label, rs in groups]
        members = [rs for _, _, rs in groups]
    else:
        run_ids = [str(r.get("run_id")) for r in records]
        dup = sorted({x for x in run_ids if run_ids.count(x) > 1})
        if dup:
            notes.append(f"duplicate run ids {', '.join(dup)}; entries are suffixed with #n")
        entries = []
        for i in range(len(records)):
            name = run_ids[i] if run_ids[i] not in dup else f"{run_ids[i]}#{i}"
            entries.append(Entry(name, name, [run_ids[i]]))
        members = [[r] for r in records]

    rankings: list[Ranking] = []
    for t in ts:
        items = []
        for entry, recs in zip(entries, members, strict=True):
            times = [record_crossing(r, threshold=t, metric=m).time_s for r in recs]
            reached = [x for x in times if x is not None]
            value = stats.mean(reached) if len(reached) == len(times) else None
            items.append((entry.name, value, len(reached), len(times)))
        rankings.append(Ranking(t, _rank(items)))
        if all(p.time_s is None for p in rankings[-1].placings):
            notes.append(f"no entry reaches {m} >= {t}")
    no_curve = [
        e.name
        for e, rs in zip(entries, members, strict=True)
        if not any(
            (ev.get("metrics") or {}).get(m) is not None
            for r in rs
            for ev in (r.get("evaluations") or [])
        )
    ]
    if no_curve:
        notes.append(f"no {m} values in the curve (DNR everywhere): {', '.join(no_curve)}")
    return ThresholdAnalysis(
        direction=task_direction(records[0]),
        metric=m,
        thresholds=ts,
        by="group" if by_group else "run",
        entries=entries,
        rankings=rankings,
        swaps=find_swaps(rankings),
        notes=notes,
    )
