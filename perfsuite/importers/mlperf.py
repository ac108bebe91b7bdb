"""MLPerf Training result logs (`:::MLLOG {json}` lines) -> run records, and folder scores.

Time to train is MLPerf's: first `run_stop` minus first `run_start` (`time_ms`), which
includes the evaluations done during the run (unlike DAWNBench's training-only clock). A run
is converged when `run_stop` says `status: success` *and* an `eval_accuracy` meets the
benchmark's target (`mlperf_rules`). A folder of `result_*.txt` files for one benchmark gets
MLPerf's score: the olympic mean of the runs' minutes, a failed run counting as the slowest.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzers.stats import olympic_mean
from analyzers.tta import first_crossing
from perfsuite.importers.common import Imported, ImportFailure, find_files, read_text, slug
from perfsuite.importers.mlperf_rules import (
    BENCHMARKS,
    RULES_VERSION,
    Benchmark,
    component_metric,
    custom,
)
from perfsuite.record import new_record, quantity
from perfsuite.safeio import load_json

MARKER = ":::MLLOG"
MAX_TIME_MS = 1e15  # milliseconds since 1970: year 33658; anything beyond is not a clock
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


def discover(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Log files: given files as is; in folders, `result_*.txt` and `*.log`, recursively."""
    return find_files(paths, ("result_*.txt", "*.log"))


def parse_events(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """`:::MLLOG` events in file order (any prefix before the marker), and bad line numbers."""
    events, bad = [], []
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        at = line.find(MARKER)
        if at < 0:
            continue
        try:
            ev = json.loads(line[at + len(MARKER) :])
            if not isinstance(ev, dict) or not isinstance(ev.get("key"), str):
                raise ValueError("no string key")
            ms = ev["time_ms"]
            if isinstance(ms, bool) or not isinstance(ms, (int, float)):
                raise ValueError("time_ms is not a number")
            ev["time_ms"] = float(ms)
            if not abs(ev["time_ms"]) < MAX_TIME_MS:  # NaN, Infinity, far outside any clock
                raise ValueError("time_ms out of range")
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
            bad.append(lineno)
            continue
        ev["lineno"] = lineno
        ev.setdefault("metadata", {})
        if not isinstance(ev["metadata"], dict):
            ev["metadata"] = {}
        events.append(ev)
    return events, bad


def _first(events: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    return next((e for e in events if e.get("key") == key), None)


def _value(events: list[dict[str, Any]], key: str) -> Any:
    ev = _first(events, key)
    return None if ev is None else ev.get("value")


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(float(v)) else None


def _metrics(bench: Benchmark, value: Any) -> dict[str, float | None]:
    """eval_accuracy value (a number, or a dict such as {"BBOX": .., "SEGM": ..})."""
    if isinstance(value, dict):
        return {component_metric(bench, k): _number(v) for k, v in value.items()}
    return {bench.metric: _number(value)}


def _margin(bench: Benchmark, metrics: dict[str, float | None]) -> float | None:
    """How far past the target the worst condition is (>= 0: target met), None if unknown.

    Lets the one time-to-accuracy rule (`first_crossing`, metric >= threshold) serve targets
    that are upper bounds (WER, perplexity) and joint targets (Mask R-CNN box and mask).
    """
    out = math.inf
    for c in bench.conditions:
        v = metrics.get(component_metric(bench, c.component))
        if v is None:
            return None
        out = min(out, v - c.target if c.higher_is_better else c.target - v)
    return out


def _select_benchmark(
    path: Path,
    logged: Any,
    benchmark: str | None,
    target: float | None,
    higher: bool,
    flags: list[str],
) -> Benchmark:
    name = benchmark or (str(logged) if logged is not None else None)
    if name is None:
        raise ImportFailure(f"{path}: field submission_benchmark: missing (pass --benchmark)")
    if benchmark and logged is not None and str(logged) != benchmark:
        flags.append(f"log says submission_benchmark {logged!r}; imported as {benchmark!r}")
    if target is not None:
        return custom(name, target, higher)
    if name not in BENCHMARKS:
        raise ImportFailure(
            f"{path}: field submission_benchmark: no known target for {name!r} "
            f"(known: {', '.join(sorted(BENCHMARKS))}); pass --target"
        )
    return BENCHMARKS[name]


def _evaluations(
    events: list[dict[str, Any]], bench: Benchmark, start_ms: float, flags: list[str]
) -> list[dict[str, Any]]:
    train_samples = _number(_value(events, "train_samples"))
    out: list[dict[str, Any]] = []
    ordinal_used = early = 0
    for ev in events:
        if ev["key"] != "eval_accuracy":
            continue
        if ev["time_ms"] < start_ms:
            early += 1
            continue
        meta = ev["metadata"]
        samples = _number(meta.get("samples_count"))
        epoch = _number(meta.get("epoch_num"))
        if epoch is None and samples is not None and train_samples:
            epoch = samples / train_samples
        if epoch is None:
            epoch = float(len(out) + 1)
            ordinal_used += 1
        metrics = _metrics(bench, ev.get("value"))
        out.append(
            {
                "epoch": max(epoch, 0.0),
                "train_time_s": round((ev["time_ms"] - start_ms) / 1000.0, 6),
                "metrics": metrics,
                "samples": None if samples is None else int(samples),
            }
        )
    if early:
        flags.append(f"{early} eval_accuracy line(s) before run_start ignored")
    if ordinal_used:
        flags.append(
            f"{ordinal_used} evaluation(s) without epoch_num (and samples_count/train_samples): "
            "epoch set to the evaluation's ordinal"
        )
    return out


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


def load_result(
    path: str | Path,
    benchmark: str | None = None,
    target: float | None = None,
    higher_is_better: bool = True,
) -> Imported:
    """One MLPerf result log as a run record (see the module docstring for the rules)."""
    path = Path(path)
    events, bad = parse_events(path)
    if not events:
        raise ImportFailure(f"{path}: field {MARKER}: no MLPerf log lines in this file")
    flags: list[str] = [TIMING_FLAG]
    if bad:
        flags.append(f"{len(bad)} unreadable :::MLLOG line(s) skipped (first: line {bad[0]})")
    bench = _select_benchmark(
        path, _value(events, "submission_benchmark"), benchmark, target, higher_is_better, flags
    )
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

    evaluations = _evaluations(events, bench, start["time_ms"], flags)
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
            flags.append(f"run_stop status {stop_status or 'missing'!r}: not converged")
        if not crossing.reached:
            flags.append("no eval_accuracy meets the target: not converged")
    if stop_status == "success" and not crossing.reached:
        flags.append("run_stop says success but no eval_accuracy meets the target")
    first = bench.conditions[0]
    if not first.higher_is_better:
        flags.append(f"lower is better: {bench.metric} must be <= {first.target:g}")

    folder = path.parent.name or "log"
    run_id = f"mlperf-{slug(bench.name)}-{slug(folder)}-{slug(path.stem)}"
    task = {
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
    config = {k: _value(events, k) for k in CONFIG_KEYS if _first(events, k)}
    config.update(
        {e["key"]: e.get("value") for e in reversed(events) if e["key"].startswith("opt_")}
    )
    record = new_record(run_id=run_id, task=task, source_kind="mlperf", config=config)
    try:
        record["created_at"] = _dt.datetime.fromtimestamp(
            start["time_ms"] / 1000.0, _dt.timezone.utc
        ).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        flags.append(f"run_start time_ms {start['time_ms']:g} is no date; created_at left out")
    record["status"], record["error"] = status, error
    record["source"].update({"files": [str(path)], "entry_type": "training"})
    platform = _value(events, "submission_platform")
    record["hardware"] = {"name": None if platform is None else str(platform)}
    record["model"] = bench.name
    record["evaluations"] = evaluations
    record["time_to_accuracy"] = {
        "metric": bench.metric,
        "threshold": first.target,
        "reached": converged,
        "time_s": time_to_train if converged else None,
        "epoch": crossing.epoch if converged else None,
        "evaluation_index": crossing.evaluation_index if converged else None,
        "provenance": "imported",
    }
    epoch_times = _epoch_times(events)
    if epoch_times:
        record["throughput"] = {"epoch_times_s": epoch_times}
    first_eval_s = (
        evaluations[crossing.evaluation_index]["train_time_s"] if crossing.reached else None
    )
    record["extra"] = {
        "mlperf": {
            "rules": RULES_VERSION,
            "org": _value(events, "submission_org"),
            "division": _value(events, "submission_division"),
            "submission_status": _value(events, "submission_status"),
            "run_stop_status": stop_status,
            "time_to_train": quantity(time_to_train, "s", "imported", "run_stop - run_start"),
            "first_target_eval_s": first_eval_s,
            "required_runs": bench.required_runs,
        }
    }
    record["flags"] = flags
    final = evaluations[-1]["metrics"].get(bench.metric) if evaluations else None
    summary = {
        "run_id": run_id,
        "file": str(path),
        "benchmark": bench.name,
        "status": status,
        "run_stop_status": stop_status,
        "converged": converged,
        "metric": bench.metric,
        "target": first.target,
        "final": final,
        "time_to_train_s": time_to_train,
        "flags": flags,
    }
    return Imported(record, summary)


def scaling_factor(folder: Path) -> tuple[float, str | None]:
    """The folder's `scaling.json` factor (1.0 without one) and a problem, if any.

    MLPerf's result summarizer multiplies a benchmark folder's olympic mean by this factor
    (submissions that borrowed hyper-parameters); published scores include it.
    """
    path = folder / "scaling.json"
    if not path.exists():
        return 1.0, None
    try:
        data = load_json(path, ImportFailure, max_bytes=1024 * 1024, max_depth=8)
    except ImportFailure as exc:
        return 1.0, str(exc)
    value = data.get("scaling_factor") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 1.0, f"{path}: field scaling_factor: missing or not a number"
    if not (math.isfinite(value) and value > 0):
        return 1.0, f"{path}: field scaling_factor: {value!r} is not a positive number"
    return float(value), None


def score_folders(items: list[Imported]) -> list[dict[str, Any]]:
    """MLPerf score of each folder holding `result_*.txt` files; sets each record's `group`.

    Score = olympic mean (analyzers.stats) of the runs' time to train in minutes, a run that
    did not converge counting as the slowest, times the folder's `scaling.json` factor as in
    MLPerf's result summarizer. Fewer runs than the rules require is flagged.
    """
    groups: dict[str, list[Imported]] = {}
    for it in items:
        path = Path(it.record["source"]["files"][0])
        if path.name.startswith("result_"):
            groups.setdefault(str(path.parent), []).append(it)
    scores = []
    used_gids: set[str] = set()
    for folder, members in sorted(groups.items()):
        names = sorted({m.record["task"]["name"] for m in members})
        flags: list[str] = []
        if len(names) > 1:
            flags.append(f"mixed benchmarks {names}: no score")
        gid = f"mlperf-{slug(names[0])}-{slug(Path(folder).name)}"
        if gid in used_gids:  # two systems' resnet/ folders: never one group
            gid += "-" + hashlib.sha256(folder.encode()).hexdigest()[:6]
        used_gids.add(gid)
        minutes = []
        for i, m in enumerate(members):
            m.record["group"] = {"id": gid, "index": i, "size": len(members)}
            tta = m.record["time_to_accuracy"]
            minutes.append(tta["time_s"] / 60.0 if tta["reached"] else None)
        required = int(members[0].record["extra"]["mlperf"]["required_runs"] or 0)
        if required and len(members) < required:
            flags.append(
                f"{len(members)} runs; MLPerf requires {required} for {names[0]} "
                "(score is indicative only)"
            )
        om = olympic_mean(minutes) if len(names) == 1 else None
        factor, problem = scaling_factor(Path(folder))
        if problem:
            flags.append(f"{problem}: no score")
            om = None
        elif factor != 1.0:
            flags.append(f"scaling.json factor {factor:g} applied (as MLPerf's summarizer does)")
        score = None if om is None or om.value is None else om.value * factor
        scores.append(
            {
                "folder": folder,
                "group_id": gid,
                "benchmark": names[0] if len(names) == 1 else None,
                "runs": len(members),
                "converged": sum(v is not None for v in minutes),
                "required_runs": required or None,
                "minutes": minutes,
                "score_min": score,
                "olympic_mean_min": None if om is None else om.value,
                "scaling_factor": factor,
                "kept_min": [] if om is None else list(om.kept),
                "reason": None if om is None else om.reason,
                "flags": flags,
            }
        )
    return scores


@dataclass
class MLPerfImporter:
    """MLPerf training logs behind the common pipeline; finalize scores result folders."""

    benchmark: str | None = None
    target: float | None = None
    higher_is_better: bool = True
    kind = "MLPerf log (result_*.txt, *.log)"

    def discover(self, paths: Iterable[str | Path]) -> Iterator[Path]:
        return discover(paths)

    def load(self, path: Path) -> Imported:
        return load_result(path, self.benchmark, self.target, self.higher_is_better)

    def finalize(self, items: list[Imported]) -> dict[str, Any]:
        return {"scores": score_folders(items)}
