"""A record's sidecar files (profiler trace, telemetry CSV), resolved against its folder.

Kept with the record, not with the report: the CLI, the report and the Python API all read
sidecars, and reading one must not import the presentation layer (plotly).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfsuite.record.checks import resolve_sidecar
from perfsuite.record.io import RecordError

# The telemetry CSV's columns, in order (written by perfsuite.runner.measure.telemetry). GPU
# columns are
# empty cells without an NVIDIA GPU. cpu_util_pct is machine-wide (all processes, percent of all
# cores), proc_cpu_util_pct this process's (percent of one core).
TELEMETRY_COLUMNS = (
    "t_s",
    "cpu_util_pct",
    "rss_bytes",
    "gpu_util_pct",
    "gpu_sm_clock_hz",
    "gpu_power_w",
    "gpu_mem_used_bytes",
    "proc_cpu_util_pct",  # this process alone, percent of one core (absent in older files)
)


def trace_path(record: Mapping[str, Any]) -> Path:
    """The profiler trace named by `timeline.trace`; RecordError naming the field if absent."""
    origin = record.get("_path") or record.get("run_id") or "<record>"
    name = (record.get("timeline") or {}).get("trace")
    if not name:
        raise RecordError(f"{origin}: field timeline.trace: this run has no trace sidecar")
    try:
        path = resolve_sidecar(record.get("_dir") or ".", name)
    except ValueError as exc:  # outside the run folder: never read
        raise RecordError(f"{origin}: field timeline.trace: {exc}") from None
    if not path.is_file():
        raise RecordError(f"{origin}: field timeline.trace: {path} not found")
    return path


def telemetry_path(record: Mapping[str, Any]) -> Path | None:
    """The sidecar named by telemetry.file, resolved against the record's folder; None if absent."""
    name = (record.get("telemetry") or {}).get("file")
    if not name or not record.get("_dir"):
        return None
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
    return load_telemetry(path)[0]


def load_telemetry(path: Path) -> tuple[dict[str, list[float | None]], str | None]:
    """The columns (as `read_telemetry`) and, when the file cannot be read as the telemetry
    CSV (unreadable, binary, no `t_s` column, no sample, damaged part way), why, in one line,
    so that a reader shows that note rather than an empty chart."""
    cols: dict[str, list[float | None]] = {}
    note = None
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
            if "\x00" in head or "\ufffd" in head:
                return {}, f"{path.name} is binary or not UTF-8 text, not the telemetry CSV"
            fh.seek(0)
            reader = csv.DictReader(fh)
            try:
                cols = {name: [] for name in reader.fieldnames or []}
                for row in reader:
                    for name in cols:
                        cols[name].append(_num(row.get(name) or ""))
            except csv.Error as exc:  # a damaged sidecar: plot the rows read so far
                n = min((len(v) for v in cols.values()), default=0)
                cols = {k: v[:n] for k, v in cols.items()}
                note = f"{path.name} is damaged after {n} row(s) ({exc}); the rows before shown"
    except (OSError, UnicodeError) as exc:
        return {}, f"{path.name} cannot be read ({exc.__class__.__name__}: {exc})"
    if "t_s" not in cols:
        return {}, f"{path.name} has no t_s column: not the telemetry CSV"
    if not any(v is not None for name, vs in cols.items() if name != "t_s" for v in vs):
        return cols, note or f"{path.name} holds no sample"
    return cols, note
