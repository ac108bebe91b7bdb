"""The environment section: model, framework, hardware, ceilings with provenance, config and
software versions of each run, as recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.report import html as h


def flags_anchor(index: int) -> str:
    """The id of run `index`'s flags list on the page (the overview links to it)."""
    return f"flags-{index}"


def environment_section(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for i, rec in enumerate(records):
        parts.append(f"<h3>{h.esc(rec.get('run_id'))}</h3>")
        rows = [[k, h.cell_text(rec.get(k))] for k in ("model", "framework")]
        rows += [[f"hardware.{k}", h.cell_text(v)] for k, v in (rec.get("hardware") or {}).items()]
        ceil = rec.get("ceilings") or {}
        for key in ("peak_flops", "memory_bandwidth"):
            q = ceil.get(key) or {}
            shown = (
                f"{fmt.si(q.get('value'), q.get('unit', ''))} "
                f"({h.cell_text(q.get('provenance'))}: {q.get('source', '')})"
                if q
                else "n/a"
            )
            rows.append([f"ceilings.{key}", shown])
        for section in ("config", "environment"):
            items = (rec.get(section) or {}).items()
            rows += [[f"{section}.{k}", h.cell_text(v)] for k, v in items]
        parts.append(h.table(["field", "value"], rows))
        flags = rec.get("flags") or []
        if flags:
            parts.append(f'<h4 id="{flags_anchor(i)}">Flags ({len(flags)})</h4>' + h.notes(flags))
    return "".join(parts)
