"""Read the telemetry CSV sidecar (columns t_s, cpu_util_pct, rss_bytes, gpu_*) for plotting."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def telemetry_path(record: Mapping[str, Any]) -> Path | None:
    """The sidecar named by telemetry.file, resolved against the record's folder; None if absent."""
    name = (record.get("telemetry") or {}).get("file")
    if not name or not record.get("_dir"):
        return None
    from perfsuite.record.checks import resolve_sidecar

    try:
        path = resolve_sidecar(record["_dir"], name)
    except ValueError:  # outside the run folder: never read
        return None
    return path if path.is_file() else None


def _num(text: str) -> float | None:
    try:
        return float(text) if text.strip() else None
    except ValueError:
        return None


def read_telemetry(path: Path) -> dict[str, list[float | None]]:
    """Columns by name; empty cells (e.g. GPU columns on a CPU run) become None."""
    cols: dict[str, list[float | None]] = {}
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        reader = csv.DictReader(fh)
        try:
            cols = {name: [] for name in reader.fieldnames or []}
            for row in reader:
                for name in cols:
                    cols[name].append(_num(row.get(name) or ""))
        except csv.Error:  # a damaged sidecar: plot the rows read so far
            n = min((len(v) for v in cols.values()), default=0)
            cols = {k: v[:n] for k, v in cols.items()}
    return cols
