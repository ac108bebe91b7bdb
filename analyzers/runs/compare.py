"""Runs, or groups of repeated runs, side by side: what `perfsuite compare` and the multi-run
report show.

Each item is one run or a group of repeats; the first item is the baseline. Per run: the framework,
time to accuracy (`perfsuite.analyzers.results.record_view.crossing`), time per epoch
(`perfsuite.analyzers.runs.stability.epoch_times`), the measured step time, FLOPs per step, achieved
FLOP/s and the roofline position (`perfsuite.analyzers.roofline.roofline`). Per item: the means over
its runs and the ratio to the baseline. Per pair (item, baseline): the FLOP agreement and the op
time deltas (`perfsuite.analyzers.runs.compare_work`), and for two groups the statistical verdict on
time to accuracy and time per epoch (`perfsuite.analyzers.runs.verdict`), withheld ("no verdict")
where the two groups' values measure different work (other targets, workloads or epoch sizes), so
that a CI gate never fails on a difference in the work. Framework-agnostic: it reads only the
record. Pure: records in, dataclasses out; rules in docs/compare.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfsuite import stats
from perfsuite.analyzers.results.record_view import (
    batch_size_of,
    crossing,
    faults_per_step,
    framework,
    mlperf_round,
    trusted_outcome,
    unfinished,
)
from perfsuite.analyzers.roofline.above_roof import roof_name
from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.analyzers.runs.compare_work import (
    DEFAULT_FLOP_TOLERANCE,
    FlopCheck,
    OpDeltas,
    flop_check,
    mean_or_none,
    op_deltas,
    spread_within,
    workload_of,
)
from perfsuite.analyzers.runs.stability import epoch_times
from perfsuite.analyzers.runs.verdict import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_EFFECT,
    FASTER,
    NONE,
    SLOWER,
    Verdict,
    decide,
)
from perfsuite.flops.mfu import mfu
from perfsuite.record import qvalue

QUANTITIES = ("time_to_accuracy", "time_per_epoch")


@dataclass(frozen=True)
class RunValues:
    """One run's numbers, as the per-run table shows them (None where unknown)."""

    item: str
    run_id: str
    path: str | None
    framework: str
    workload: str | None
    model: str | None
    batch_size: Any
    hardware: str | None
    status: str
    metric: str
    threshold: float
    reached: bool
    time_to_accuracy_s: float | None
    epochs_to_threshold: float | None
    time_per_epoch_s: float | None
    step_time_s: float | None
    faults_per_step: float | None  # minor page faults per step, steady epochs (record_view)
    flops_per_step: float | None
    achieved_flop_per_s: float | None
    intensity_flop_per_byte: float | None
    bound: str | None
    frac_of_roof: float | None
    roof_flag: str | None
    roofline_missing: str | None  # why there is no roofline position
    # the run's own roofs (its blended peak, its memory roof): runs on other hardware are
    # drawn under their own, never under the baseline's
    peak_flops: float | None = None
    memory_bandwidth: float | None = None
    steps_per_epoch: int | None = None  # epochs of other sizes have no comparable time
    # the roofline's: fraction -> the roofs it uses that ops are flagged above (then the
    # fraction is an upper bound, shown "DOUBT"), and roof -> those ops (RunRoofline's own)
    doubts: dict[str, list[str]] = field(default_factory=dict)
    doubted_roofs: dict[str, list[str]] = field(default_factory=dict)
    accelerators: int | None = None  # hardware.count: time x accelerators compares sizes
    mlperf_round: str | None = None  # an imported MLPerf result's round ("5.1")
    # transformer runs (a `model_flops` section, perfsuite.flops.mfu): tokens/s and MFU
    tokens_per_s: float | None = None
    mfu: float | None = None
    direction: str = "higher"  # the task's: "lower" for a loss (reached at metric <= threshold)


@dataclass(frozen=True)
class ItemSummary:
    """One column of the side-by-side table: a run, or the means over a group's runs.

    Times to accuracy are averaged over the runs that reached; `*_ratio` = this item's value /
    the baseline's (above 1: more time, more FLOPs, a higher rate). `n_runs` counts the runs
    the time-to-accuracy verdict counts: a run that crashed or never finished without reaching
    says nothing about reaching, so it is in `n_unfinished` instead (runs reached 2/2, not 2/3).
    """

    label: str
    kind: str  # "run" | "group"
    n_runs: int  # runs that finished (or reached): the denominator of "runs reached"
    n_reached: int
    frameworks: list[str]
    workload: str | None
    model: str | None
    batch_size: Any
    metric: str
    threshold: float
    time_to_accuracy_s: float | None
    time_to_accuracy_cov: float | None
    epochs_to_threshold: float | None
    time_per_epoch_s: float | None
    step_time_s: float | None
    faults_per_step: float | None
    flops_per_step: float | None
    achieved_flop_per_s: float | None
    intensity_flop_per_byte: float | None
    frac_of_roof: float | None
    bounds: list[str]
    n_unfinished: int = 0  # crashed or unfinished without reaching: left out of n_runs
    time_to_accuracy_ratio: float | None = None
    time_per_epoch_ratio: float | None = None
    step_time_ratio: float | None = None
    faults_ratio: float | None = None
    flops_ratio: float | None = None
    achieved_flops_ratio: float | None = None
    # frac_of_roof -> roofs ops are flagged above, over the runs: one run's doubt is the mean's
    doubts: dict[str, list[str]] = field(default_factory=dict)
    # time to accuracy x accelerators (GPU-seconds), where all runs name one accelerator count
    accelerator_time_s: float | None = None
    accelerator_time_ratio: float | None = None
    tokens_per_s: float | None = None  # transformer runs only (perfsuite.flops.mfu)
    mfu: float | None = None
    tokens_per_s_ratio: float | None = None
    direction: str = "higher"


@dataclass(frozen=True)
class Comparison:
    items: list[ItemSummary]  # the baseline first
    runs: list[RunValues]
    flops: list[FlopCheck]  # each candidate against the baseline
    ops: list[OpDeltas]
    verdicts: list[Verdict]  # per candidate group and quantity; empty without two groups
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)


def run_values(item: str, record: Mapping[str, Any]) -> RunValues:
    """The numbers of one run (roofline position from `perfsuite.analyzers.roofline.roofline`)."""
    c = crossing(record)
    # an inconsistent record (claims its evaluations do not bear out) is left out like a crash
    status, reached, time_s, _ = trusted_outcome(record, c.reached, c.time_s)
    times, _ = epoch_times(dict(record))
    try:
        r = roofline(record).run
        missing = None
    except RooflineInputError as exc:
        r, missing = None, str(exc)
    m = mfu(record)
    return RunValues(
        item=item,
        run_id=str(record.get("run_id")),
        path=record.get("_path"),
        framework=framework(record),
        workload=workload_of(record),
        model=record.get("model"),
        batch_size=batch_size_of(record),
        hardware=(record.get("hardware") or {}).get("name"),
        status=status,
        metric=c.metric,
        threshold=c.threshold,
        reached=reached,
        time_to_accuracy_s=time_s,
        epochs_to_threshold=None if c.epoch is None or not reached else float(c.epoch),
        time_per_epoch_s=stats.mean(times) if times else None,
        step_time_s=qvalue((record.get("throughput") or {}).get("step_time")),
        faults_per_step=faults_per_step(record),
        flops_per_step=r.flops_per_step.value if r else None,
        achieved_flop_per_s=r.achieved_flops.value if r else None,
        intensity_flop_per_byte=r.intensity.value if r else None,
        bound=r.bound if r else None,
        frac_of_roof=r.frac_of_roof if r else None,
        roof_flag=r.flag if r else None,
        roofline_missing=missing,
        peak_flops=r.peak_flops.value if r else None,
        memory_bandwidth=r.memory_bandwidth.value if r else None,
        steps_per_epoch=(record.get("extra") or {}).get("steps_per_epoch"),
        doubts=dict(r.doubts) if r else {},
        doubted_roofs=dict(r.doubted_roofs) if r else {},
        accelerators=_count(record),
        mlperf_round=mlperf_round(record),
        tokens_per_s=m.tokens_per_s if m else None,
        mfu=m.mfu if m else None,
        direction=str((record.get("task") or {}).get("direction") or "higher"),
    )


def _count(record: Mapping[str, Any]) -> int | None:
    count = (record.get("hardware") or {}).get("count")
    ok = isinstance(count, int) and not isinstance(count, bool) and count > 0
    return count if ok else None


def _ratio(x: float | None, base: float | None) -> float | None:
    return x / base if x is not None and base else None


def _summary(label: str, runs: Sequence[RunValues]) -> ItemSummary:
    reached = [r for r in runs if r.reached and r.time_to_accuracy_s is not None]
    tta = [r.time_to_accuracy_s for r in reached if r.time_to_accuracy_s is not None]
    first = runs[0]
    counts = {r.accelerators for r in runs}
    count = counts.pop() if len(counts) == 1 else None
    mean_tta = mean_or_none(tta)
    return ItemSummary(
        label=label,
        kind="run" if len(runs) == 1 else "group",
        n_runs=sum(1 for r in runs if not _unfinished(r)),
        n_reached=len(reached),
        n_unfinished=sum(1 for r in runs if _unfinished(r)),
        frameworks=sorted({r.framework for r in runs}),
        workload=first.workload,
        model=first.model,
        batch_size=first.batch_size,
        metric=first.metric,
        threshold=first.threshold,
        time_to_accuracy_s=mean_or_none(tta),
        time_to_accuracy_cov=stats.cov(tta),
        epochs_to_threshold=mean_or_none([r.epochs_to_threshold for r in reached]),
        time_per_epoch_s=mean_or_none([r.time_per_epoch_s for r in runs]),
        step_time_s=mean_or_none([r.step_time_s for r in runs]),
        faults_per_step=mean_or_none([r.faults_per_step for r in runs]),
        flops_per_step=mean_or_none([r.flops_per_step for r in runs]),
        achieved_flop_per_s=mean_or_none([r.achieved_flop_per_s for r in runs]),
        intensity_flop_per_byte=mean_or_none([r.intensity_flop_per_byte for r in runs]),
        frac_of_roof=mean_or_none([r.frac_of_roof for r in runs]),
        bounds=sorted({r.bound for r in runs if r.bound}),
        doubts=_doubts(runs, "frac_of_roof"),
        accelerator_time_s=None if mean_tta is None or count is None else mean_tta * count,
        tokens_per_s=mean_or_none([r.tokens_per_s for r in runs]),
        mfu=mean_or_none([r.mfu for r in runs]),
        direction=first.direction,
    )


def _doubts(runs: Sequence[RunValues], *keys: str) -> dict[str, list[str]]:
    """key -> the roofs any run's `key` is in doubt over: a mean with one upper bound in it is
    an upper bound too."""
    out = {k: sorted({roof for r in runs for roof in r.doubts.get(k, [])}) for k in keys}
    return {k: roofs for k, roofs in out.items() if roofs}


def _with_ratios(s: ItemSummary, base: ItemSummary) -> ItemSummary:
    return replace(
        s,
        time_to_accuracy_ratio=_ratio(s.time_to_accuracy_s, base.time_to_accuracy_s),
        accelerator_time_ratio=_ratio(s.accelerator_time_s, base.accelerator_time_s),
        time_per_epoch_ratio=_ratio(s.time_per_epoch_s, base.time_per_epoch_s),
        step_time_ratio=_ratio(s.step_time_s, base.step_time_s),
        faults_ratio=_ratio(s.faults_per_step, base.faults_per_step),
        flops_ratio=_ratio(s.flops_per_step, base.flops_per_step),
        achieved_flops_ratio=_ratio(s.achieved_flop_per_s, base.achieved_flop_per_s),
        tokens_per_s_ratio=_ratio(s.tokens_per_s, base.tokens_per_s),
    )


def _target_notes(items: Sequence[ItemSummary]) -> list[str]:
    targets = {(s.metric, s.threshold) for s in items}
    if len(targets) > 1:
        shown = ", ".join(f"{m} >= {t:g}" for m, t in sorted(targets))
        return [f"items use different targets ({shown}): times to accuracy are not comparable"]
    return []


def _run_notes(runs: Sequence[RunValues]) -> list[str]:
    out = []
    workloads = sorted({r.workload for r in runs if r.workload})
    if len(workloads) > 1:
        out.append(f"runs of different workloads ({', '.join(workloads)}): their times measure "
                   "different work")  # fmt: skip
    sizes = {r.steps_per_epoch for r in runs if r.steps_per_epoch}
    if len(sizes) > 1:
        shown = " vs ".join(str(n) for n in sorted(sizes))
        out.append(f"epochs of different sizes ({shown} steps): time per epoch is not "
                   "comparable across them; step time is")  # fmt: skip
    for r in runs:
        if r.status == "running":
            out.append(f"{r.run_id}: status 'running' (unfinished or killed)")
        if r.roof_flag:
            out.append(f"{r.run_id}: roofline flagged: {r.roof_flag}")
        if "frac_of_roof" in r.doubts and r.frac_of_roof is not None:
            above = "; ".join(
                f"{', '.join(r.doubted_roofs.get(roof, []))} above {roof_name(roof)}"
                for roof in r.doubts["frac_of_roof"]
            )
            out.append(
                f"{r.run_id}: of roof {r.frac_of_roof:.1%} is in doubt, an upper bound: ops are "
                f"flagged above roofs it is made of ({above}); `perfsuite roofline` names the "
                "likely causes"
            )
    return out


def _unfinished(r: RunValues) -> bool:
    """A run that crashed or is still running and has not reached: it says nothing about
    whether the configuration converges, so it is not counted as a DNC."""
    return unfinished(r.reached, r.status)


def group_verdicts(
    base_label: str,
    base_runs: Sequence[RunValues],
    label: str,
    runs: Sequence[RunValues],
    **options: Any,
) -> list[Verdict]:
    """Time to accuracy (runs that finished without reaching count as DNC, crashed or
    unfinished ones are left out) and time per epoch (runs with epoch times)."""

    def tta(rv: Sequence[RunValues]) -> list[float | None]:
        return [r.time_to_accuracy_s if r.reached else None for r in rv if not _unfinished(r)]

    def tpe(rv: Sequence[RunValues]) -> list[float | None]:
        return [r.time_per_epoch_s for r in rv if r.time_per_epoch_s is not None]

    return [
        decide("time_to_accuracy", base_label, label, tta(base_runs), tta(runs), **options),
        decide("time_per_epoch", base_label, label, tpe(base_runs), tpe(runs), **options),
    ]


def _differ(values: set[Any], what: str, unit: str = "") -> str | None:
    """`different <what> (a vs b)` when a pair of groups holds more than one value."""
    if len(values) < 2:
        return None
    return f"different {what} ({' vs '.join(f'{v}{unit}' for v in sorted(values))})"


def not_comparable(base_runs: Sequence[RunValues], runs: Sequence[RunValues]) -> dict[str, str]:
    """Quantity -> why the two groups' values cannot be compared, for the quantities that
    cannot: times to the same threshold of the same workload, epochs of the same size. A
    verdict there would gate a CI job on a difference in the work, not in its speed."""
    both = [*base_runs, *runs]
    work = _differ({r.workload for r in both if r.workload}, "workloads")
    target = _differ({f"{r.metric} threshold {r.threshold:g}" for r in both}, "targets")
    steps = _differ({r.steps_per_epoch for r in both if r.steps_per_epoch}, "epoch sizes", " steps")
    # another MLPerf round is other rules, data and reference code, even at the same target
    rnd = _differ({r.mlperf_round for r in both if r.mlperf_round}, "MLPerf rounds")
    out = {}
    if work or target or rnd:
        out["time_to_accuracy"] = "; ".join(w for w in (work, target, rnd) if w)
    if work or steps:
        out["time_per_epoch"] = "; ".join(w for w in (work, steps) if w)
    return out


def _withheld(verdict: Verdict, why: str) -> Verdict:
    """`no verdict` with the reason, and no ratio, interval or test: those would present a
    comparison of different work as a measured difference. Means and counts stay."""
    return replace(
        verdict,
        verdict=NONE,
        reason=f"not comparable: {why}",
        ratio=None,
        ci_low=None,
        ci_high=None,
        test=None,
    )


def fewer_reached(verdicts: Sequence[Verdict]) -> list[str]:
    """A warning per candidate that reached the target in a smaller fraction of its runs than
    the baseline without a significant verdict: a candidate that stopped converging in some
    runs passes the gate with few repeats (1/5 against 5/5 gives p = 0.11), so say it."""
    out = []
    for v in verdicts:
        if v.quantity != "time_to_accuracy" or v.verdict in (SLOWER, NONE):
            continue
        if not (v.n_baseline and v.n_candidate):
            continue
        reached_b = v.n_candidate - v.dnc_candidate
        reached_a = v.n_baseline - v.dnc_baseline
        if reached_b / v.n_candidate < reached_a / v.n_baseline:
            why = (
                "faster when it reaches, but it reaches less often"
                if v.verdict == FASTER
                else "the rank test cannot tell this from chance with these repeats: add repeats"
            )
            out.append(
                f"{v.candidate} reached the target in {reached_b}/{v.n_candidate} runs, "
                f"baseline {v.baseline} in {reached_a}/{v.n_baseline} ({v.verdict}: {why})"
            )
    return out


def compare(
    items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
    flop_tolerance: float = DEFAULT_FLOP_TOLERANCE,
    top: int | None = 10,
) -> Comparison:
    """Compare items (label, records); the first is the baseline. Verdicts are given for
    every candidate that is a group (2+ runs) when the baseline is one too. `top`: op time
    deltas kept per candidate (None: all)."""
    if len(items) < 2:
        raise ValueError("a comparison needs at least two items (runs or groups)")
    for label, records in items:
        if not records:
            raise ValueError(f"{label}: no runs")
    runs_by = [[run_values(label, r) for r in records] for label, records in items]
    summaries = [_summary(label, rv) for (label, _), rv in zip(items, runs_by, strict=True)]
    base = summaries[0]
    summaries = [base] + [_with_ratios(s, base) for s in summaries[1:]]
    (base_label, base_recs), base_runs = items[0], runs_by[0]
    checks, deltas, verdicts = [], [], []
    notes = _target_notes(summaries)
    notes += spread_within(base_label, base_recs, flop_tolerance)
    for (label, recs), rv in zip(items[1:], runs_by[1:], strict=True):
        notes += spread_within(label, recs, flop_tolerance)
        checks.append(
            flop_check(
                base_label,
                base_recs[0],
                label,
                recs[0],
                base_runs[0].framework,
                rv[0].framework,
                flop_tolerance,
            )
        )
        deltas.append(op_deltas(base_label, base_recs, label, recs, top))
        if len(base_runs) >= 2 and len(rv) >= 2:
            opts = {"alpha": alpha, "min_effect": min_effect, "resamples": resamples, "seed": seed}
            why = not_comparable(base_runs, rv)
            verdicts += [
                _withheld(v, why[v.quantity]) if v.quantity in why else v
                for v in group_verdicts(base_label, base_runs, label, rv, **opts)
            ]
    unfinished = [r.run_id for rv in runs_by for r in rv if _unfinished(r)]
    if unfinished:
        left_out = "runs reached" + (" and the time-to-accuracy verdict" if verdicts else "")
        notes.append(
            f"{len(unfinished)} run(s) crashed or unfinished without reaching, "
            f"left out of {left_out}: {', '.join(unfinished)}"
        )
    notes += fewer_reached(verdicts)
    if not verdicts:
        notes.append(
            "no statistical verdict: it needs groups of repeated runs (2 or more each) on "
            "both sides"
        )
    notes += _run_notes([r for rv in runs_by for r in rv])
    return Comparison(
        items=summaries,
        runs=[r for rv in runs_by for r in rv],
        flops=checks,
        ops=deltas,
        verdicts=verdicts,
        notes=notes,
        options={
            "alpha": alpha,
            "confidence": 1 - alpha,
            "min_effect": min_effect,
            "resamples": resamples,
            "seed": seed,
            "flop_tolerance": flop_tolerance,
            "top": top,
            "baseline": base_label,
        },
    )


def items_from_records(
    records: Sequence[Mapping[str, Any]], loose_label: str | None = None
) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Records split into items by `group.id` (written by `run --repeats` and studies), in
    first-seen order, each labeled by its group id. Records without a group id form one item
    labeled `loose_label` when it is given (a folder of repeats run by hand), else one item
    each, labeled by run id. Switches are not looked at: two runs are only a group when
    their records say so."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for rec in records:
        gid = (rec.get("group") or {}).get("id")
        if gid:
            key = str(gid)
        elif loose_label is not None:
            key = loose_label
        else:
            key = str(rec.get("run_id"))
        groups.setdefault(key, []).append(rec)
    return list(groups.items())
