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
    path = Path(record["_dir"]) / name
    return path if path.is_file() else None


def _num(text: str) -> float | None:
    try:
        return float(text) if text.strip() else None
    except ValueError:
        return None


def read_telemetry(path: Path) -> dict[str, list[float | None]]:
    """Columns by name; empty cells (e.g. GPU columns on a CPU run) become None."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols: dict[str, list[float | None]] = {name: [] for name in reader.fieldnames or []}
        for row in reader:
            for name in cols:
                cols[name].append(_num(row.get(name) or ""))
    return cols
