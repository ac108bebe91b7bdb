"""Building blocks of a run record: quantities with provenance, ids, an empty record."""

from __future__ import annotations

import datetime as _dt
import math
import secrets
from typing import Any

SCHEMA = "perfsuite.run"
SCHEMA_VERSION = 5  # each older version is migrated at load (perfsuite/record/migrate.py)

# Where a number came from. "counted" = exact count by instrumentation (e.g. FLOPs counted on
# a real step); "modeled" = a formula's estimate (e.g. compulsory DRAM bytes); "derived" =
# arithmetic on other fields of the record; "absent" = not obtained at all: the value is null
# and the source says why, so a null is never labeled with a way of obtaining it.
PROVENANCES = ("measured", "counted", "modeled", "spec", "imported", "derived", "absent")


def quantity(value: float | None, unit: str, provenance: str, source: str = "") -> dict[str, Any]:
    """A number that says its unit and where it came from.

    Non-finite values become None: JSON has no NaN, and a NaN is "not measured", not a number.
    """
    if provenance not in PROVENANCES:
        raise ValueError(f"unknown provenance {provenance!r}; expected one of {PROVENANCES}")
    if provenance == "absent" and value is not None:
        raise ValueError(f"an absent quantity has no value, got {value!r}")
    if value is not None:
        value = float(value)
        if not math.isfinite(value):
            value = None
    out: dict[str, Any] = {"value": value, "unit": unit, "provenance": provenance}
    if source:
        out["source"] = source
    return out


def qvalue(q: dict[str, Any] | None) -> float | None:
    """The value of a quantity dict, or None when absent."""
    if not q:
        return None
    v = q.get("value")
    return None if v is None else float(v)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id(prefix: str) -> str:
    """`<prefix>-YYYYmmddTHHMMSS-<4 hex>`: sortable by start time, unique across parallel runs."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in prefix)
    return f"{safe}-{stamp}-{secrets.token_hex(2)}"


def new_record(
    *,
    run_id: str,
    task: dict[str, Any],
    source_kind: str = "perfsuite",
    environment: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A minimal valid record with status "running" and an empty evaluation curve."""
    now = utc_now()
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "status": "running",
        "created_at": now,
        "updated_at": now,
        "error": None,
        "source": {"kind": source_kind, "files": []},
        "task": dict(task),
        "group": None,
        "environment": environment or {},
        "hardware": {},
        "model": None,
        "framework": None,
        "config": config or {},
        "evaluations": [],
        "time_to_accuracy": {
            "metric": task["metric"],
            "threshold": task["threshold"],
            "reached": False,
            "time_s": None,
            "epoch": None,
            "evaluation_index": None,
        },
        "sidecars": {},
        "flags": [],
    }
