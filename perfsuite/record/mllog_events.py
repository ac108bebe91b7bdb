"""The `:::MLLOG {json}` line format of MLPerf logs, read into events.

Why in the record contract: a run's `mllog.txt` sidecar is written in it, the record check
reads that sidecar back (`mllog_check`), and the MLPerf importer reads other benchmarks' logs
in the same format; one reader serves both.
"""

from __future__ import annotations

import json
from typing import Any

MARKER = ":::MLLOG"
MAX_TIME_MS = 1e15  # milliseconds since 1970: year 33658; anything beyond is not a clock


def parse_lines(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """`:::MLLOG` events in line order (any prefix before the marker), and bad line numbers."""
    events, bad = [], []
    for lineno, line in enumerate(text.split("\n"), start=1):
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
