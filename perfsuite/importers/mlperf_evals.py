"""MLPerf `eval_accuracy` lines -> a run record's evaluations, with MLPerf's counting rules.

Why a module of its own: which lines count is where logs differ most. A value is a number, a
dict of components (Mask R-CNN `{"BBOX": .., "SEGM": ..}`), or one component per line named by
`metadata.metric` (Stable Diffusion logs FID and CLIP separately, often from an offline
evaluator); mlperf-logging merges those per `samples_count` into one evaluation timed at its
latest line. The line read is the benchmark's evaluation key in its rules (`eval_accuracy`;
`eval_error` for HPC CosmoFlow and OC20). Evaluations written before the `run_stop` line count,
whatever their `time_ms`: an offline evaluator (Stable Diffusion v4.0) logs results timed after
`run_stop` for checkpoints taken before it, and MLCommons' checker accepts them. Lines after
the `run_stop` line are not counted (stricter than the checker, which reads every line: time to
train ends at `run_stop`, so a result logged after it was not part of the run reported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.importers.common import ImportFailure
from perfsuite.importers.mlperf_rules import Benchmark, component_metric

# metadata keys that name the point of training an evaluation belongs to, in the order
# mlperf-logging uses to pair FID and CLIP lines (step_num: Stable Diffusion, ruleset 3.1.0)
MERGE_KEYS = ("samples_count", "step_num", "epoch_num")


def number(v: Any) -> float | None:
    """A finite JSON number as float; anything else (bool, string, NaN, null) None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(float(v)) else None


@dataclass
class _Eval:
    """One evaluation while the lines are read: merged components and where they came from."""

    metrics: dict[str, float | None]
    time_ms: float
    lineno: int
    epoch: float | None
    samples: float | None
    late: bool = False  # some line of it is after run_stop
    names: list[str] = field(default_factory=list)  # metadata.metric of merged lines
    offline: bool = False  # written before run_stop but timed after it


def _line_metrics(
    path: Path, ev: dict[str, Any], bench: Benchmark
) -> tuple[dict[str, float | None], str | None]:
    """The metrics of one eval_accuracy line and its component name (None: a whole value)."""
    value, name = ev.get("value"), ev["metadata"].get("metric")
    where = f"{path}: line {ev['lineno']}: field eval_accuracy"
    if isinstance(value, dict):
        if not bench.joint:
            raise ImportFailure(
                f"{where}: a dict of components ({', '.join(map(str, value))}) but "
                f"{bench.name!r} is judged on one scalar ({bench.describe()})"
            )
        return {component_metric(bench, str(k)): number(v) for k, v in value.items()}, None
    if bench.joint:
        if not isinstance(name, str) or not name:
            raise ImportFailure(
                f"{where}.metadata.metric: missing; {bench.name!r} needs a dict of components "
                f"or one line per metric ({bench.describe()})"
            )
        return {component_metric(bench, name): number(value)}, name
    return {bench.metric: number(value)}, name if isinstance(name, str) else None


def _merge_key(meta: dict[str, Any]) -> tuple[str, float] | None:
    for key in MERGE_KEYS:
        v = number(meta.get(key))
        if v is not None:
            return key, v
    return None


def evaluations(
    path: Path,
    events: list[dict[str, Any]],
    bench: Benchmark,
    start: dict[str, Any],
    stop: dict[str, Any] | None,
    train_samples: float | None,
    flags: list[str],
) -> list[dict[str, Any]]:
    """The evaluations that count, in order of their first line; flags what was set aside."""
    found: list[_Eval] = []
    by_key: dict[tuple[str, float], _Eval] = {}
    early = duplicates = offline = 0
    scalar_names: set[str] = set()
    for ev in events:
        if ev["key"] != bench.eval_key:
            continue
        if ev["time_ms"] < start["time_ms"]:
            early += 1
            continue
        metrics, name = _line_metrics(path, ev, bench)
        meta = ev["metadata"]
        late = stop is not None and ev["lineno"] > stop["lineno"]
        is_offline = not late and stop is not None and ev["time_ms"] > stop["time_ms"]
        offline += is_offline
        epoch_num = number(meta.get("epoch_num"))
        if epoch_num is not None and not 0 <= epoch_num < 1e12:
            raise ImportFailure(
                f"{path}: line {ev['lineno']}: field {bench.eval_key}.metadata.epoch_num: "
                f"{epoch_num:g} is not an epoch (0 or more)"
            )
        key = _merge_key(meta) if bench.joint and name is not None else None
        if not bench.joint and name is not None:
            scalar_names.add(name)
        merged = by_key.get(key) if key is not None else None
        if merged is not None:  # another component of an evaluation already seen
            duplicates += sum(1 for m in metrics if m in merged.metrics)
            merged.metrics.update(metrics)
            merged.time_ms = max(merged.time_ms, ev["time_ms"])
            merged.late = merged.late or late
            merged.offline = merged.offline or is_offline
            merged.epoch = (
                merged.epoch if merged.epoch is not None else number(meta.get("epoch_num"))
            )
            merged.samples = (
                merged.samples if merged.samples is not None else number(meta.get("samples_count"))
            )
            merged.names.append(str(name))
            continue
        item = _Eval(
            dict(metrics),
            ev["time_ms"],
            ev["lineno"],
            number(meta.get("epoch_num")),
            number(meta.get("samples_count")),
            late,
            [] if name is None else [name],
            is_offline,
        )
        found.append(item)
        if key is not None:
            by_key[key] = item
    if len(scalar_names) > 1:
        raise ImportFailure(
            f"{path}: field eval_accuracy.metadata.metric: lines name several metrics "
            f"({', '.join(sorted(scalar_names))}) but {bench.name!r} is judged on one scalar "
            f"({bench.describe()})"
        )
    if early:
        flags.append(f"{early} eval_accuracy line(s) before run_start ignored")
    if duplicates:
        flags.append(
            f"{duplicates} eval_accuracy component(s) logged twice for one samples_count: "
            "the later line's value kept"
        )
    merged_count = sum(1 for e in found if len(e.names) > 1)
    if merged_count:
        flags.append(
            f"{merged_count} evaluation(s) merged from one eval_accuracy line per metric "
            "(same samples_count), each timed at its latest line"
        )
    if offline:
        flags.append(
            f"{offline} {bench.eval_key} line(s) written before run_stop but timed after it "
            "(offline evaluation of checkpoints): counted, as MLCommons' checker does"
        )
    late = [e for e in found if e.late]
    if late:
        flags.append(
            f"{len(late)} evaluation(s) logged after the run_stop line (first: line "
            f"{late[0].lineno}) not counted: time to train ends at run_stop (MLCommons' "
            "checker reads them; stricter)"
        )
    return _as_records([e for e in found if not e.late], start["time_ms"], train_samples, flags)


def _as_records(
    found: list[_Eval], start_ms: float, train_samples: float | None, flags: list[str]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ordinal_used = 0
    for e in found:
        epoch = e.epoch
        if epoch is None and e.samples is not None and train_samples:
            epoch = e.samples / train_samples
        if epoch is None:
            epoch = float(len(out) + 1)
            ordinal_used += 1
        entry = {
            "epoch": epoch,
            "train_time_s": round((e.time_ms - start_ms) / 1000.0, 6),
            "metrics": e.metrics,
            "samples": None if e.samples is None else int(e.samples),
        }
        if e.offline:  # timed after run_stop: its clock is not the time to train's
            entry["offline"] = True
        out.append(entry)
    if ordinal_used:
        flags.append(
            f"{ordinal_used} evaluation(s) without epoch_num (and samples_count/train_samples): "
            "epoch set to the evaluation's ordinal"
        )
    return out
