"""The environment section: model, framework, hardware, ceilings with provenance, config and
software versions of each run, as recorded."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.report import html as h


def _kv(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True) if isinstance(obj, (dict, list)) else str(obj)


def environment_section(records: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for rec in records:
        parts.append(f"<h3>{h.esc(rec.get('run_id'))}</h3>")
        rows = [["model", rec.get("model")], ["framework", rec.get("framework")]]
        rows += [[f"hardware.{k}", _kv(v)] for k, v in (rec.get("hardware") or {}).items()]
        ceil = rec.get("ceilings") or {}
        for key in ("peak_flops", "memory_bandwidth"):
            q = ceil.get(key) or {}
            rows.append(
                [
                    f"ceilings.{key}",
                    f"{fmt.si(q.get('value'), q.get('unit', ''))} "
                    f"({q.get('provenance')}: {q.get('source', '')})",
                ]
            )
        rows += [[f"config.{k}", _kv(v)] for k, v in (rec.get("config") or {}).items()]
        rows += [[f"environment.{k}", _kv(v)] for k, v in (rec.get("environment") or {}).items()]
        parts.append(h.table(["field", "value"], rows) + h.notes(rec.get("flags") or []))
    return "".join(parts)
