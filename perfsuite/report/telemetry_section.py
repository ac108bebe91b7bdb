"""The telemetry section: the sampled CPU/GPU series on separate axes with units, and the
record's summary values with their units read from the key names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.figures import runs as figures
from perfsuite.record.sidecars import load_telemetry, telemetry_path
from perfsuite.report import html as h


def telemetry_section(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for i, rec in enumerate(records):
        tel = rec.get("telemetry")
        parts.append(f"<h3>{h.esc(rec.get('run_id'))}</h3>")
        if not tel:
            parts.append('<p class="note">No telemetry recorded.</p>')
            continue
        path = telemetry_path(rec)
        if path:
            columns, note = load_telemetry(path)
            if note:  # never an empty chart without a word
                parts.append(f'<p class="note">Telemetry CSV: {h.esc(note)}.</p>')
            if any(v is not None for k, vs in columns.items() if k != "t_s" for v in vs):
                parts.append(h.figure(figures.telemetry_figure(columns), f"fig-tel-{i}"))
        else:
            parts.append('<p class="note">Telemetry CSV sidecar not found; summary only.</p>')
        rows = [
            [f"{scope}.{k}", _telemetry_value(k, v)]
            for scope in ("cpu", "gpu")
            for k, v in (tel.get(scope) or {}).items()
        ]
        parts.append(h.table(["summary", "value"], rows) + h.notes(tel.get("notes") or []))
    return "".join(parts)


def _telemetry_value(key: str, value: Any) -> str:
    """A telemetry summary value with its unit, read from the key (rss_bytes_max -> B)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return h.cell_text(value)
    for part, unit in (("bytes", "B"), ("_hz", "Hz"), ("_w", "W"), ("_s", "s")):
        if part in key:
            return fmt.si(value, unit)
    if "pct" in key:
        return f"{value:.1f} %"
    return f"{value:.4g}"
