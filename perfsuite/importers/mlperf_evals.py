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
from perfsuite.record.consistency import MAX_SAMPLES

# metadata keys that name the point of training an evaluation belongs to, in the order
# mlperf-logging uses to pair FID and CLIP lines (step_num: Stable Diffusion, ruleset 3.1.0)
MERGE_KEYS = ("samples_count", "step_num", "epoch_num")


def number(v: Any) -> float | None:
    """A finite JSON number as float; anything else (bool, string, NaN, null) None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(float(v)) else None


# A count of samples or tokens beyond reason, as the record's checks bound them.
MAX_COUNT = MAX_SAMPLES


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
    tokens: float | None = None

    def merge(self, other: _Eval) -> int:
        """Take in another component line of this evaluation; how many metrics it repeats."""
        repeated = sum(1 for m in other.metrics if m in self.metrics)
        self.metrics.update(other.metrics)
        self.time_ms = max(self.time_ms, other.time_ms)
        self.late = self.late or other.late
        self.offline = self.offline or other.offline
        self.epoch = self.epoch if self.epoch is not None else other.epoch
        self.samples = self.samples if self.samples is not None else other.samples
        self.tokens = self.tokens if self.tokens is not None else other.tokens
        self.names += other.names
        return repeated


@dataclass
class _Tally:
    """What was set aside or merged while the lines were read, for the record's flags."""

    early: int = 0
    duplicates: int = 0
    offline: int = 0
    scalar_names: set[str] = field(default_factory=set)


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


def _progress(
    path: Path, ev: dict[str, Any], bench: Benchmark, seq_len: float | None
) -> tuple[float | None, float | None, float | None]:
    """(epoch, samples, tokens) of one line, read by the benchmark's rules: `epoch_num` is an
    epoch, or a count of the unit `bench.progress_unit` names. A GPT-3 token count gives
    samples where it is a whole number of `max_sequence_length` sequences."""
    meta = ev["metadata"]
    epoch_num, samples = number(meta.get("epoch_num")), number(meta.get("samples_count"))
    unit = bench.progress_unit
    where = f"{path}: line {ev['lineno']}: field {bench.eval_key}.metadata.epoch_num"
    if unit is None:
        if epoch_num is not None and not 0 <= epoch_num < 1e12:
            raise ImportFailure(f"{where}: {epoch_num:g} is not an epoch (0 or more)")
        return epoch_num, samples, None
    if epoch_num is not None and not 0 <= epoch_num <= MAX_COUNT:
        raise ImportFailure(
            f"{where}: {epoch_num:g} is not a count of {unit} ({bench.name} logs count "
            f"{unit} there; 0 to {MAX_COUNT:g})"
        )
    if unit == "samples":
        return None, samples if samples is not None else epoch_num, None
    if samples is None and epoch_num is not None and seq_len and epoch_num % seq_len == 0:
        samples = epoch_num / seq_len
    return None, samples, epoch_num


def _read_line(
    path: Path,
    ev: dict[str, Any],
    bench: Benchmark,
    stop: dict[str, Any] | None,
    seq_len: float | None,
) -> tuple[_Eval, str | None]:
    """One evaluation line as an `_Eval`, and its component name (None: a whole value)."""
    metrics, name = _line_metrics(path, ev, bench)
    late = stop is not None and ev["lineno"] > stop["lineno"]
    offline = not late and stop is not None and ev["time_ms"] > stop["time_ms"]
    epoch, samples, tokens = _progress(path, ev, bench, seq_len)
    item = _Eval(dict(metrics), ev["time_ms"], ev["lineno"], epoch, samples, late, [], offline)
    item.tokens = tokens
    if name is not None:
        item.names.append(name)
    return item, name


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
    seq_len = next(
        (number(e.get("value")) for e in events if e["key"] == "max_sequence_length"), None
    )
    found: list[_Eval] = []
    by_key: dict[tuple[str, float], _Eval] = {}
    tally = _Tally()
    for ev in events:
        if ev["key"] != bench.eval_key:
            continue
        if ev["time_ms"] < start["time_ms"]:
            tally.early += 1
            continue
        item, name = _read_line(path, ev, bench, stop, seq_len)
        tally.offline += item.offline
        key = _merge_key(ev["metadata"]) if bench.joint and name is not None else None
        if not bench.joint and name is not None:
            tally.scalar_names.add(name)
        merged = by_key.get(key) if key is not None else None
        if merged is not None:  # another component of an evaluation already seen
            tally.duplicates += merged.merge(item)
            continue
        found.append(item)
        if key is not None:
            by_key[key] = item
    if len(tally.scalar_names) > 1:
        raise ImportFailure(
            f"{path}: field eval_accuracy.metadata.metric: lines name several metrics "
            f"({', '.join(sorted(tally.scalar_names))}) but {bench.name!r} is judged on one "
            f"scalar ({bench.describe()})"
        )
    flags += _tally_flags(tally, found, bench)
    kept = [e for e in found if not e.late]
    return _as_records(kept, start["time_ms"], train_samples, bench, flags)


def _tally_flags(tally: _Tally, found: list[_Eval], bench: Benchmark) -> list[str]:
    """The flags of what `evaluations` set aside, merged or counted against the clock."""
    flags = []
    if tally.early:
        flags.append(f"{tally.early} eval_accuracy line(s) before run_start ignored")
    if tally.duplicates:
        flags.append(
            f"{tally.duplicates} eval_accuracy component(s) logged twice for one samples_count: "
            "the later line's value kept"
        )
    merged_count = sum(1 for e in found if len(e.names) > 1)
    if merged_count:
        flags.append(
            f"{merged_count} evaluation(s) merged from one eval_accuracy line per metric "
            "(same samples_count), each timed at its latest line"
        )
    if tally.offline:
        flags.append(
            f"{tally.offline} {bench.eval_key} line(s) written before run_stop but timed after "
            "it (offline evaluation of checkpoints): counted, as MLCommons' checker does"
        )
    late = [e for e in found if e.late]
    if late:
        flags.append(
            f"{len(late)} evaluation(s) logged after the run_stop line (first: line "
            f"{late[0].lineno}) not counted: time to train ends at run_stop (MLCommons' "
            "checker reads them; stricter)"
        )
    return flags


def _as_records(
    found: list[_Eval],
    start_ms: float,
    train_samples: float | None,
    bench: Benchmark,
    flags: list[str],
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ordinal_used = 0
    unit = bench.progress_unit
    for e in found:
        epoch = e.epoch
        # a benchmark counted in samples or tokens has no epochs, and its logs' train_samples
        # is no one size (a dataset's, or the count trained, logged at the end): not divided
        if epoch is None and e.samples is not None and train_samples and unit is None:
            epoch = e.samples / train_samples
        if epoch is None and unit is not None:
            epoch = float(len(out) + 1)
        elif epoch is None:
            epoch = float(len(out) + 1)
            ordinal_used += 1
        entry = {
            "epoch": epoch,
            "train_time_s": round((e.time_ms - start_ms) / 1000.0, 6),
            "metrics": e.metrics,
            "samples": None if e.samples is None else int(e.samples),
        }
        if e.tokens is not None:
            entry["tokens"] = int(e.tokens)
        if e.offline:  # timed after run_stop: its clock is not the time to train's
            entry["offline"] = True
        out.append(entry)
    if unit is not None and found:
        flags.append(
            f"{bench.name} counts training progress in {unit}, not epochs (MLPerf rules): "
            f"epoch_num read as a count of {unit}, kept in evaluations[].{unit}; each "
            "evaluation's epoch is its ordinal"
        )
    if ordinal_used:
        flags.append(
            f"{ordinal_used} evaluation(s) with no epoch in the log (no epoch_num epoch, no "
            "samples with train_samples): epoch set to the evaluation's ordinal"
        )
    return out
