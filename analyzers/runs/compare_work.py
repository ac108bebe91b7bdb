"""The work side of a comparison: do two runs of one network count the same FLOPs per step, and
which ops take more or less time?

Why FLOPs are checked: FLOPs per step are a property of the network and the batch, not of the
framework or the machine, so two runs of the same workload at the same batch size must agree; when
they do not, a counter or a formula is wrong somewhere (or the networks are not the same), and the
per-op differences show where. Op names differ between frameworks (aten::convolution vs Conv2D), so
differences are also summed per op family and phase, which both counters share. Op times are the
reconciled per-step times of `perfsuite.analyzers.roofline.reconcile` (they add up to the measured
step). Pure functions on record dicts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite import stats
from perfsuite.analyzers.results.record_view import batch_size_of
from perfsuite.analyzers.roofline.reconcile import OTHER, reconcile_timeline
from perfsuite.record import qvalue

DEFAULT_FLOP_TOLERANCE = 1e-3  # relative; counts of one network should agree exactly


@dataclass(frozen=True)
class WorkDiff:
    """FLOPs of one op (or one family/phase) per step in the baseline and the candidate."""

    name: str
    baseline: float
    candidate: float
    difference: float  # candidate - baseline


@dataclass(frozen=True)
class FlopCheck:
    """FLOPs per step of a candidate against the baseline, for runs of one network and batch.

    `same_network` is True when workload, batch size, model (its name without a framework
    suffix such as " (TensorFlow)") and recipe name match, a side without a model or recipe
    counting as matching: then the counts must agree within `tolerance` (relative) or `agree`
    is False and the differences explain why. For different networks nothing is compared:
    `agree` is None, no breakdown, one note saying how they differ.
    """

    baseline: str
    candidate: str
    workload: str | None
    batch_size: Any
    same_network: bool
    models: tuple[str | None, str | None]
    frameworks: tuple[str, str]
    flops_baseline: float | None
    flops_candidate: float | None
    difference: float | None  # candidate - baseline, FLOP per step
    relative: float | None  # difference / baseline
    tolerance: float
    agree: bool | None  # None when a count is missing
    by_family: list[WorkDiff] = field(default_factory=list)
    by_op: list[WorkDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class OpDelta:
    """Mean per-step time of one op in each item (None where the op was not profiled)."""

    op: str
    baseline_s: float | None
    candidate_s: float | None
    delta_s: float  # candidate - baseline, a missing side counted as 0
    ratio: float | None  # candidate / baseline


@dataclass(frozen=True)
class OpDeltas:
    """Per-op time differences of a candidate item against the baseline item."""

    baseline: str
    candidate: str
    rows: list[OpDelta]  # largest |delta| first, the "other / not attributed" row included
    common_ops: int
    ops_baseline: int
    ops_candidate: int
    notes: list[str] = field(default_factory=list)


def workload_of(record: Mapping[str, Any]) -> str | None:
    task = record.get("task") or {}
    return task.get("workload") or task.get("name")


_FRAMEWORK_SUFFIX = re.compile(r"\s*\((tensorflow|pytorch|torch|jax)\)\s*$", re.IGNORECASE)


def network_of(record: Mapping[str, Any]) -> str | None:
    """The record's model name without a framework suffix: "ResNet-9 style, width x1.0
    (TensorFlow)" and "ResNet-9 style, width x1.0" name one network."""
    model = record.get("model")
    return _FRAMEWORK_SUFFIX.sub("", str(model)) if model else None


def recipe_of(record: Mapping[str, Any]) -> str | None:
    recipe = (record.get("config") or {}).get("recipe")
    return str(recipe) if recipe else None


def _differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """How two records' networks differ ("" when they are the same network and batch)."""
    out = []
    wa, wb = workload_of(a), workload_of(b)
    if wa is None or wa != wb:
        out.append(f"workload {wa} vs {wb}")
    for what, get in (("model", network_of), ("recipe", recipe_of)):
        x, y = get(a), get(b)
        if x is not None and y is not None and x != y:
            out.append(f"{what} {x!r} vs {y!r}")
    ba, bb = batch_size_of(a), batch_size_of(b)
    if ba != bb:
        out.append(f"batch {ba} vs {bb}")
    return out


def flops_per_step(record: Mapping[str, Any]) -> float | None:
    return qvalue((record.get("work") or {}).get("flops_per_step"))


def _sums(record: Mapping[str, Any], key: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for row in (record.get("work") or {}).get("per_op") or []:
        name = key(row)
        out[name] = out.get(name, 0.0) + float(row.get("flops") or 0.0)
    return out


def _family_key(row: Mapping[str, Any]) -> str:
    return f"{row.get('phase', '?')}/{row.get('family', '?')}"


def _op_key(row: Mapping[str, Any]) -> str:
    return f"{row.get('phase', '?')}/{row['op']}"


def _diffs(a: Mapping[str, float], b: Mapping[str, float], tol: float) -> list[WorkDiff]:
    """Names whose FLOPs differ by more than `tol` (relative to the larger), largest first."""
    rows = []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name, 0.0), b.get(name, 0.0)
        if abs(y - x) > tol * max(abs(x), abs(y)):
            rows.append(WorkDiff(name, x, y, y - x))
    rows.sort(key=lambda d: (-abs(d.difference), d.name))
    return rows


def flop_check(
    baseline_label: str,
    baseline: Mapping[str, Any],
    candidate_label: str,
    candidate: Mapping[str, Any],
    framework_a: str,
    framework_b: str,
    tolerance: float = DEFAULT_FLOP_TOLERANCE,
) -> FlopCheck:
    """Compare the counted FLOPs of two records (one representative run of each item)."""
    fa, fb = flops_per_step(baseline), flops_per_step(candidate)
    wa, ba = workload_of(baseline), batch_size_of(baseline)
    differ = _differences(baseline, candidate)
    same = not differ
    ma, mb = baseline.get("model"), candidate.get("model")
    diff = rel = agree = None
    by_family: list[WorkDiff] = []
    by_op: list[WorkDiff] = []
    if not same:  # nothing to check: different networks need not count the same FLOPs
        notes = ["not the same network and batch, FLOPs not compared: " + "; ".join(differ)]
    elif fa is None or fb is None:
        missing = baseline_label if fa is None else candidate_label
        notes = [f"{missing}: no counted work.flops_per_step"]
    else:
        notes = []
        diff = fb - fa
        rel = diff / fa if fa else None
        agree = abs(diff) <= tolerance * max(abs(fa), abs(fb))
    # Per family whenever the counts differ at all (a small difference still has a cause);
    # per op name only when they disagree (names differ between frameworks: a long list).
    if same and (agree is None or diff):
        by_family = _diffs(_sums(baseline, _family_key), _sums(candidate, _family_key), 0.0)
    if same and not agree:
        by_op = _diffs(_sums(baseline, _op_key), _sums(candidate, _op_key), tolerance)
    for label, rec in ((baseline_label, baseline), (candidate_label, candidate)):
        unknown = (rec.get("work") or {}).get("unknown_ops") or []
        if unknown and agree is False:
            names = ", ".join(str(u.get("op")) for u in unknown[:5])
            notes.append(f"{label}: ops without a FLOP formula (counted as 0): {names}")
    return FlopCheck(
        baseline=baseline_label,
        candidate=candidate_label,
        workload=wa,
        batch_size=ba,
        same_network=same,
        models=(ma, mb),
        frameworks=(framework_a, framework_b),
        flops_baseline=fa,
        flops_candidate=fb,
        difference=diff,
        relative=rel,
        tolerance=tolerance,
        agree=agree,
        by_family=by_family,
        by_op=by_op,
        notes=notes,
    )


def spread_within(label: str, records: Sequence[Mapping[str, Any]], tol: float) -> list[str]:
    """A note when the runs of one item do not count the same FLOPs per step."""
    counts = [f for f in (flops_per_step(r) for r in records) if f is not None]
    if len(counts) > 1 and max(counts) - min(counts) > tol * max(counts):
        return [
            f"{label}: its runs count different FLOPs per step "
            f"({min(counts):.6g} to {max(counts):.6g}); the first run is used"
        ]
    return []


def mean_op_times(records: Sequence[Mapping[str, Any]]) -> tuple[dict[str, float], int]:
    """op -> mean reconciled per-step time over the runs with a timeline (an op absent from a
    run's window counts 0 there); and how many runs had one."""
    tables = [t for t in (reconcile_timeline(r) for r in records) if t is not None]
    sums: dict[str, float] = {}
    for t in tables:
        for row in t.rows:
            sums[row.name] = sums.get(row.name, 0.0) + row.time_s
    return {k: v / len(tables) for k, v in sums.items()}, len(tables)


def op_deltas(
    baseline_label: str,
    baseline: Sequence[Mapping[str, Any]],
    candidate_label: str,
    candidate: Sequence[Mapping[str, Any]],
    top: int | None = 10,
) -> OpDeltas:
    """The `top` ops (None: all) with the largest per-step time difference (plus the other
    row)."""
    ta, na = mean_op_times(baseline)
    tb, nb = mean_op_times(candidate)
    notes = []
    for label, n, total in (
        (baseline_label, na, len(baseline)),
        (candidate_label, nb, len(candidate)),
    ):
        if n < total:
            notes.append(f"{label}: {total - n} of {total} run(s) have no profiled timeline")
    names = (set(ta) | set(tb)) - {OTHER}
    common = (set(ta) & set(tb)) - {OTHER}
    if names and len(common) < 0.5 * len(names):
        notes.append(
            f"only {len(common)} of {len(names)} op names occur in both (different frameworks "
            "or kernels name their ops differently): compare the step totals and the FLOP "
            "families instead"
        )
    rows = []
    for op in names | ({OTHER} if OTHER in ta or OTHER in tb else set()):
        a, b = ta.get(op), tb.get(op)
        ratio = b / a if a and b is not None else None
        rows.append(OpDelta(op, a, b, (b or 0.0) - (a or 0.0), ratio))
    rows.sort(key=lambda d: (-abs(d.delta_s), d.op))
    shown = [r for r in rows if r.op != OTHER][:top] + [r for r in rows if r.op == OTHER]
    return OpDeltas(
        baseline_label,
        candidate_label,
        shown,
        len(common),
        len(set(ta) - {OTHER}),
        len(set(tb) - {OTHER}),
        notes,
    )


def mean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the values that exist (finite), None when none does."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    return stats.mean(xs) if xs else None
