"""Report section: where the data came from (and how long training waited for it), which
optimization switches were asked for and what they did, and the math policy in effect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.results.record_view import why_absent
from perfsuite.report import html as h


def data_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    data = rec.get("data") or {}
    if not data:
        return [["data", why_absent(rec, "data")]]
    stall = data.get("stall_time") or {}
    frac = data.get("stall_fraction")
    rows = [
        ["data.kind", h.cell_text(data.get("kind"))],
        ["data.description", h.cell_text(data.get("description"))],
        ["data.num_workers", h.cell_text(data.get("num_workers"))],
        ["data.pinned_memory", h.cell_text(data.get("pinned_memory"))],
        [
            "input stall (training waited for batches)",
            f"{fmt.si(stall.get('value'), 's')} total"
            + (f", {fmt.pct(frac)} of training time" if frac is not None else "")
            + f" ({h.cell_text(stall.get('provenance'))}: {stall.get('source', '')})",
        ],
    ]
    rate = data.get("delivered_rate") or {}
    if data.get("samples_delivered") is not None:
        rows.append(
            [
                "delivered (examples the source supplied in timed epochs)",
                f"{data['samples_delivered']:,}, {fmt.si(rate.get('value'), 'sample/s')} "
                f"({h.cell_text(rate.get('provenance'))}: {rate.get('source', '')})",
            ]
        )
    per_epoch = data.get("stall_per_epoch_s") or []
    if per_epoch:
        rows.append(["input stall per epoch", ", ".join(fmt.si(v, "s") for v in per_epoch)])
    return rows


def switch_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    sw = rec.get("switches") or {}
    if not sw:
        return [["switches", why_absent(rec, "switches")]]
    given = (sw.get("requested") or {}).get("given") or []
    rows = [["switches given", ", ".join(given) or "none (the recipe as is)"]]
    rows += [[f"effect.{k}", h.cell_text(v)] for k, v in (sw.get("effect") or {}).items()]
    return rows


def math_rows(rec: Mapping[str, Any]) -> list[list[str]]:
    math = rec.get("math") or {}  # every record has one (older ones get it at load)
    return [[f"math.{k}", h.cell_text(v)] for k, v in math.items()]


def setup_section(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for rec in records:
        parts.append(f"<h3>{h.esc(rec.get('run_id'))}</h3>")
        rows = data_rows(rec) + switch_rows(rec) + math_rows(rec)
        parts.append(h.table(["field", "value"], rows))
    return "".join(parts)
