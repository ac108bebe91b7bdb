"""MLPerf Training and HPC result logs (`:::MLLOG {json}` lines) -> run records, folder scores.

Time to train is MLPerf's: first `run_stop` minus first `run_start` (`time_ms`), which
includes the evaluations done during the run (unlike DAWNBench's training-only clock). A run
is converged when `run_stop` says `status: success` *and* an evaluation logged before the
`run_stop` line meets the target of the round's rules, read from the installed mlperf-logging
(`mlperf_rules`; which lines count: `mlperf_evals`). The round, submitter and system come from
where the log sits in MLCommons' results layout (`mlperf_submission`); `--round` and
`--target BENCH=VALUE` override. A folder of `result_*.txt` files for one benchmark gets
MLPerf's score (`mlperf_score`). perfsuite's own `mllog.txt` is read with the target of the
run.json beside it; whatever the target, a run.json beside the log that names it records that
run (`perfsuite_run`)"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.devices.accelerators import accelerator, devices_used
from perfsuite.fmt import printable
from perfsuite.importers.common import (
    Imported,
    ImportFailure,
    bounded,
    find_files,
    read_text,
    slug,
)
from perfsuite.importers.mlperf_evals import evaluations as read_evaluations
from perfsuite.importers.mlperf_evals import number as _number
from perfsuite.importers.mlperf_rules import (
    Benchmark,
    RulesUnavailable,
    component_metric,
    custom,
    is_hpc,
    newest_ruleset,
    official,
)
from perfsuite.importers.mlperf_score import score_folders
from perfsuite.importers.mlperf_submission import Place, is_placeholder, place, system_description
from perfsuite.importers.mlperf_submission import framework as submission_framework
from perfsuite.importers.mlperf_submission import hardware as submission_hardware
from perfsuite.record import new_record, quantity
from perfsuite.record.maths import assumed_math
from perfsuite.record.mllog_events import MARKER, parse_lines
from perfsuite.record.tta import first_crossing
from perfsuite.safeio import load_json

__all__ = ["discover", "load_result", "parse_events"]

CONFIG_KEYS = (
    "seed",
    "global_batch_size",
    "train_samples",
    "eval_samples",
    "gradient_accumulation_steps",
    "max_sequence_length",
)
TIMING_FLAG = (
    "MLPerf timing: train_time_s and time to train run from run_start and include evaluation "
    "time (DAWNBench counts training time only)"
)


PERFSUITE_LOG = "mllog.txt"  # what perfsuite's runner writes beside run.json
PATTERNS = ("result_*.txt", "*.log", PERFSUITE_LOG)
RUN_JSON_BYTES = 32 * 1024 * 1024
# key prefixes of MLPerf Inference's LoadGen logs (mlperf_log_detail.txt)
INFERENCE_KEYS = ("loadgen_", "effective_scenario", "requested_scenario", "result_validity")
# judged on several components at once: one scalar --target cannot stand for them
JOINT = ("maskrcnn", "stable_diffusion")
# what a benchmark's name may be: it becomes part of run ids, and so of folder names
BENCHMARK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Options:
    """How to read logs: `targets` per benchmark (`--target BENCH=VALUE`) replace the rules'
    ones; `round` ("5.1.0") overrides the round read from the path."""

    benchmark: str | None = None
    targets: dict[str, float] = field(default_factory=dict)
    higher_is_better: bool = True
    round: str | None = None


def _run_folder_log(folder: Path, cache: dict[Path, Path | None]) -> Path | None:
    """In a perfsuite run folder (run.json inside), the one MLPerf log its record names."""
    if folder not in cache:
        try:
            rec = load_json(folder / "run.json", ImportFailure, RUN_JSON_BYTES)
        except ImportFailure:
            rec = None
        sidecars = rec.get("sidecars") if isinstance(rec, dict) else None
        name = sidecars.get("mllog") if isinstance(sidecars, dict) else None
        cache[folder] = folder / name if isinstance(name, str) and name else None
    return cache[folder]


def discover(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Log files: given files as is; in folders, `result_*.txt`, `*.log` and perfsuite's
    `mllog.txt`, recursively. A perfsuite run folder (one with a run.json) gives only the log
    its record names as `sidecars.mllog`: its other logs (perfsuite.log, ...) are not MLPerf's.
    A missing path or a folder without a log is yielded as is: loading it fails, so that
    `--keep-going` lists it and imports the rest.
    """
    cache: dict[Path, Path | None] = {}
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            yield p
            continue
        try:
            found = list(find_files([p], PATTERNS))
        except ImportFailure:
            found = []
        kept = [
            f
            for f in found
            if not (f.parent / "run.json").is_file() or f == _run_folder_log(f.parent, cache)
        ]
        yield from kept or [p]


def parse_events(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """`:::MLLOG` events of a log file in file order, and bad line numbers."""
    return parse_lines(read_text(path))


def _first(events: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    return next((e for e in events if e.get("key") == key), None)


def _value(events: list[dict[str, Any]], key: str) -> Any:
    ev = _first(events, key)
    return None if ev is None else ev.get("value")


def _margin(bench: Benchmark, metrics: dict[str, float | None]) -> float | None:
    """How far past the target the worst condition is (>= 0: target met), None if unknown.

    Lets the one time-to-accuracy rule (`first_crossing`, metric >= threshold) serve targets
    that are upper bounds (WER, perplexity) and joint targets (Mask R-CNN box and mask).
    """
    for c in bench.limits:  # the rules' sanity bounds (e.g. value < 1): must hold too
        v = metrics.get(component_metric(bench, c.component))
        if v is not None and not c.met(v):
            return -math.inf
    out = math.inf
    for c in bench.conditions:
        v = metrics.get(component_metric(bench, c.component))
        if v is None:
            return None
        out = min(out, v - c.target if c.higher_is_better else c.target - v)
    return out


def _own_run(path: Path, strict: bool) -> tuple[dict[str, Any], Path] | None:
    """The record of the perfsuite run whose run.json, beside the log, names this log as its
    `sidecars.mllog`, and that run.json; None without one. An unreadable run.json is an error
    only when `strict` (the target is to come from it); otherwise it names no run.
    """
    run_json = path.parent / "run.json"
    if not run_json.is_file():
        return None
    try:
        rec = load_json(run_json, ImportFailure, RUN_JSON_BYTES)
    except ImportFailure:
        if strict:
            raise
        return None
    sidecars = rec.get("sidecars") if isinstance(rec, dict) else None
    if not isinstance(sidecars, dict) or sidecars.get("mllog") != path.name:
        return None
    return rec, run_json


def _perfsuite_target(rec: dict[str, Any], run_json: Path, name: str) -> Benchmark:
    """The target of the perfsuite run `rec` (its run.json beside the log). perfsuite writes
    no target into the log itself, and its task names (cifar10, ...) are not MLPerf's.
    """
    task = rec.get("task")
    if not isinstance(task, dict):
        raise ImportFailure(f"{run_json}: field task: missing or not an object")
    if task.get("name") != name:
        raise ImportFailure(
            f"{run_json}: field task.name: {task.get('name')!r}, but the log's benchmark is "
            f"{name!r}; pass --target"
        )
    metric, threshold = task.get("metric"), _number(task.get("threshold"))
    direction = task.get("direction", "higher")
    if not isinstance(metric, str) or not metric:
        raise ImportFailure(f"{run_json}: field task.metric: missing or not a string")
    if threshold is None:
        raise ImportFailure(f"{run_json}: field task.threshold: missing or not a number")
    if direction not in ("higher", "lower"):
        raise ImportFailure(f"{run_json}: field task.direction: {direction!r} is not higher/lower")
    return custom(name, threshold, direction == "higher", metric)


def _ruleset(name: str, pl: Place, round_: str | None, flags: list[str]) -> tuple[str, str]:
    """(usage, ruleset) whose rules score this log: `--round`, else the `*_results_vX.Y`
    folder above it, else (flagged) the newest installed ruleset that has the benchmark."""
    hpc = is_hpc(name)
    usage = pl.usage or ("hpc" if hpc else "training")
    if round_ is not None:
        return usage, round_
    if pl.ruleset is not None:
        return usage, pl.ruleset
    newest = newest_ruleset(usage, name)
    if newest is None:
        raise RulesUnavailable(
            f"{name!r} is in no {usage} ruleset of the installed mlperf-logging; pass "
            f"--target {name}=VALUE"
        )
    flags.append(
        f"round unknown (no {usage}_results_vX.Y folder above the log, no --round): scored "
        f"by the newest {usage} rules that have {name}, {newest}"
    )
    return usage, newest


def _select_benchmark(
    path: Path,
    logged: Any,
    opts: Options,
    pl: Place,
    flags: list[str],
) -> tuple[Benchmark, tuple[dict[str, Any], Path] | None, bool]:
    """The benchmark and its target; the perfsuite run whose run.json beside the log names
    this log (`_own_run`), whatever the target came from; whether the target came from it.
    """
    name = opts.benchmark or (str(logged) if logged is not None else None)
    if name is None:
        raise ImportFailure(f"{path}: field submission_benchmark: missing (pass --benchmark)")
    if not BENCHMARK_NAME.fullmatch(name):
        shown = printable(name if len(name) <= 40 else name[:37] + "...")
        raise ImportFailure(
            f"{path}: field submission_benchmark: {shown!r} ({len(name)} characters) is not a "
            "benchmark name (letters, digits, '_', '.', '-'; at most 64 characters)"
        )
    if opts.benchmark and logged is not None and str(logged) != opts.benchmark:
        flags.append(f"log says submission_benchmark {logged!r}; imported as {opts.benchmark!r}")
    target = opts.targets.get(name)
    if target is not None:
        if name in JOINT:
            raise ImportFailure(
                f"{path}: field submission_benchmark: {name!r} is judged on several "
                "conditions at once; --target sets one scalar target and cannot replace them"
            )
        return custom(name, target, opts.higher_is_better), _own_run(path, False), False
    try:
        usage, version = _ruleset(name, pl, opts.round, flags)
        return official(name, usage, version), _own_run(path, strict=False), False
    except RulesUnavailable as exc:
        run = _own_run(path, strict=True)
        if run is not None:  # a perfsuite run's own log: the run's target
            return _perfsuite_target(*run, name), run, True
        raise RulesUnavailable(f"{path}: field submission_benchmark: {exc}") from None


def _origin(
    run: tuple[dict[str, Any], Path] | None, target_from_run: bool, flags: list[str]
) -> dict[str, Any] | None:
    """`extra.mlperf.perfsuite_run` (the run's id and run.json) and its flag; None if no run."""
    if run is None:
        return None
    rec, run_json = run
    run_id = rec.get("run_id")
    what = "target from" if target_from_run else "log of"
    flags.append(
        f"{what} perfsuite run {run_id!r} ({run_json.name} beside the log); this record "
        "is a second view of that run on MLPerf's clock: keep it out of that run's records"
    )
    return {"run_id": run_id if isinstance(run_id, str) else None, "run_json": str(run_json)}


def _hardware(platform: Any, run: tuple[dict[str, Any], Path] | None) -> dict[str, Any]:
    """`submission_platform` as the record's hardware name. The accelerator kind is read from
    it by the DAWNBench importer's rule (`devices.accelerators.accelerator`: "NVIDIA H100 80GB
    HBM3" is cuda; None where it names none). A perfsuite run's own log (its run.json beside
    it, `_own_run`) ran on that run's hardware: its kind, accelerators used and instance type
    are taken from the run's record where the platform is the run's hardware name."""
    name = None if platform is None else str(platform)
    hardware: dict[str, Any] = {"name": name, "accelerator": accelerator(name)}
    hardware.update(count=None, instance_type=None)
    own = run[0].get("hardware") if run else None
    if isinstance(own, dict) and name is not None and own.get("name") == name:
        hardware["accelerator"] = own.get("accelerator") or hardware["accelerator"]
        hardware["count"] = devices_used(run[0])  # a data-parallel run's GPUs
        itype = own.get("instance_type")
        hardware["instance_type"] = itype if isinstance(itype, str) and itype else None
    return hardware


def _epoch_times(events: list[dict[str, Any]]) -> list[float]:
    starts: dict[Any, float] = {}
    times = []
    for ev in events:
        num = ev["metadata"].get("epoch_num")
        if isinstance(num, (list, dict)):
            continue  # not an epoch number: unhashable, and meaningless as one
        if ev["key"] == "epoch_start":
            starts.setdefault(num, ev["time_ms"])
        elif ev["key"] == "epoch_stop" and num in starts:
            times.append(round((ev["time_ms"] - starts.pop(num)) / 1000.0, 6))
    return times


def _what_else(path: Path, events: list[dict[str, Any]]) -> str | None:
    """What a file is when it is no MLPerf training or HPC result log, in a few words."""
    if not events:
        head = read_text(path)[:4096]
        if "MLPerf Results Summary" in head:
            return "an MLPerf Inference result summary (LoadGen), not a training log"
        return f"not an MLPerf log (no {MARKER} lines)"
    keys = {e["key"] for e in events}
    if any(k.startswith(INFERENCE_KEYS) for k in keys):
        return "an MLPerf Inference log (LoadGen keys), not a training log"
    if not keys & {"run_start", "submission_benchmark", "init_start"}:
        return f"{MARKER} lines without run_start or submission_benchmark: no MLPerf result log"
    return None


def _round_label(ruleset: str | None) -> str | None:
    """ "5.1" for ruleset "5.1.0": how MLCommons names a round."""
    if ruleset is None:
        return None
    major, minor, *_ = ruleset.split(".")
    return f"{major}.{minor}"


def _run_id(rnd: str | None, pl: Place, path: Path, name: str) -> str:
    """mlperf-v<round>-<submitter>-<system>-<benchmark>-<file stem> for a log in a submission
    layout: readable, stable, and unique within MLCommons' results; else the folder name."""
    stem = slug(path.stem)
    if pl.submitter and pl.system:
        tag = f"v{rnd}-" if rnd else ""
        return bounded(f"mlperf-{tag}{slug(pl.submitter)}-{slug(pl.system)}-{slug(name)}-{stem}")
    return bounded(f"mlperf-{slug(name)}-{slug(path.parent.name or 'log')}-{stem}")


def _read_log(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The `:::MLLOG` events of an MLPerf training or HPC result log and its first flags;
    ImportFailure, in one line naming the file, for anything else."""
    if path.is_dir():
        raise ImportFailure(
            f"{path}: no MLPerf log in this folder (result_*.txt, *.log or a perfsuite run "
            "folder's mllog.txt)"
        )
    if not path.exists():
        raise ImportFailure(f"{path}: no such file or folder")
    events, bad = parse_events(path)
    other = _what_else(path, events)
    if other:
        raise ImportFailure(f"{path}: {other}")
    flags: list[str] = [TIMING_FLAG]
    if bad:
        flags.append(f"{len(bad)} unreadable :::MLLOG line(s) skipped (first: line {bad[0]})")
    return events, flags


def _run_edges(
    path: Path, events: list[dict[str, Any]], flags: list[str]
) -> tuple[dict[str, Any], dict[str, Any] | None, str | None]:
    """(first run_start, first run_stop or None, run_stop's status in lower case or None)."""
    start = _first(events, "run_start")
    if start is None:
        raise ImportFailure(f"{path}: field run_start: missing")
    starts = sum(1 for e in events if e["key"] == "run_start")
    if starts > 1:
        flags.append(f"{starts} run_start lines (several ranks?); the first one is used")
    stop = _first(events, "run_stop")
    stop_status = None if stop is None else str(stop["metadata"].get("status", "")).lower()
    if stop is not None and stop["time_ms"] < start["time_ms"]:
        raise ImportFailure(
            f"{path}: line {stop['lineno']}: field run_stop.time_ms: before run_start"
        )
    return start, stop, stop_status


@dataclass(frozen=True)
class _Outcome:
    """How a log's run ended: record status and error, convergence, time to train, crossing."""

    status: str
    error: str | None
    converged: bool
    time_to_train: float | None
    crossing: Any


def _outcome(
    bench: Benchmark,
    evaluations: list[dict[str, Any]],
    start: dict[str, Any],
    stop: dict[str, Any] | None,
    stop_status: str | None,
    flags: list[str],
) -> _Outcome:
    """Converged: run_stop says success and an evaluation meets every condition of the target
    (`_margin` through the one time-to-accuracy rule). Flags why a run did not converge."""
    synthetic = [{**e, "metrics": {"_margin": _margin(bench, e["metrics"])}} for e in evaluations]
    crossing = first_crossing(synthetic, "_margin", 0.0)
    converged = stop_status == "success" and crossing.reached
    time_to_train = None if stop is None else (stop["time_ms"] - start["time_ms"]) / 1000.0
    if stop is None:
        status, error = "crashed", "log ends without run_stop"
        flags.append("no run_stop: the log is truncated (run killed or still running)")
    elif converged:
        status, error = "reached", None
    else:
        status, error = "not_reached", None
        if stop_status != "success":
            flags.append(
                f"run_stop status {stop_status or 'missing'!r}: not converged (stricter than "
                "MLCommons' checker, which does not read the status: a run that says it did "
                "not succeed is not counted as one)"
            )
        if not crossing.reached:
            flags.append(f"no {bench.eval_key} meets the target: not converged")
    if stop_status == "success" and not crossing.reached:
        flags.append(f"run_stop says success but no {bench.eval_key} meets the target")
    first = bench.conditions[0]
    if not first.higher_is_better:
        flags.append(f"lower is better: {bench.metric} must be <= {first.target:g}")
    return _Outcome(status, error, converged, time_to_train, crossing)


def _division_flag(division: Any, bench: Benchmark) -> str | None:
    """An open-division log is judged here against the closed division's target: said so."""
    if not isinstance(division, str) or division.strip().lower() != "open":
        return None
    return (
        f"open division: judged against the closed division's target ({bench.describe()}, "
        f"{bench.rules}); the open division's own rules may differ"
    )


def _task(bench: Benchmark) -> dict[str, Any]:
    """The record's task: the benchmark, its first condition as the threshold, every
    condition in `targets`."""
    first = bench.conditions[0]
    return {
        "name": bench.name,
        "workload": bench.name,
        "metric": bench.metric,
        "threshold": first.target,
        "dataset": None,
        "direction": "higher" if first.higher_is_better else "lower",
        "targets": [
            {
                "metric": component_metric(bench, c.component),
                "target": c.target,
                "direction": "higher" if c.higher_is_better else "lower",
            }
            for c in bench.conditions
        ],
    }


def _config(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The logged hyper-parameters: CONFIG_KEYS' first values, every `opt_*` key's first."""
    config = {k: _value(events, k) for k in CONFIG_KEYS if _first(events, k)}
    config.update(
        {e["key"]: e.get("value") for e in reversed(events) if e["key"].startswith("opt_")}
    )
    return config


def _time_to_accuracy(bench: Benchmark, out: _Outcome) -> dict[str, Any]:
    c, reached = out.crossing, out.converged
    return {
        "metric": bench.metric,
        "threshold": bench.conditions[0].target,
        "reached": reached,
        "time_s": out.time_to_train if reached else None,
        "epoch": c.epoch if reached else None,
        "evaluation_index": c.evaluation_index if reached else None,
        "provenance": "imported",
    }


def _mlperf_extra(
    bench: Benchmark,
    events: list[dict[str, Any]],
    pl: Place,
    rnd: str | None,
    out: _Outcome,
    evaluations: list[dict[str, Any]],
    origin: dict[str, Any] | None,
    stop_status: str | None,
) -> dict[str, Any]:
    """`extra.mlperf`: the rules, round and submission, and the run's MLPerf figures."""
    c = out.crossing
    return {
        "rules": bench.rules,
        "usage": bench.usage,
        "round": rnd,
        "submitter": pl.submitter,
        "system": pl.system,
        "org": _value(events, "submission_org"),
        "division": _value(events, "submission_division"),
        "submission_status": _value(events, "submission_status"),
        "run_stop_status": stop_status,
        "time_to_train": quantity(out.time_to_train, "s", "imported", "run_stop - run_start"),
        "first_target_eval_s": (
            evaluations[c.evaluation_index]["train_time_s"] if c.reached else None
        ),
        "required_runs": bench.required_runs,
        # the benchmark's scoring rule, so that `perfsuite stability` applies it too
        "dropped_each_end": bench.max_dropped,
        "perfsuite_run": origin,
    }


def _summary(
    record: dict[str, Any], path: Path, bench: Benchmark, out: _Outcome, stop_status: str | None
) -> dict[str, Any]:
    """The import's one-line view of a record (`perfsuite import mlperf --json`)."""
    evaluations = record["evaluations"]
    return {
        "run_id": record["run_id"],
        "file": str(path),
        "benchmark": bench.name,
        "round": record["extra"]["mlperf"]["round"],
        "rules": bench.rules,
        "status": out.status,
        "run_stop_status": stop_status,
        "converged": out.converged,
        "metric": bench.metric,
        "target": bench.conditions[0].target,
        "final": evaluations[-1]["metrics"].get(bench.metric) if evaluations else None,
        "time_to_train_s": out.time_to_train,
        "flags": record["flags"],
    }


def _created_at(start: dict[str, Any], flags: list[str]) -> str | None:
    try:
        return _dt.datetime.fromtimestamp(start["time_ms"] / 1000.0, _dt.timezone.utc).isoformat(
            timespec="seconds"
        )
    except (ValueError, OverflowError, OSError):
        flags.append(f"run_start time_ms {start['time_ms']:g} is no date; created_at left out")
        return None


def load_result(path: str | Path, opts: Options | None = None) -> Imported:
    """One MLPerf result log as a run record (see the module docstring for the rules)."""
    path = Path(path)
    opts = opts or Options()
    events, flags = _read_log(path)
    pl = place(path)
    bench, run, target_from_run = _select_benchmark(
        path, _value(events, "submission_benchmark"), opts, pl, flags
    )
    if bench.usage == "hpc":
        flags.append(f"MLPerf HPC log ({bench.name}): time to train scored as for training")
    origin = _origin(run, target_from_run, flags)
    start, stop, stop_status = _run_edges(path, events, flags)
    train_samples = _number(_value(events, "train_samples"))
    evaluations = read_evaluations(path, events, bench, start, stop, train_samples, flags)
    out = _outcome(bench, evaluations, start, stop, stop_status, flags)
    division = _division_flag(_value(events, "submission_division"), bench)
    if division:
        flags.append(division)
    desc = system_description(pl, flags)
    # the result's round: where the path or --round names it (not the newest rules guessed)
    rnd = _round_label(bench.ruleset) if pl.ruleset or opts.round else None
    run_id = _run_id(rnd, pl, path, bench.name)
    record = new_record(
        run_id=run_id, task=_task(bench), source_kind="mlperf", config=_config(events)
    )
    created = _created_at(start, flags)
    if created is not None:
        record["created_at"] = created
    record["status"], record["error"] = out.status, out.error
    # the run.json is a source only when it set the target (and so the result)
    files = [str(path)] + ([origin["run_json"]] if origin and target_from_run else [])
    record["source"].update({"files": files, "entry_type": "training"})
    platform = _value(events, "submission_platform")
    if desc is not None or is_placeholder(platform):
        record["hardware"] = submission_hardware(desc, platform, flags)
        record["framework"] = submission_framework(desc)
    else:
        record["hardware"] = _hardware(platform, run)
    record["model"] = bench.name
    record["math"] = assumed_math(record)  # the result does not say: PyTorch's defaults
    record["evaluations"] = evaluations
    record["time_to_accuracy"] = _time_to_accuracy(bench, out)
    epoch_times = _epoch_times(events)
    if epoch_times:
        record["throughput"] = {"epoch_times_s": epoch_times}
    record["extra"] = {
        "mlperf": _mlperf_extra(bench, events, pl, rnd, out, evaluations, origin, stop_status)
    }
    record["flags"] = flags
    return Imported(record, _summary(record, path, bench, out, stop_status))


@dataclass
class MLPerfImporter:
    """MLPerf logs behind the common pipeline; finalize scores result folders, counting a
    `result_*.txt` that could not be read as a run that did not converge, as MLCommons'
    summarizer does."""

    options: Options = field(default_factory=Options)
    failed: list[Path] = field(default_factory=list)
    kind = "MLPerf log (result_*.txt, *.log, mllog.txt)"

    def discover(self, paths: Iterable[str | Path]) -> Iterator[Path]:
        return discover(paths)

    def load(self, path: Path) -> Imported:
        try:
            return load_result(path, self.options)
        except ImportFailure:
            self.failed.append(path)
            raise

    def finalize(self, items: list[Imported]) -> dict[str, Any]:
        return {"scores": score_folders(items, self.failed)}
