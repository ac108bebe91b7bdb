"""Read the MLPerf-style log sidecar back and check it against the record it belongs to.

A run writes `mllog.txt` beside `run.json`; nothing else read it, so a log that disagreed with
its record (another run's file, a truncated copy) went unnoticed. This says where they differ.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfsuite.record.checks import resolve_sidecar
from perfsuite.record.mllog_events import parse_lines
from perfsuite.record.tta import record_crossing
from perfsuite.safeio import InputError, decode_utf8, read_bytes

MAX_LOG_BYTES = 256 * 1024 * 1024  # a run's own log; larger files are refused

FINAL = ("reached", "not_reached", "diverged", "crashed", "interrupted")


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        return False


def mllog_problems(record: Mapping[str, Any]) -> list[str]:
    """Differences between the record and its `sidecars.mllog`, one short line each.

    Empty when they agree or when the record names no log. A running or interrupted record
    may lead its log by one evaluation (the record is written just before the log line; older
    writers wrote the log first, so a running one may trail it), and a killed run has no
    `run_stop`: neither is flagged.
    """
    name = (record.get("sidecars") or {}).get("mllog")
    base = record.get("_dir")
    if not name or not base:
        return []
    try:
        path = resolve_sidecar(base, name)
    except ValueError as exc:
        return [f"sidecars.mllog: {exc}"]
    if not path.is_file():
        return [f"sidecars.mllog: {Path(name).name} is listed but not in the run folder"]
    try:
        events, bad = parse_lines(decode_utf8(read_bytes(path, MAX_LOG_BYTES), path, InputError))
    except InputError as exc:
        return [f"sidecars.mllog: {exc}"]
    out = [f"sidecars.mllog: {len(bad)} unreadable line(s), first line {bad[0]}"] if bad else []
    metric = (record.get("task") or {}).get("metric")
    logged = [e.get("value") for e in events if e["key"] == "eval_accuracy"]
    recorded = [(ev.get("metrics") or {}).get(metric) for ev in record.get("evaluations") or []]
    status = record.get("status")
    # a writer killed between the two writes: the record is written first, then the log line
    # (older writers: the other way round, while running)
    pending = status in ("running", "interrupted") and len(recorded) == len(logged) + 1
    trailing = status == "running" and len(logged) == len(recorded) + 1
    if len(logged) != len(recorded) and not (trailing or pending):
        out.append(
            f"sidecars.mllog: {len(logged)} eval_accuracy line(s), the record has "
            f"{len(recorded)} evaluation(s)"
        )
    for i, (a, b) in enumerate(zip(logged, recorded, strict=False)):
        if not _same(a, b):
            out.append(f"sidecars.mllog: eval_accuracy {i + 1} is {a!r}, evaluations[{i}] {b!r}")
            break
    stops = [e for e in events if e["key"] == "run_stop"]
    if status in FINAL:
        if not stops:
            if status != "interrupted":  # a killed run never logs its end
                out.append(f"sidecars.mllog: no run_stop, the record's status is {status}")
        else:
            success = str(stops[0]["metadata"].get("status", "")).lower() == "success"
            # run_stop is logged when training stops: a run that reached its target and
            # failed afterwards (inference, counters) logged success.
            reached = bool(record_crossing(record).reached)
            if success != reached:
                out.append(
                    f"sidecars.mllog: run_stop status {stops[0]['metadata'].get('status')!r}, "
                    f"the record's evaluations {'reach' if reached else 'do not reach'} its "
                    f"target (status {status})"
                )
    return out
