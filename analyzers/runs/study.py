"""Study analysis: does a throughput win survive to time-to-accuracy?

Per configuration of a lesion, factor or batch study: time to accuracy (mean and spread over
the repeats that reached), epochs to threshold (statistical efficiency), steady-state time per
epoch and throughput (hardware efficiency), best metric, the fraction of repeats that
converged, and "DNC" (did not converge) when none did. Speed-ups are against the reference
(the study's first configuration: the full recipe of a lesion study, the baseline of a factor
study, the first batch size): time-to-accuracy speed-up = reference TTA / TTA, throughput
speed-up = throughput / reference throughput, side by side, so the gap between them (the
statistical cost of an optimization) is visible. A scaling study's configurations differ in
data-parallel processes: there the efficiencies divide each speed-up by the process ratio (1.0:
linear scaling), and the collectives' share of the step is shown where it was measured. Every
statistic is over the runs with a final status: a crashed run is counted and warned about,
never measured. Pure: records and the manifest in, dataclasses out. Definitions:
docs/studies.md.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perfsuite.analyzers.results.distributed import record_comm_share, world_size
from perfsuite.analyzers.results.record_view import FINISHED, task_direction
from perfsuite.analyzers.runs.stability import Summary, epoch_times, run_crossing, summarize
from perfsuite.devices.maths import converted_autocast, record_device
from perfsuite.flops.mfu import mfu


@dataclass(frozen=True)
class RunPoint:
    """One run of a configuration."""

    run_id: str
    seed: Any
    status: str
    reached: bool
    time_s: float | None  # time to accuracy
    epochs: float | None  # epochs to threshold
    epochs_run: int  # evaluations recorded (a diverged run keeps its finished epochs)
    best: float | None  # best metric over its evaluations
    epoch_time_s: float | None  # median epoch time, first epoch left out when there are others
    samples_per_s: float | None  # training samples per epoch / epoch_time_s
    nproc: int = 1  # data-parallel processes (record's distributed.world_size)
    comm_share: float | None = None  # collectives' in-flight time / step (profile window)
    corruption_accuracy: float | None = None  # threshold model, mean over corruption families
    tokens_per_s: float | None = None  # transformer runs (perfsuite.flops.mfu)
    mfu: float | None = None  # model FLOPs utilization, fraction of the matmul roof


@dataclass(frozen=True)
class ConfigResult:
    """One configuration: its runs, their statistics and the speed-ups against the reference."""

    index: int
    name: str
    description: str
    switches: list[str]
    batch_size: int | None
    runs: list[RunPoint]
    n_runs: int  # runs with a final status (reached, not_reached, diverged)
    n_reached: int
    n_diverged: int
    n_unfinished: int  # crashed or still running: not counted as converged or not
    converged_fraction: float | None  # n_reached / n_runs
    status: str  # "converged" (all reached), "partial", "DNC" (none reached), "no runs"
    time_to_accuracy: Summary
    epochs_to_threshold: Summary
    epoch_time: Summary
    samples_per_s: Summary
    best: float | None  # best metric over its finished runs
    best_mean: float | None  # mean over its finished runs of each run's best
    epochs_x_epoch_time: float | None  # mean epochs to threshold x mean s/epoch
    tta_speedup: float | None
    throughput_speedup: float | None
    nproc: int = 1  # data-parallel processes of its runs (scaling studies)
    comm_share: Summary = field(default_factory=lambda: summarize([]))  # over runs measuring it
    scaling_efficiency: float | None = None  # throughput speed-up / (nproc / reference nproc)
    tta_efficiency: float | None = None  # TTA speed-up / (nproc / reference nproc)
    corruption_accuracy: Summary = field(default_factory=lambda: summarize([]))
    # mean corruption accuracy minus the reference configuration's (fraction; negative: the
    # configuration's threshold models are less robust)
    corruption_delta: float | None = None
    tokens_per_s: Summary = field(default_factory=lambda: summarize([]))  # transformer runs
    mfu: Summary = field(default_factory=lambda: summarize([]))


@dataclass(frozen=True)
class StudyResult:
    study_id: str
    kind: str
    workload: str
    metric: str | None
    threshold: float | None
    reference: str
    configs: list[ConfigResult]
    warnings: list[str] = field(default_factory=list)
    direction: str = "higher"  # "lower": the target is reached at metric <= threshold


def _best(rec: Mapping[str, Any], metric: str) -> float | None:
    values = [
        v
        for ev in rec.get("evaluations") or []
        if (v := (ev.get("metrics") or {}).get(metric)) is not None
    ]
    return _extreme(values, task_direction(rec))


def _samples_per_epoch(rec: Mapping[str, Any]) -> float | None:
    """From the cumulative `samples` of the first evaluation that has them; the last partial
    batch is counted as the samples it holds, not as a full batch."""
    for ev in rec.get("evaluations") or []:
        if ev.get("samples") and ev.get("epoch"):
            return float(ev["samples"]) / float(ev["epoch"])
    return None


def _corruption_mean(rec: Mapping[str, Any]) -> float | None:
    """The record's mean corruption accuracy (`perfsuite eval shift --corruptions`)."""
    value = ((rec.get("generalization") or {}).get("corruptions") or {}).get("mean")
    return float(value) if isinstance(value, (int, float)) else None


def run_point(rec: Mapping[str, Any]) -> RunPoint:
    """The numbers of one run record."""
    crossing = run_crossing(dict(rec))
    times, _ = epoch_times(dict(rec))
    steady = times[1:] if len(times) > 1 else times
    epoch_s = statistics.median(steady) if steady else None
    per_epoch = _samples_per_epoch(rec)
    if per_epoch is not None and epoch_s:
        rate: float | None = per_epoch / epoch_s
    else:
        rate = ((rec.get("throughput") or {}).get("samples_per_s") or {}).get("value")
    model = mfu(rec)
    return RunPoint(
        run_id=str(rec.get("run_id")),
        seed=(rec.get("config") or {}).get("seed"),
        status=str(rec.get("status")),
        reached=crossing.reached,
        time_s=crossing.time_s,
        epochs=None if crossing.epoch is None else float(crossing.epoch),
        epochs_run=len(rec.get("evaluations") or []),
        best=_best(rec, crossing.metric),
        epoch_time_s=epoch_s,
        samples_per_s=rate,
        nproc=world_size(rec),
        comm_share=record_comm_share(rec),
        corruption_accuracy=_corruption_mean(rec),
        tokens_per_s=model.tokens_per_s if model else None,
        mfu=model.mfu if model else None,
    )


def _extreme(values: Sequence[float], direction: str) -> float | None:
    if not values:
        return None
    return min(values) if direction == "lower" else max(values)


def _status(n_runs: int, n_reached: int) -> str:
    if n_runs == 0:
        return "no runs"
    if n_reached == 0:
        return "DNC"
    return "converged" if n_reached == n_runs else "partial"


def _ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def analyze_config(config: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> ConfigResult:
    """Statistics of one configuration (speed-ups are filled in by `analyze_study`)."""
    runs = [run_point(r) for r in records]
    final = [r for r in runs if r.status in FINISHED]
    reached = [r for r in final if r.reached]
    tta = summarize([r.time_s for r in reached if r.time_s is not None])
    ept = summarize([r.epochs for r in reached if r.epochs is not None])
    # Crashed and unfinished runs are left out of every statistic (their slow or half epochs
    # would pass for the configuration's): they only count in n_unfinished and the warnings.
    ept_mean, tpe = ept.mean, summarize([r.epoch_time_s for r in final if r.epoch_time_s])
    bests = [r.best for r in final if r.best is not None]
    return ConfigResult(
        index=int(config.get("index", 0)),
        name=str(config.get("name")),
        description=str(config.get("description", "")),
        switches=list(config.get("switches") or []),
        batch_size=config.get("batch_size"),
        runs=runs,
        n_runs=len(final),
        n_reached=len(reached),
        n_diverged=sum(1 for r in final if r.status == "diverged"),
        n_unfinished=len(runs) - len(final),
        converged_fraction=len(reached) / len(final) if final else None,
        status=_status(len(final), len(reached)),
        time_to_accuracy=tta,
        epochs_to_threshold=ept,
        epoch_time=tpe,
        samples_per_s=summarize([r.samples_per_s for r in final if r.samples_per_s]),
        best=_extreme(bests, task_direction(records[0]) if records else "higher"),
        best_mean=statistics.fmean(bests) if bests else None,
        epochs_x_epoch_time=ept_mean * tpe.mean if ept_mean is not None and tpe.mean else None,
        tta_speedup=None,
        throughput_speedup=None,
        nproc=int(config.get("nproc") or 1),
        comm_share=summarize([r.comm_share for r in final if r.comm_share is not None]),
        corruption_accuracy=summarize(
            [r.corruption_accuracy for r in final if r.corruption_accuracy is not None]
        ),
        tokens_per_s=summarize([r.tokens_per_s for r in final if r.tokens_per_s is not None]),
        mfu=summarize([r.mfu for r in final if r.mfu is not None]),
    )


def _target(
    records_by_config: Mapping[str, Sequence[Mapping[str, Any]]],
    spec: Mapping[str, Any],
    default_metric: str | None,
    default_threshold: float | None,
) -> tuple[str | None, float | None, str]:
    """(metric, threshold, direction) the runs were held to: the first record's, else the
    study's threshold and the workload's metric and threshold (a study with no run yet)."""
    for recs in records_by_config.values():
        if recs:
            tta = recs[0].get("time_to_accuracy") or {}
            task = recs[0].get("task") or {}
            metric = tta.get("metric", task.get("metric"))
            threshold = tta.get("threshold", task.get("threshold"))
            return metric, threshold, task_direction(recs[0])
    threshold = spec.get("threshold")
    return default_metric, default_threshold if threshold is None else threshold, "higher"


def analyze_study(
    manifest: Mapping[str, Any],
    records_by_config: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    default_metric: str | None = None,
    default_threshold: float | None = None,
) -> StudyResult:
    """The whole study; `records_by_config` maps configuration name -> its run records.
    `default_metric`/`default_threshold` (the workload's) name the target while no run has a
    record; the study's own threshold, when it set one, comes before the workload's."""
    spec = manifest.get("spec") or {}
    configs = [
        analyze_config(c, records_by_config.get(str(c.get("name")), []))
        for c in manifest.get("configurations") or []
    ]
    warnings: list[str] = []
    ref = configs[0] if configs else None
    if ref is not None:
        ref_tta = ref.time_to_accuracy.mean if ref.n_reached else None
        # No finished run: nothing measured to divide by, so no speed-up of either kind (a
        # crashed run's epochs are not the reference's throughput).
        ref_rate = ref.samples_per_s.mean if ref.n_runs else None
        if ref.status == "DNC":
            warnings.append(
                f"the reference {ref.name!r} did not converge: no time-to-accuracy speed-ups"
            )
        elif ref.status == "no runs":
            warnings.append(
                f"the reference {ref.name!r} has no finished runs: no time-to-accuracy or "
                "throughput speed-ups"
            )
        for i, c in enumerate(configs):
            tta_speedup = _ratio(ref_tta, c.time_to_accuracy.mean) if c.n_reached else None
            thr = _ratio(c.samples_per_s.mean, ref_rate) if c.n_runs else None
            procs = c.nproc / ref.nproc
            mine, theirs = c.corruption_accuracy.mean, ref.corruption_accuracy.mean
            delta = mine - theirs if mine is not None and theirs is not None else None
            configs[i] = replace(
                c,
                tta_speedup=tta_speedup,
                throughput_speedup=thr,
                scaling_efficiency=None if thr is None else thr / procs,
                tta_efficiency=None if tta_speedup is None else tta_speedup / procs,
                corruption_delta=delta,
            )
    for c in configs:
        if c.status == "partial":
            warnings.append(
                f"{c.name}: {c.n_reached} of {c.n_runs} runs reached; its time to accuracy is "
                "the mean of those that did"
            )
        if c.n_unfinished:
            warnings.append(f"{c.name}: {c.n_unfinished} run(s) crashed or unfinished (resume)")
        missing = int(spec.get("repeats", 1)) - len(c.runs)
        if missing > 0:
            warnings.append(f"{c.name}: {missing} repeat(s) not run yet")
    converted = _converted_autocast(records_by_config)
    if converted:
        dtypes = ", ".join(sorted({d for d in converted.values()}))
        warnings.append(
            f"{', '.join(converted)}: {dtypes} autocast on a CPU without {dtypes} instructions "
            "(converted in software, float32 arithmetic): their speed shows this CPU, not "
            "what the option does where it has hardware"
        )
    metric, threshold, direction = _target(
        records_by_config, spec, default_metric, default_threshold
    )
    return StudyResult(
        study_id=str(manifest.get("study_id")),
        kind=str(spec.get("kind")),
        workload=str(spec.get("workload")),
        metric=metric,
        threshold=threshold,
        direction=direction,
        reference=ref.name if ref else "",
        configs=configs,
        warnings=warnings,
    )


def _converted_autocast(
    records_by_config: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, str]:
    """Configuration -> autocast dtype, where a run's record says the CPU lacked instructions
    for it (mathmode.converted_autocast, the rule the roofline judges by)."""
    out: dict[str, str] = {}
    for name, recs in records_by_config.items():
        for rec in recs:
            if auto := converted_autocast(rec.get("math") or {}, record_device(rec)):
                out[name] = auto
                break
    return out
