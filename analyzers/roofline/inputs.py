"""Inputs of the roofline read from a record: labeled numbers and the measured step time.

Split from perfsuite.analyzers.roofline.roofline to keep that module small; pure, torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class RooflineInputError(ValueError):
    """A record lacking what a roofline needs; the message names the file and the field."""


@dataclass(frozen=True)
class Labeled:
    """A number with its unit and where it came from (measured, counted, modeled, spec...)."""

    value: float | None
    unit: str
    provenance: str
    source: str = ""


def _q(section: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    q = (section or {}).get(key)
    return q if isinstance(q, dict) else None


def _labeled(q: dict[str, Any] | None, unit: str, default_prov: str) -> Labeled:
    if not q or q.get("value") is None:
        # never label a missing number as measured/spec: it was not obtained at all
        return Labeled(None, unit, "absent", (q or {}).get("source") or "absent from the record")
    return Labeled(
        float(q["value"]),
        q.get("unit", unit),
        q.get("provenance", default_prov),
        q.get("source", ""),
    )


def _origin(record: Mapping[str, Any]) -> str:
    return str(record.get("_path") or record.get("run_id") or "<record>")


def _step_time(record: Mapping[str, Any]) -> Labeled:
    # The whole run is judged on the run's typical step (median epoch); per-op rows are
    # reconciled to the step of the epoch the window was taken in
    # (perfsuite.analyzers.roofline.reconcile).
    for section, key in (("throughput", "step_time"), ("timeline", "measured_step_time")):
        step = _labeled(_q(record.get(section), key), "s", "measured")
        if step.value is not None:
            return step
    step = _labeled(_q(record.get("timeline"), "step_time"), "s", "measured")
    if step.value is not None:
        return Labeled(
            step.value,
            step.unit,
            step.provenance,
            "profiled window, profiler on (slower than unprofiled steps): " + step.source,
        )
    raise RooflineInputError(
        f"{_origin(record)}: field throughput.step_time: missing; "
        "the roofline needs a measured step time"
    )
