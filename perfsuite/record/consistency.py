"""Whether a record's claims follow from its own evidence, and its figures lie within physical
bounds: the checks the schema cannot express.

The claims are recomputed by the one time-to-accuracy rule (`perfsuite.record.tta`) from the
record's evaluations and compared with what it stores: `time_to_accuracy` (reached, time, epoch,
evaluation index) and the `status` that follows from it. A stored claim that disagrees is a
problem naming the field and both values; `perfsuite validate` reports it as an error and the
analyses leave the record out of their rankings with that reason
(`perfsuite.analyzers.results.record_view`).

Source rules: perfsuite runs and DAWNBench imports state time to accuracy as the training time
of the first evaluation at or past the threshold. An MLPerf import states MLPerf's time to
train (`run_stop` - `run_start`, evaluations included), so its time is only checked to be at
least that evaluation's time, and its `reached` also needs `run_stop` success (a converged
curve may be "not reached"); joint targets (`task.targets`) must all be met. A DAWNBench
inference entry reaches by its served accuracy, not a curve.

Pure functions on plain dicts; no framework, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfsuite.record.tta import first_crossing

# Metrics that are fractions in [0, 1] (docs/record.md, "Conventions"); others (perplexity,
# loss, FID, CLIP score) only have to be finite.
FRACTION_METRICS = frozenset(
    {
        "top1",
        "top5",
        "f1",
        "exact_match",
        "mlm_accuracy",
        "map",
        "bbox_map",
        "segm_map",
        "mean_dice",
        "auc",
        "accuracy",
        "win_rate",
        "wer",
    }
)
# A time beyond reason: 10^9 s is 31.7 years; no training run, epoch or step takes that long.
MAX_SECONDS = 1e9
# Training samples beyond reason: 10^18 is a million times the largest published runs.
MAX_SAMPLES = 1e18
# A price beyond reason, USD per hour of one machine.
MAX_USD_PER_HOUR = 1e6
# Relative tolerance when a stored time is compared with the evaluation it came from (the
# writers copy the value; imports round to the microsecond).
REL_TOL = 1e-9
ABS_TOL = 1e-6


@dataclass(frozen=True)
class Problem:
    """One claim or figure that does not hold: `field` as in the record, `why` one line."""

    field: str
    why: str

    def __str__(self) -> str:
        return f"field {self.field}: {self.why}"


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _time_problem(where: str, value: Any) -> Problem | None:
    """A time must be a finite, non-negative number of seconds below MAX_SECONDS."""
    if value is None:
        return None
    if not _num(value) or not math.isfinite(value):
        return Problem(where, f"{_fmt(value)} is not a finite number of seconds")
    if value < 0:
        return Problem(where, f"{_fmt(value)} s is negative")
    if value > MAX_SECONDS:
        return Problem(where, f"{_fmt(value)} s is beyond reason (more than {MAX_SECONDS:g} s)")
    return None


def _metric_problem(where: str, metric: str, value: Any, fraction: bool = False) -> Problem | None:
    if value is None:
        return None
    if not _num(value) or not math.isfinite(value):
        return Problem(where, f"{_fmt(value)} is not a finite number")
    if (fraction or metric in FRACTION_METRICS) and not 0.0 <= value <= 1.0:
        return Problem(where, f"{_fmt(value)} is outside [0, 1] ({metric} is a fraction)")
    return None


def evaluation_problems(evaluations: Any, fractions: frozenset[str] = frozenset()) -> list[Problem]:
    """Each evaluation's times and metrics in bounds; the curve in order (training time and
    epoch never decrease) and without an evaluation given twice (same epoch and time)."""
    if not isinstance(evaluations, list):
        return [Problem("evaluations", "not a list")]
    out: list[Problem] = []
    seen: set[tuple[float, float]] = set()
    prev: tuple[float, float] | None = None
    for i, ev in enumerate(evaluations):
        where = f"evaluations[{i}]"
        if not isinstance(ev, Mapping):
            out.append(Problem(where, "not an object"))
            continue
        for key in ("train_time_s", "eval_time_s"):
            p = _time_problem(f"{where}.{key}", ev.get(key))
            if p:
                out.append(p)
        epoch, time_s = ev.get("epoch"), ev.get("train_time_s")
        if not _num(epoch) or not math.isfinite(epoch) or epoch < 0 or epoch > MAX_SECONDS:
            out.append(Problem(f"{where}.epoch", f"{_fmt(epoch)} is not an epoch count"))
            continue
        for count in ("samples", "tokens"):
            value = ev.get(count)
            if _num(value) and not 0 <= value <= MAX_SAMPLES:
                out.append(Problem(f"{where}.{count}", f"{_fmt(value)} is beyond reason"))
        metrics = ev.get("metrics")
        if isinstance(metrics, Mapping):
            for m, v in metrics.items():
                p = _metric_problem(f"{where}.metrics.{m}", str(m), v, m in fractions)
                if p:
                    out.append(p)
        if not _num(time_s) or not math.isfinite(time_s):
            continue
        key = (float(epoch), float(time_s))
        if key in seen:
            out.append(
                Problem(where, f"given twice (epoch {epoch:g} at {time_s:g} s): a duplicate")
            )
        elif prev is not None and (key[0] < prev[0] or key[1] < prev[1]):
            out.append(
                Problem(
                    where,
                    f"out of order: epoch {epoch:g} at {time_s:g} s after epoch {prev[0]:g} "
                    f"at {prev[1]:g} s",
                )
            )
        seen.add(key)
        prev = key if prev is None else (max(prev[0], key[0]), max(prev[1], key[1]))
    return out


def task_problems(record: Mapping[str, Any]) -> list[Problem]:
    """The threshold a finite number in the metric's range; the task's metric present in the
    evaluations when there are any."""
    task = record.get("task") or {}
    metric, threshold = str(task.get("metric")), task.get("threshold")
    out: list[Problem] = []
    if not _num(threshold) or not math.isfinite(threshold):
        return [Problem("task.threshold", f"{_fmt(threshold)} is not a finite number")]
    direction = task.get("direction") or "higher"
    # a higher-is-better metric is a fraction (as `stability.threshold_problem` says)
    p = _metric_problem("task.threshold", metric, threshold, direction == "higher")
    if p:
        out.append(p)
    elif threshold < 0:
        out.append(Problem("task.threshold", f"{_fmt(threshold)} is negative"))
    out += target_problems(task.get("targets"))
    evals = [e for e in record.get("evaluations") or [] if isinstance(e, Mapping)]
    if evals and not any((e.get("metrics") or {}).get(metric) is not None for e in evals):
        seen = sorted({str(k) for e in evals for k in (e.get("metrics") or {})})
        out.append(
            Problem(
                "task.metric",
                f"{metric!r} is in no evaluation (they have: {', '.join(seen) or 'no metrics'})",
            )
        )
    return out


def target_problems(targets: Any) -> list[Problem]:
    """`task.targets` (a joint target's conditions, optional): a list of objects, each with a
    metric name, a finite target and a direction, higher or lower. An entry of another type
    is a problem, never skipped: the claims are judged against every condition."""
    if targets is None:
        return []
    if not isinstance(targets, list):
        return [Problem("task.targets", f"{_fmt(targets)} is not a list of conditions")]
    out = []
    for i, t in enumerate(targets):
        where = f"task.targets[{i}]"
        if not isinstance(t, Mapping):
            out.append(Problem(where, f"{_fmt(t)} is not an object {{metric, target, direction}}"))
        elif not isinstance(t.get("metric"), str) or not t.get("metric"):
            out.append(Problem(f"{where}.metric", f"{_fmt(t.get('metric'))} is not a metric name"))
        elif not _num(t.get("target")) or not math.isfinite(t["target"]):
            out.append(
                Problem(f"{where}.target", f"{_fmt(t.get('target'))} is not a finite number")
            )
        elif t.get("direction", "higher") not in ("higher", "lower"):
            out.append(
                Problem(f"{where}.direction", f"{_fmt(t.get('direction'))} is not higher or lower")
            )
    return out


def group_problems(record: Mapping[str, Any]) -> list[Problem]:
    group = record.get("group")
    if not isinstance(group, Mapping):
        return []
    index, size = group.get("index"), group.get("size")
    if _num(index) and _num(size) and not 0 <= index < size:
        return [Problem("group.index", f"{index} is not below the group size {size}")]
    return []


def _targets(record: Mapping[str, Any]) -> list[tuple[str, float, str]]:
    """(metric, threshold, direction) of every condition the target has: `task.targets` for a
    joint MLPerf target, else the task's one metric."""
    task = record.get("task") or {}
    out = []
    targets = task.get("targets")
    if isinstance(targets, list):
        for t in targets:
            if isinstance(t, Mapping) and _num(t.get("target")):
                d = t.get("direction") if t.get("direction") in ("higher", "lower") else "higher"
                out.append((str(t.get("metric")), float(t["target"]), d))
    direction = task.get("direction") if task.get("direction") in ("higher", "lower") else "higher"
    return out or [(str(task.get("metric")), float(task["threshold"]), direction)]


def evidence_crossing(record: Mapping[str, Any]) -> tuple[bool, int | None]:
    """(reached, index of the first evaluation meeting every condition), by
    `tta.first_crossing` applied to each of the record's evaluations in order."""
    evals = [e for e in record.get("evaluations") or [] if isinstance(e, Mapping)]
    targets = _targets(record)
    for i, ev in enumerate(evals):
        if all(first_crossing([ev], m, t, d).reached for m, t, d in targets):
            return True, i
    return False, None


def _same(a: Any, b: Any) -> bool:
    if _num(a) and _num(b):
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def claim_problems(record: Mapping[str, Any]) -> list[Problem]:
    """`time_to_accuracy` and `status` against the crossing the evaluations give."""
    task = record.get("task") or {}
    tta = record.get("time_to_accuracy")
    source = record.get("source") or {}
    kind, entry = source.get("kind"), source.get("entry_type")
    if not isinstance(tta, Mapping) or not _num(task.get("threshold")):
        return []
    out: list[Problem] = [
        Problem(
            f"time_to_accuracy.{key}",
            f"stored {_fmt(tta.get(key))}, the task says {_fmt(task.get(key))}",
        )
        for key in ("metric", "threshold")
        if key in tta and not _same(tta.get(key), task.get(key))
    ]
    if out:  # a claim about another target: its crossing is not comparable
        return out
    evals = [e for e in record.get("evaluations") or [] if isinstance(e, Mapping)]
    reached, index = evidence_crossing(record)
    claimed = tta.get("reached") is True
    out.extend(_reached_problems(claimed, reached, evals, kind))
    if claimed and reached and index is not None:
        out.extend(_crossing_problems(tta, evals[index], index, kind))
    status = record.get("status")
    if entry != "inference":
        if status == "reached" and not claimed:
            out.append(Problem("status", "stored 'reached', time_to_accuracy.reached is false"))
        if status == "not_reached" and claimed:
            out.append(Problem("status", "stored 'not_reached', time_to_accuracy.reached is true"))
    return out


def _reached_problems(
    claimed: bool, reached: bool, evals: list[Mapping[str, Any]], kind: Any
) -> list[Problem]:
    """`time_to_accuracy.reached` against the evaluations. An MLPerf result is checked one
    way: a target claimed reached that no evaluation meets every target of."""
    evidence = f"{len(evals)} evaluation(s)" if evals else "no evaluations"
    if kind == "mlperf":
        if not (claimed and not reached):
            return []
        return [
            Problem(
                "time_to_accuracy.reached",
                f"stored true, the evaluations give false ({evidence} meet the target)"
                if not evals
                else "stored true, the evaluations give false (none meets every target)",
            )
        ]
    if claimed == reached:
        return []
    return [
        Problem(
            "time_to_accuracy.reached",
            f"stored {str(claimed).lower()}, the evaluations give {str(reached).lower()} "
            f"({evidence})",
        )
    ]


def _crossing_problems(
    tta: Mapping[str, Any], ev: Mapping[str, Any], index: int, kind: Any
) -> list[Problem]:
    """The stored evaluation index, epoch and time of a crossing against the evaluation `ev`
    (at `index`) that met the target. MLPerf's time to train includes its evaluations, so it
    is at least the crossing's time (no bound for an offline evaluation of a checkpoint,
    timed after run_stop); any other record's time equals it."""
    out = [
        Problem(
            f"time_to_accuracy.{key}",
            f"stored {_fmt(tta.get(key))}, the evaluations give {_fmt(want)}",
        )
        for key, want in (("evaluation_index", index), ("epoch", ev.get("epoch")))
        if key in tta and tta.get(key) is not None and not _same(tta.get(key), want)
    ]
    stored, at = tta.get("time_s"), ev.get("train_time_s")
    if not _num(stored):
        out.append(
            Problem(
                "time_to_accuracy.time_s",
                f"stored {_fmt(stored)} for a target reached, the evaluations give {_fmt(at)} s",
            )
        )
    elif _num(at) and kind == "mlperf":
        if stored + ABS_TOL < at and ev.get("offline") is not True:
            out.append(
                Problem(
                    "time_to_accuracy.time_s",
                    f"stored {_fmt(float(stored))} s, before the evaluation that met "
                    f"the target ({_fmt(float(at))} s)",
                )
            )
    elif _num(at) and not _same(stored, at):
        out.append(
            Problem(
                "time_to_accuracy.time_s",
                f"stored {_fmt(float(stored))} s, the evaluations give {_fmt(float(at))} s",
            )
        )
    return out


def bound_problems(record: Mapping[str, Any]) -> list[Problem]:
    """Physical bounds of the figures analyses show: times finite, non-negative and below
    MAX_SECONDS; a measured step time above 0; fractions in [0, 1]; a price below reason."""
    out: list[Problem] = []
    tta = record.get("time_to_accuracy") or {}
    for where, value in (("time_to_accuracy.time_s", tta.get("time_s")),):
        p = _time_problem(where, value)
        if p:
            out.append(p)
    thr = record.get("throughput") or {}
    step = thr.get("step_time") if isinstance(thr, Mapping) else None
    if isinstance(step, Mapping) and step.get("value") is not None:
        p = _time_problem("throughput.step_time.value", step.get("value"))
        if p:
            out.append(p)
        elif step["value"] == 0:
            out.append(Problem("throughput.step_time.value", "0 s: no step takes no time"))
    if isinstance(thr, Mapping):
        for key in ("epoch_times_s", "epoch_cpu_times_s"):
            for i, v in enumerate(thr.get(key) or []):
                p = _time_problem(f"throughput.{key}[{i}]", v)
                if p:
                    out.append(p)
                    break
    data = record.get("data")
    if isinstance(data, Mapping):
        frac = data.get("stall_fraction")
        if _num(frac) and not 0.0 <= frac <= 1.0:
            out.append(Problem("data.stall_fraction", f"{_fmt(frac)} is outside [0, 1]"))
    timeline = record.get("timeline")
    if isinstance(timeline, Mapping):
        for i, op in enumerate(timeline.get("ops") or []):
            if not isinstance(op, Mapping):
                continue
            for key in ("self_time_s", "total_time_s", "device_time_s", "device_total_time_s"):
                p = _time_problem(f"timeline.ops[{i}].{key}", op.get(key))
                if p:
                    out.append(p)
                    break
    cost = record.get("cost")
    price = (cost.get("usd_per_hour") if isinstance(cost, Mapping) else None) or {}
    usd = price.get("value") if isinstance(price, Mapping) else None
    if _num(usd) and not 0 <= usd <= MAX_USD_PER_HOUR:
        out.append(
            Problem("cost.usd_per_hour.value", f"{_fmt(usd)} USD/h is beyond reason (over 1e6)")
        )
    inf = record.get("inference")
    if isinstance(inf, Mapping):
        lat = inf.get("latency")
        if isinstance(lat, Mapping):
            p = _time_problem("inference.latency.value", lat.get("value"))
            if p:
                out.append(p)
        for m, v in (
            (inf.get("metrics") or {}).items() if isinstance(inf.get("metrics"), Mapping) else ()
        ):
            p = _metric_problem(f"inference.metrics.{m}", str(m), v)
            if p:
                out.append(p)
    return out


def _step_total(work: Mapping[str, Any], key: str) -> float | None:
    """`work.<key>` (flops_per_step, bytes_per_step): a quantity's value or a bare number."""
    value = work.get(key)
    value = value.get("value") if isinstance(value, Mapping) else value
    return float(value) if _num(value) and math.isfinite(value) else None


def work_problems(record: Mapping[str, Any]) -> list[Problem]:
    """`work.per_op[]`: each op's FLOPs and bytes a finite count >= 0 and not above the step's
    own total (`flops_per_step`, `bytes_per_step`), of which it is a part. The first problem
    per field is named."""
    work = record.get("work")
    if not isinstance(work, Mapping) or not isinstance(work.get("per_op"), list):
        return []
    out: list[Problem] = []
    for key, total_key, unit in (
        ("flops", "flops_per_step", "FLOP"),
        ("bytes", "bytes_per_step", "byte"),
    ):
        total = _step_total(work, total_key)
        for i, op in enumerate(work["per_op"]):
            value = op.get(key) if isinstance(op, Mapping) else None
            if value is None:
                continue
            where = f"work.per_op[{i}].{key}"
            if not _num(value) or not math.isfinite(value) or value < 0:
                out.append(Problem(where, f"{_fmt(value)} is not a count of {unit} (0 or more)"))
                break
            if total is not None and value > total * (1 + REL_TOL):
                out.append(
                    Problem(
                        where,
                        f"{_fmt(float(value))} {unit} in one op, more than the "
                        f"step's {total:g} ({total_key})",
                    )
                )
                break
    return out


def problems(record: Mapping[str, Any]) -> list[Problem]:
    """Every consistency and bounds problem of a (schema-valid) record, in field order of
    importance: the curve first, then the task, the group, the claims and the bounds."""
    if not isinstance(record, Mapping):
        return [Problem("(top level)", "not an object")]
    task = record.get("task") or {}
    higher = (task.get("direction") or "higher") == "higher"
    fractions = frozenset({str(task.get("metric"))} if higher else ())
    curve = evaluation_problems(record.get("evaluations") or [], fractions)
    task_found = task_problems(record)
    out = curve + task_found + group_problems(record)
    if not task_found:  # claims are recomputed against a usable threshold only
        out += claim_problems(record)
    return out + bound_problems(record) + work_problems(record)


def untrusted(record: Mapping[str, Any]) -> str | None:
    """Why a record's claims cannot be ranked ("inconsistent: field X: ..."), or None."""
    found = problems(record)
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"inconsistent record: {found[0]}{more}"
