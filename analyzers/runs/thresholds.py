"""Time-to-accuracy at several thresholds, and where the ranking of runs changes.

A system that is fastest to 90% is not necessarily fastest to 93% (DAWNBench and MLPerf
threshold choices matter). From the recorded curves we compute the time to each threshold
with the one DAWNBench rule (`perfsuite.record.tta.record_crossing`, in the task's direction), rank
the entries at every threshold, and list the pairs whose order swaps between consecutive
thresholds. A record whose claims its own evaluations do not bear out is left out, with its
first problem in a note, by the rule every ranking command applies
(`perfsuite.record.consistency.untrusted`). A run that stopped on meeting its own target has
no time to a stricter threshold: it is "not measured" there (not DNC) and takes no part in
ranking changes. A run that trained to its end without reaching a threshold is DNC there
(DAWNBench's "did not converge", the word every command uses), a diverged one (NaN loss)
counted as such.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite import stats
from perfsuite.analyzers.runs.compare_work import workload_of
from perfsuite.analyzers.runs.stability import (
    group_records,
    task_direction,
    threshold_problem,
    training_records,
)
from perfsuite.record.consistency import untrusted
from perfsuite.record.tta import record_crossing


@dataclass(frozen=True)
class Entry:
    """A run, or a group of runs (its members listed), as ranked in this analysis."""

    name: str
    label: str
    members: list[str]


REACHED, DNC, NOT_MEASURED = "reached", "dnc", "not_measured"


@dataclass(frozen=True)
class Placing:
    """One entry at one threshold: time and rank, or None for both when unranked.

    `state` says why an entry is unranked: "dnc" (did not converge: a run trained to its end
    without reaching the threshold; `diverged_runs` of them ended on a NaN/inf loss) or
    "not_measured" (every run that did not reach it had stopped at its own target,
    `stopped_at`, first: its time is unknown, not infinite).
    """

    name: str
    time_s: float | None
    rank: int | None
    reached_runs: int
    runs: int
    not_measured_runs: int = 0
    stopped_at: list[float] = field(default_factory=list)  # own targets the runs stopped at
    diverged_runs: int = 0  # runs without a time here that ended as diverged (NaN/inf loss)
    state: str = ""  # derived from the counts when left empty

    def __post_init__(self) -> None:
        if not self.state:
            if self.time_s is not None:
                state = REACHED
            elif self.not_measured_runs and self.reached_runs + self.not_measured_runs == self.runs:
                state = NOT_MEASURED
            else:
                state = DNC
            object.__setattr__(self, "state", state)


@dataclass(frozen=True)
class Ranking:
    """All entries at one threshold: ranked ones first (by time), then DNC, then not measured."""

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


def _rank(items: Sequence[tuple[Any, ...]]) -> list[Placing]:
    """Competition ranking (1, 1, 3) by time, ties listed by name; then DNC, then not
    measured, unranked, each by name. Items: (name, time or None, *the other Placing fields)."""
    rest = {item[0]: item[2:] for item in items}
    done = stats.competition_ranks([(item[0], item[1]) for item in items if item[1] is not None])
    out = [Placing(name, t, rank, *rest[name]) for name, t, rank in done]
    missing = sorted(item[0] for item in items if item[1] is None)
    unranked = [Placing(name, None, None, *rest[name]) for name in missing]
    return (
        out
        + [p for p in unranked if p.state == DNC]
        + [p for p in unranked if p.state == NOT_MEASURED]
    )


def _order(a: Placing, b: Placing) -> int:
    """-1 if a is ahead of b, 1 if behind, 0 if unordered: same time, both DNC, or either not
    measured (its time is unknown, so no order can change through it)."""
    if NOT_MEASURED in (a.state, b.state):
        return 0
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


def _unreached_note(ranking: Ranking, target: str) -> list[str]:
    """A note when no entry has a time at this threshold, saying whether that was measured."""
    if any(p.state == REACHED for p in ranking.placings):
        return []
    dnc = sum(1 for p in ranking.placings if p.state == DNC)
    unmeasured = len(ranking.placings) - dnc
    if not unmeasured:
        return [f"no entry reaches {target}"]
    if not dnc:
        return [f"no entry was measured at {target} (each stopped at its own target first)"]
    return [f"no entry reaches {target} ({unmeasured} more not measured)"]


def _not_measured_note(rankings: Sequence[Ranking], metric: str, cmp: str) -> list[str]:
    """One note naming the entries not measured somewhere, and why."""
    unmeasured = [p for r in rankings for p in r.placings if p.state == NOT_MEASURED]
    if not unmeasured:
        return []
    names = sorted({p.name for p in unmeasured})
    stops = sorted({x for p in unmeasured for x in p.stopped_at})
    return [
        f"not measured: {', '.join(names)} stopped on reaching "
        f"{'its' if len(names) == 1 else 'their'} own target ({metric} "
        f"{cmp} {', '.join(f'{x:g}' for x in stops)}), so a stricter threshold has no time "
        "(not DNC; left out of ranking changes; `perfsuite run --all-epochs` trains on)"
    ]


def _common_metric(records: Sequence[dict[str, Any]], metric: str | None) -> str:
    if metric is not None:
        return metric
    metrics = sorted({str((r.get("task") or {}).get("metric")) for r in records})
    if len(metrics) != 1:
        raise ValueError(f"records use different metrics ({', '.join(metrics)}); pass --metric")
    return metrics[0]


def _consistent(records: Sequence[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """The records whose claims follow from their evaluations (`perfsuite.record.consistency`);
    each one left out is named in a note with its first problem, as every ranking command
    leaves it out (validate, leaderboard, stability, cost, report)."""
    kept = []
    for rec in records:
        bad = untrusted(rec)
        if bad:
            notes.append(f"left out {rec.get('run_id')}: {bad}")
        else:
            kept.append(rec)
    return kept


def _entries(
    records: Sequence[dict[str, Any]], by_group: bool, notes: list[str]
) -> tuple[list[Entry], list[list[dict[str, Any]]]]:
    """The entries ranked (runs, or groups of repeated runs) and the records of each."""
    if by_group:
        groups = group_records(records)
        entries = [Entry(k, label, [str(r.get("run_id")) for r in rs]) for k, label, rs in groups]
        return entries, [rs for _, _, rs in groups]
    run_ids = [str(r.get("run_id")) for r in records]
    dup = sorted({x for x in run_ids if run_ids.count(x) > 1})
    if dup:
        notes.append(f"duplicate run ids {', '.join(dup)}; entries are suffixed with #n")
    entries = []
    for i, run_id in enumerate(run_ids):
        name = run_id if run_id not in dup else f"{run_id}#{i}"
        entries.append(Entry(name, name, [run_id]))
    return entries, [[r] for r in records]


def _ranking(
    t: float, m: str, entries: Sequence[Entry], members: Sequence[Sequence[dict[str, Any]]]
) -> Ranking:
    """Every entry at threshold `t`: the mean time of its runs when all reached, else DNC or
    not measured."""
    items = []
    for entry, recs in zip(entries, members, strict=True):
        crossings = [record_crossing(r, threshold=t, metric=m) for r in recs]
        reached = [c.time_s for c in crossings if c.reached and c.time_s is not None]
        stops = sorted({c.stopped_at for c in crossings if c.stopped_at is not None})
        unmeasured = sum(1 for c in crossings if not c.measured)
        diverged = sum(
            1
            for r, c in zip(recs, crossings, strict=True)
            if c.measured and not c.reached and r.get("status") == "diverged"
        )
        value = stats.mean(reached) if len(reached) == len(crossings) else None
        items.append((entry.name, value, len(reached), len(crossings), unmeasured, stops, diverged))
    return Ranking(t, _rank(items))


def _checked_records(
    records: Sequence[dict[str, Any]],
    thresholds: Sequence[float],
    metric: str | None,
    notes: list[str],
) -> list[dict[str, Any]]:
    """The training records that can be ranked, after the thresholds are checked against them."""
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
    consistent = _consistent(records, notes)
    if not consistent:
        raise ValueError(f"no consistent training records ({notes[-1]})")
    return consistent


def analyze_thresholds(
    records: Sequence[dict[str, Any]],
    thresholds: Sequence[float],
    metric: str | None = None,
    by_group: bool = False,
) -> ThresholdAnalysis:
    """Time to each threshold per run (or per group: the mean over its runs), ranks and swaps.

    A group counts as reaching a threshold only when all its runs reach it (the mean of the
    runs that reached would flatter it); otherwise it is DNC at that threshold when a run
    trained to its end without it, else not measured (runs stopped at their own target). A
    record whose claims its evaluations do not bear out is left out, named in a note.
    """
    notes: list[str] = []
    records = _checked_records(records, thresholds, metric, notes)
    ts = sorted(set(float(t) for t in thresholds))
    m = _common_metric(records, metric)
    tasks = sorted({str(workload_of(r)) for r in records})
    if len(tasks) > 1:  # one metric name, different tasks: a ranking across them means little
        notes.append(f"records of different workloads ({', '.join(tasks)}) are ranked together: "
                     "the same metric value is a different target on each")  # fmt: skip
    entries, members = _entries(records, by_group, notes)
    cmp = "<=" if task_direction(records[0]) == "lower" else ">="
    rankings: list[Ranking] = []
    for t in ts:
        rankings.append(_ranking(t, m, entries, members))
        notes += _unreached_note(rankings[-1], f"{m} {cmp} {t:g}")
    notes += _not_measured_note(rankings, m, cmp)
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
        notes.append(f"no {m} values in the curve (DNC everywhere): {', '.join(no_curve)}")
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
