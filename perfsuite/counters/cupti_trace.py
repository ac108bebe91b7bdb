"""Read CUPTI range-profiler counters out of a Kineto (torch.profiler) Chrome trace.

With `profiler_metrics` set and `profiler_measure_per_kernel=True`, Kineto writes one
`cuda_profiler_range` event per kernel launch, named after the kernel, with the metric values
in `args`. Its timestamps are synthetic: Kineto splits the profiling span evenly across the
ranges (libkineto CuptiRangeProfiler.cpp, "the actual times do not really matter here"), and
kernels are replayed several times to collect all metrics. So `time_s` is null here: kernel
times must come from a separate, unreplayed timeline window (or from ncu).

Op attribution: range i is the i-th kernel launch of the profiling window (auto-range mode
makes one range per launch, in launch order). When the number of launch API calls inside the
window equals the number of ranges, each range gets the innermost `cpu_op` enclosing its launch
on the launching thread; otherwise op is null and a note says why.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.counters.section import CountersError, Launch, build_section
from perfsuite.traces.reader import TraceError, iter_events

RANGE_CATEGORY = "cuda_profiler_range"
LAUNCH_APIS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
    }
)
CUPTI_SPAN_TID = "__cupti_profiler__"


def iter_trace_events(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Stream `traceEvents` of a Chrome trace through perfsuite.analyzers.timeline's reader (plain
    or gzip, object or bare list, C ijson backend); its errors become one-line CountersErrors."""
    try:
        yield from iter_events(path)
    except TraceError as exc:
        msg = str(exc)
        detail = msg.removeprefix(f"{Path(path)}: ")
        if detail.startswith(("not valid JSON", "cannot read")):
            raise CountersError(f"{path}: not a readable JSON trace ({detail})") from None
        raise CountersError(msg) from None


@dataclass
class _Ev:
    ts: float
    dur: float
    name: str
    key: tuple[Any, Any]


def _scan(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], list[_Ev], list[_Ev], Any]:
    ranges: list[dict[str, Any]] = []
    launches: list[_Ev] = []
    ops: list[_Ev] = []
    span = None
    seen_any = False
    for i, ev in enumerate(iter_trace_events(path)):
        seen_any = True
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = ev.get("cat")
        if cat == RANGE_CATEGORY:
            ranges.append(_checked_range(ev, i, path))
            continue
        if not _hashable(ev.get("pid")) or not _hashable(ev.get("tid")):
            continue  # a list or object as a thread id: a malformed event, like those below
        try:
            e = _Ev(
                float(ev["ts"]),
                float(ev.get("dur", 0.0)),
                str(ev.get("name", "")),
                (ev.get("pid"), ev.get("tid")),
            )
        except (KeyError, TypeError, ValueError):
            continue
        if cat in ("cuda_runtime", "cuda_driver") and e.name in LAUNCH_APIS:
            launches.append(e)
        elif cat == "cpu_op":
            ops.append(e)
        elif cat == "Trace" and ev.get("tid") == CUPTI_SPAN_TID:
            span = (e.ts, e.ts + e.dur)
    if not seen_any:
        raise CountersError(f"{path}: field traceEvents: missing or empty")
    return ranges, launches, ops, span


def _hashable(value: Any) -> bool:
    """Usable as a dict key (ijson gives lists and dicts for JSON arrays and objects)."""
    return not isinstance(value, (list, dict))


def _checked_range(ev: dict[str, Any], i: int, path: str | os.PathLike[str]) -> dict[str, Any]:
    """The range event with the fields we use checked, and `ts` made a float.

    Ranges are the measurement itself, so a bad one is an error naming it, not a skip: `ts`
    orders them (range i is the i-th launch), `pid` tells devices apart, `args` holds values.
    """
    where = f"{path}: field traceEvents[{i}]"
    ts = ev.get("ts")
    if ts is None:
        raise CountersError(f"{where}.ts: missing in a '{RANGE_CATEGORY}' event")
    try:
        if isinstance(ts, (bool, list, dict)):
            raise TypeError
        value = float(ts)
    except (TypeError, ValueError, OverflowError):
        raise CountersError(f"{where}.ts: {str(ts)[:40]!r} is not a number") from None
    if not math.isfinite(value):
        raise CountersError(f"{where}.ts: {str(ts)[:40]!r} is not a finite number")
    if not _hashable(ev.get("pid")):
        raise CountersError(f"{where}.pid: expected a number or a string")
    if not isinstance(ev.get("args") or {}, dict):
        raise CountersError(f"{where}.args: expected an object")
    return {**ev, "ts": value}


def _innermost_ops(launches: list[_Ev], ops: list[_Ev]) -> list[str | None]:
    """For each launch (in order), the innermost cpu_op enclosing it on the same thread."""
    # ops sort before launches at equal ts; longer (outer) ops before shorter ones.
    items = [(o.ts, 0, -o.dur, i) for i, o in enumerate(ops)]
    items += [(launch.ts, 1, 0.0, i) for i, launch in enumerate(launches)]
    items.sort()
    stacks: dict[tuple[Any, Any], list[_Ev]] = {}
    out: list[str | None] = [None] * len(launches)
    for ts, kind, _, i in items:
        ev = ops[i] if kind == 0 else launches[i]
        stack = stacks.setdefault(ev.key, [])
        while stack and stack[-1].ts + stack[-1].dur < ts:
            stack.pop()
        if kind == 0:
            stack.append(ev)
        elif stack:
            out[i] = stack[-1].name
    return out


def _range_values(ev: dict[str, Any]) -> dict[str, float | None]:
    vals: dict[str, float | None] = {}
    for k, v in (ev.get("args") or {}).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            vals[str(k)] = float(v)
    return vals


def counters_from_trace(
    path: str | os.PathLike[str], window_steps: int | None = None
) -> dict[str, Any]:
    """The record's `counters` section (tool "cupti-profiler") from a Kineto trace file."""
    ranges, launches, ops, span = _scan(path)
    if not ranges:
        raise CountersError(
            f"{path}: field traceEvents: no '{RANGE_CATEGORY}' events; the trace was not "
            "collected with CUPTI profiler metrics (torch.profiler experimental_config)"
        )
    ranges.sort(key=lambda e: e["ts"])  # floats: checked by _checked_range
    notes = [
        "time_s is null: CUPTI range-profiler timestamps are synthetic (Kineto splits the "
        "profiling span evenly) and kernels are replayed per metric pass; take kernel times "
        "from an unprofiled timeline window"
    ]
    devices = {e.get("pid") for e in ranges}
    if span is not None:
        launches = [x for x in launches if span[0] <= x.ts <= span[1]]
    launches.sort(key=lambda x: x.ts)
    op_names: list[str | None] = [None] * len(ranges)
    if len(devices) > 1:
        notes.append(f"ranges from {len(devices)} devices: op attribution skipped")
    elif len(launches) != len(ranges):
        notes.append(
            f"{len(launches)} kernel launches vs {len(ranges)} profiler ranges in the window: "
            "op attribution skipped (op is null)"
        )
    elif not ops:
        notes.append("no cpu_op events in the trace: op is null")
    else:
        op_names = _innermost_ops(launches, ops)
        notes.append("op = innermost cpu_op enclosing the i-th kernel launch of the window")
    missing = sum(1 for e in ranges if e.get("name") in (None, "", "__missing__"))
    if missing:
        notes.append(f"{missing} range(s) without a kernel name (Kineto wrote '__missing__')")
    launches_out = []
    metric_names: set[str] = set()
    for ev, op in zip(ranges, op_names, strict=True):
        vals = _range_values(ev)
        metric_names.update(vals)
        launches_out.append(Launch(name=str(ev.get("name") or "__missing__"), values=vals, op=op))
    return build_section(
        launches_out,
        tool="cupti-profiler",
        file=str(path),
        metrics=sorted(metric_names),
        notes=notes,
        window_steps=window_steps,
    )
