"""Run-to-run stability of time-to-accuracy, split into statistical and hardware variance.

Repeated runs of one configuration differ for two reasons: the optimizer needs a different
number of epochs to reach the threshold (statistical variance: seeds, data order), and each
epoch takes a different time (hardware variance: clocks, contention). Summarizing epochs to
threshold and time per epoch separately says which one dominates. Definitions and warning
rules: docs/statistics.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite import stats
from perfsuite.analyzers.results.record_view import (
    FINISHED,
    INCONSISTENT,
    batch_size_of,
    capture_incomplete,
    crossing,
    task_direction,
    trusted_outcome,
    unfinished,
)
from perfsuite.analyzers.results.record_view import framework as record_framework
from perfsuite.record.tta import Crossing, planned_epochs

DEFAULT_MAX_COV = 0.05
DEFAULT_MAX_CI_REL = 0.05
# Below this many values the percentile bootstrap cannot see the tails (n=2 gives the range).
MIN_RUNS_FOR_CI = 5


# --------------------------------------------------------------------------- records -> runs
def run_crossing(
    record: dict[str, Any], metric: str | None = None, threshold: float | None = None
) -> Crossing:
    """Where one run reaches its threshold: `perfsuite.analyzers.results.record_view.crossing` (the
    record's own time to accuracy, or the curve recomputed in the task's direction with
    overrides)."""
    return crossing(record, metric, threshold)


def training_records(records: Sequence[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """(records with a training run, inference-only records such as DAWNBench inference entries)."""
    kept, skipped = [], []
    for r in records:
        (skipped if is_inference_only(r) else kept).append(r)
    return kept, skipped


def is_inference_only(record: Mapping[str, Any]) -> bool:
    """An entry with no training run behind it (a DAWNBench inference entry)."""
    return (record.get("source") or {}).get("entry_type") == "inference"


def threshold_problem(
    threshold: float, records: Sequence[Mapping[str, Any]], metric: str | None = None
) -> str | None:
    """Why `threshold` cannot be meant for these records, or None when it can.

    Higher-is-better metrics (top1, top5, F1, mAP) are fractions, so their threshold must lie
    in [0, 1] (0.93, not 93). Lower-is-better ones (task.direction "lower": MLPerf log
    perplexity, FID, word error rate) only need a finite threshold >= 0.
    """
    if not (math.isfinite(threshold) and threshold >= 0):
        return "must be a finite number >= 0"
    if threshold > 1:
        fractions = sorted(
            {
                str(metric or (r.get("task") or {}).get("metric"))
                for r in records
                if task_direction(r) == "higher"
            }
        )
        if fractions:
            hint = f"{threshold / 100:g} or {threshold:g}%" if threshold <= 100 else "e.g. 0.93"
            return (
                f"{', '.join(fractions)} must be a fraction in [0, 1]: {threshold:g} is outside "
                f"it (write {hint})"
            )
    return None


def hardware_label(record: dict[str, Any]) -> str:
    """ "NVIDIA V100 x8" style name of a record's hardware ("unknown hardware" when absent)."""
    hw = record.get("hardware") or {}
    name = hw.get("name") or hw.get("instance_type") or "unknown hardware"
    count = hw.get("count")
    return f"{name} x{count}" if isinstance(count, int) and count > 1 else str(name)


def config_label(record: dict[str, Any]) -> str:
    """task / model / hardware: what a group of comparable runs has in common."""
    task = (record.get("task") or {}).get("name", "?")
    return f"{task} / {record.get('model') or 'unknown model'} / {hardware_label(record)}"


# config fields whose default a record may leave out: absent and default read the same
_DEFAULTS = {"nproc": "1", "eval_from": "1"}


def config_fields(record: Mapping[str, Any]) -> dict[str, str]:
    """The run configuration that changes time to accuracy, as text ("" = not set/default).

    Why: loose runs are pooled only when these agree; a channels_last run at batch 256 is
    another configuration, not another sample. Batch size and epochs are the values in force
    (`record_view.batch_size_of`, `tta.planned_epochs`).
    """
    config = record.get("config") or {}
    epochs = planned_epochs(record)

    def text(value: Any) -> str:
        if isinstance(value, (list, tuple)):
            return ",".join(sorted(str(v) for v in value))
        return "" if value is None or value is False else str(value)

    fields = {
        "framework": record_framework(record),
        "device": text(config.get("device")),
        "recipe": text(config.get("recipe")),
        "switches": text(config.get("switches")),
        "overrides": text(config.get("overrides")),
        "batch_size": text(batch_size_of(record)),
        "epochs": "" if epochs is None else f"{epochs:g}",
        "eval_from": text(config.get("eval_from")),
        "synthetic": text(config.get("synthetic")),
        "nproc": text(config.get("nproc")),
        "threads": text(config.get("threads")),
    }
    return {k: "" if v == _DEFAULTS.get(k) else v for k, v in fields.items()}


def group_key(record: dict[str, Any]) -> tuple[str, str]:
    """(key, label) of the group a record belongs to.

    Records with the same `group.id` (written by `perfsuite run --repeats N`) form one group.
    Other records are grouped by (task name, metric, threshold, model, hardware name and
    count, and the `config_fields`), so that independent runs of one configuration are
    compared with each other only.
    """
    grp = record.get("group")
    if grp and grp.get("id"):
        return f"group:{grp['id']}", f"{grp['id']} ({config_label(record)})"
    task = record.get("task") or {}
    hw = record.get("hardware") or {}
    parts = (
        task.get("name"),
        task.get("metric"),
        task.get("threshold"),
        record.get("model"),
        hw.get("name"),
        hw.get("count"),
        *(f"{k}={v}" for k, v in config_fields(record).items()),
    )
    key = "config:" + "|".join("" if p is None else str(p) for p in parts)
    return key, config_label(record)


def group_records(records: Iterable[dict[str, Any]]) -> list[tuple[str, str, list[dict]]]:
    """[(key, label, records)] in first-seen order; records keep their input order.

    Loose groups that would share a label get the configuration fields that tell them apart
    appended, e.g. "[switches=channels_last, batch_size=256]".
    """
    groups: dict[str, tuple[str, list[dict]]] = {}
    for rec in records:
        key, label = group_key(rec)
        groups.setdefault(key, (label, []))[1].append(rec)
    out = []
    for key, (label, recs) in groups.items():
        twins = [rs[0] for k, (lb, rs) in groups.items() if lb == label and k != key]
        out.append((key, label + (_difference(recs[0], twins) if twins else ""), recs))
    return out


def _difference(record: Mapping[str, Any], others: Sequence[Mapping[str, Any]]) -> str:
    """ " [field=value, ...]" for the config fields where `record` differs from any of `others`."""
    mine = config_fields(record)
    theirs = [config_fields(o) for o in others]
    shown = [
        f"{k}={v or ('none' if k in ('switches', 'overrides') else 'default')}"
        for k, v in mine.items()
        if any(t[k] != v for t in theirs)
    ]
    return f" [{', '.join(shown)}]" if shown else ""


def epoch_times(record: dict[str, Any]) -> tuple[list[float], str | None]:
    """Training seconds of each epoch and where they came from.

    `throughput.epoch_times_s` when recorded ("throughput"); otherwise derived from the curve
    ("curve"): each evaluation interval's train-time difference divided by its epoch difference
    (seconds per epoch over that interval, the first interval starting at epoch 0, time 0).
    """
    recorded = (record.get("throughput") or {}).get("epoch_times_s")
    if recorded:
        return [float(x) for x in recorded], "throughput"
    out: list[float] = []
    prev_e, prev_t = 0.0, 0.0
    for ev in record.get("evaluations") or []:
        e, t = float(ev["epoch"]), float(ev["train_time_s"])
        if e > prev_e:
            out.append((t - prev_t) / (e - prev_e))
            prev_e, prev_t = e, t
    return out, ("curve" if out else None)


# --------------------------------------------------------------------------- olympic rule
GENERIC_RULE = "generic"  # drop the fastest and the slowest run


def _mlperf_rule(record: Mapping[str, Any]) -> tuple[str, int] | None:
    """(benchmark, runs dropped at each end) of an imported MLPerf record, else None.

    The importer stores its benchmark's rule as `extra.mlperf.dropped_each_end` (the loader
    migrates records imported before it did: perfsuite/record/migrate.py).
    """
    if (record.get("source") or {}).get("kind") != "mlperf":
        return None
    info = (record.get("extra") or {}).get("mlperf")
    if not isinstance(info, dict):
        return None
    name = str((record.get("task") or {}).get("name"))
    dropped = info.get("dropped_each_end")
    if isinstance(dropped, bool) or not isinstance(dropped, int) or dropped < 1:
        return None
    return name, dropped


def olympic_rule(records: Sequence[Mapping[str, Any]]) -> tuple[int, str]:
    """(runs dropped at each end, rule name) of a group's olympic mean.

    Why: MLPerf's result summarizer drops a per-benchmark number of runs at each end (4 for
    unet3d, 1 otherwise), and the import's folder score follows it. When every run of a group
    is an imported MLPerf record of one benchmark whose rule drops other than 1, that rule is
    applied ("MLPerf unet3d"); otherwise the generic rule, 1 at each end ("generic").
    """
    rules = {_mlperf_rule(r) for r in records}
    if len(rules) == 1:
        (rule,) = rules
        if rule is not None and rule[1] != 1:
            return rule[1], f"MLPerf {rule[0]}"
    return 1, GENERIC_RULE


def _rule_warnings(records: Sequence[Mapping[str, Any]], rule: str) -> list[str]:
    """A group that mixes records of a benchmark with its own rule and other records gets the
    generic rule; say so, since the import's folder score of those records differs."""
    if rule != GENERIC_RULE:
        return []
    special: dict[tuple[str, int], int] = {}
    for r in records:
        found = _mlperf_rule(r)
        if found is not None and found[1] != 1:
            special[found] = special.get(found, 0) + 1
    return [
        f"olympic mean uses the generic rule (drop fastest and slowest): only {k} of "
        f"{len(records)} runs are imported MLPerf {name} records (MLPerf's {name} rule drops "
        f"{dropped} at each end)"
        for (name, dropped), k in sorted(special.items())
    ]


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Summary:
    """Statistics of one sample of per-run values. None where undefined (see docs)."""

    n: int
    mean: float | None
    std: float | None
    cov: float | None
    ci_low: float | None
    ci_high: float | None
    ci_half_width_rel: float | None
    min: float | None
    max: float | None


def summarize(values: Sequence[float], confidence: float = 0.95, seed: int = 0) -> Summary:
    """Mean, sample std, CoV, bootstrap CI of the mean and its half-width relative to the mean."""
    m = stats.mean(values)
    ci = stats.bootstrap_ci(values, confidence=confidence, seed=seed)
    rel = None
    if ci is not None and m:
        rel = (ci[1] - ci[0]) / 2 / abs(m)
    return Summary(
        n=len(values),
        mean=m,
        std=stats.sample_std(values),
        cov=stats.cov(values),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        ci_half_width_rel=rel,
        min=min(values) if values else None,
        max=max(values) if values else None,
    )


@dataclass(frozen=True)
class RunOutcome:
    """One run: did it reach, when, after how many epochs, and its mean time per epoch."""

    run_id: str
    path: str | None
    status: str
    seed: Any
    reached: bool
    time_s: float | None
    epochs: float | None
    time_per_epoch_s: float | None
    epoch_time_cov: float | None  # within this run: a noisy neighbour or warm-up shows here
    epoch_times_from: str | None
    # False: left out of n, the fraction reaching, TTA and the olympic mean, because the run
    # crashed or is unfinished without reaching, or was not measured at this threshold
    counted: bool = True
    stopped_at: float | None = None  # not measured: it stopped at its own target (this) first
    error: str | None = None  # the record's one-line error (crashed, diverged)
    # killed after training ended, before its capture finished (`record_view.capture_incomplete`)
    capture_incomplete: bool = False


@dataclass(frozen=True)
class GroupStability:
    """Stability statistics of one group of comparable runs."""

    key: str
    label: str
    metric: str
    threshold: float
    runs: list[RunOutcome]
    n_runs: int  # runs counted (RunOutcome.counted); `runs` also lists those left out
    n_reached: int
    reached_fraction: float | None  # None when no run is counted
    time_to_accuracy: Summary
    epochs_to_threshold: Summary
    time_per_epoch: Summary
    olympic_mean: stats.OlympicMean
    warnings: list[str] = field(default_factory=list)
    direction: str = "higher"  # task.direction: "lower" when the metric must fall to the target
    # the olympic mean's rule: "generic" (1 dropped at each end) or "MLPerf <benchmark>" when
    # every run is an imported MLPerf record of a benchmark scored otherwise (unet3d: 4)
    olympic_rule: str = GENERIC_RULE


def _outcome(rec: dict[str, Any], metric: str | None, threshold: float | None) -> RunOutcome:
    c = run_crossing(rec, metric, threshold)
    times, origin = epoch_times(rec)
    # an inconsistent record (claims its evaluations do not bear out) is left out like a crash
    status, reached, time_s, error = trusted_outcome(rec, c.reached, c.time_s)
    # A crash says nothing about whether the configuration converges (as in compare and
    # study); a run that reached before it ended keeps its measured time.
    left_out = unfinished(reached, status)
    return RunOutcome(
        run_id=str(rec.get("run_id")),
        path=rec.get("_path"),
        status=status,
        seed=(rec.get("config") or {}).get("seed"),
        reached=reached,
        time_s=time_s,
        epochs=None if c.epoch is None or not reached else float(c.epoch),
        time_per_epoch_s=stats.mean(times) if times else None,
        epoch_time_cov=stats.cov(times),
        epoch_times_from=origin,
        counted=c.measured and not left_out,
        stopped_at=None if status == INCONSISTENT else c.stopped_at,
        error=error,
        capture_incomplete=capture_incomplete(rec) is not None,
    )


def _reason(r: RunOutcome) -> str:
    """'r3 (crashed: OSError: disk full)': a left-out run and why, cut to one short line."""
    error = " ".join((r.error or "").split())
    error = error if len(error) <= 80 else error[:77] + "..."
    return f"{r.run_id} ({r.status}: {error})" if error else f"{r.run_id} ({r.status})"


def _left_out_warnings(runs: Sequence[RunOutcome], target: str) -> list[str]:
    """Name every run left out of the statistics, and every unfinished run kept."""
    out = []
    ended = [r for r in runs if not r.counted and r.stopped_at is None]
    if ended:
        n = len(ended)
        out.append(
            f"{n} run{'s' if n > 1 else ''} crashed or unfinished, left out: "
            + ", ".join(_reason(r) for r in ended)
        )
    stopped = [r for r in runs if not r.counted and r.stopped_at is not None]
    if stopped:
        n = len(stopped)
        out.append(
            f"{n} run{'s' if n > 1 else ''} not measured at {target}, left out: "
            + ", ".join(f"{r.run_id} (stopped at its own target {r.stopped_at:g})" for r in stopped)
            + "; `perfsuite run --all-epochs` measures beyond it"
        )
    final = FINISHED
    out += [
        f"{r.run_id} ({r.status}) reached the target before it ended; its time is kept"
        for r in runs
        if r.counted and r.status not in final
    ]
    out += [
        f"{r.run_id}: capture incomplete (killed after training ended); its time is kept"
        for r in runs
        if r.counted and r.capture_incomplete
    ]
    return out


def _seed_warnings(runs: Sequence[RunOutcome]) -> list[str]:
    """Repeats that share a seed are not independent samples of the seed-to-seed spread."""
    by_seed: dict[str, list[str]] = {}
    for r in runs:
        if r.seed is not None and r.counted:
            by_seed.setdefault(str(r.seed), []).append(r.run_id)
    return [
        f"seed {seed} is repeated ({', '.join(ids)}): runs with one seed are not independent "
        "samples of the statistical variance"
        for seed, ids in by_seed.items()
        if len(ids) > 1
    ]


def _spread_warnings(
    name: str, s: Summary, max_cov: float, max_ci_rel: float, why: str
) -> list[str]:
    out = []
    if s.cov is not None and s.cov > max_cov:
        out.append(
            f"{name}: CoV {s.cov:.1%} > {max_cov:.1%} (--max-cov): spread too wide to compare"
            f" ({why})"
        )
    if s.ci_half_width_rel is not None and s.ci_half_width_rel > max_ci_rel:
        out.append(
            f"{name}: 95% CI half-width is {s.ci_half_width_rel:.1%} of the mean > "
            f"{max_ci_rel:.1%} (--max-ci): too few runs or too much spread to compare ({why})"
        )
    return out


def analyze_group(
    key: str,
    label: str,
    records: Sequence[dict[str, Any]],
    metric: str | None = None,
    threshold: float | None = None,
    max_cov: float = DEFAULT_MAX_COV,
    max_ci_rel: float = DEFAULT_MAX_CI_REL,
    seed: int = 0,
) -> GroupStability:
    """Statistics over one group's runs; see docs/statistics.md for every rule."""
    runs = [_outcome(r, metric, threshold) for r in records]
    first = run_crossing(records[0], metric, threshold)
    counted = [r for r in runs if r.counted]
    reached = [r for r in counted if r.reached]
    tta = summarize([r.time_s for r in reached if r.time_s is not None], seed=seed)
    ept = summarize([r.epochs for r in reached if r.epochs is not None], seed=seed)
    # time per epoch measures the machine: every run's finished epochs count, left out or not
    tpe = summarize([r.time_per_epoch_s for r in runs if r.time_per_epoch_s is not None], seed=seed)
    dropped, rule = olympic_rule(records)
    olympic = stats.olympic_mean([r.time_s if r.reached else None for r in counted], dropped)

    warnings: list[str] = []
    thresholds = {run_crossing(r, metric, threshold).threshold for r in records}
    metrics = {run_crossing(r, metric, threshold).metric for r in records}
    if len(thresholds) > 1 or len(metrics) > 1:
        warnings.append(
            f"runs use different targets ({', '.join(sorted(metrics))} at "
            f"{', '.join(str(t) for t in sorted(thresholds))}); pass --metric/--threshold"
        )
    cmp = "<=" if task_direction(records[0]) == "lower" else ">="
    warnings += _left_out_warnings(runs, f"{first.metric} {cmp} {first.threshold:g}")
    if len(reached) < len(counted):
        missed = len(counted) - len(reached)
        diverged = sum(1 for r in counted if not r.reached and r.status == "diverged")
        warnings.append(
            f"{missed} of {len(counted)} runs did not reach the threshold (DNC"
            + (f"; {diverged} diverged)" if diverged else ")")
        )
    warnings += _seed_warnings(runs)
    if len(reached) < 2:
        warnings.append("fewer than 2 runs reached: no spread can be estimated")
    elif len(reached) < MIN_RUNS_FOR_CI:
        warnings.append(
            f"only {len(reached)} runs reached: a bootstrap CI from fewer than "
            f"{MIN_RUNS_FOR_CI} runs is too narrow to trust"
        )
    if olympic.value is None and olympic.reason:
        warnings.append(f"olympic mean undefined: {olympic.reason}")
    warnings += _rule_warnings(records, rule)
    warnings += _spread_warnings("time to accuracy", tta, max_cov, max_ci_rel, "overall")
    warnings += _spread_warnings(
        "epochs to threshold", ept, max_cov, max_ci_rel, "statistical variance"
    )
    warnings += _spread_warnings("time per epoch", tpe, max_cov, max_ci_rel, "hardware variance")
    return GroupStability(
        key=key,
        label=label,
        metric=first.metric,
        threshold=first.threshold,
        runs=runs,
        n_runs=len(counted),
        n_reached=len(reached),
        reached_fraction=len(reached) / len(counted) if counted else None,
        time_to_accuracy=tta,
        epochs_to_threshold=ept,
        time_per_epoch=tpe,
        olympic_mean=olympic,
        warnings=warnings,
        direction=task_direction(records[0]),
        olympic_rule=rule,
    )


def stability(
    records: Sequence[dict[str, Any]],
    metric: str | None = None,
    threshold: float | None = None,
    max_cov: float = DEFAULT_MAX_COV,
    max_ci_rel: float = DEFAULT_MAX_CI_REL,
    seed: int = 0,
) -> list[GroupStability]:
    """One GroupStability per group (see `group_key`), in first-seen order.

    Inference-only records have no training run: pass them through `training_records` first.
    """
    if threshold is not None:
        problem = threshold_problem(threshold, records, metric)
        if problem:
            raise ValueError(f"threshold {threshold:g}: {problem}")
    return [
        analyze_group(k, label, recs, metric, threshold, max_cov, max_ci_rel, seed)
        for k, label, recs in group_records(records)
    ]
