"""What the roofline reads from a record: labeled numbers (`Labeled`), the measured step
time, and the per-op work (`work_by_op`: counted FLOPs, modeled bytes and calls of each op).
A record lacking what the roofline needs raises `RooflineInputError` naming file and field.
Pure, torch-free.
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


def quantity_of(section: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    """The quantity dict `section[key]` ({"value", "unit", "provenance", ...}), else None."""
    q = (section or {}).get(key)
    return q if isinstance(q, dict) else None


def labeled(q: dict[str, Any] | None, unit: str, default_prov: str) -> Labeled:
    """A quantity dict as a `Labeled`; a missing value is provenance "absent", never a
    default provenance."""
    if not q or q.get("value") is None:
        # never label a missing number as measured/spec: it was not obtained at all
        return Labeled(None, unit, "absent", (q or {}).get("source") or "absent from the record")
    return Labeled(
        float(q["value"]),
        q.get("unit", unit),
        q.get("provenance", default_prov),
        q.get("source", ""),
    )


def origin(record: Mapping[str, Any]) -> str:
    """The record's file (else its run id) for the first word of an error message."""
    return str(record.get("_path") or record.get("run_id") or "<record>")


def step_time(record: Mapping[str, Any]) -> Labeled:
    """The step time the whole run is judged on: the run's typical step (throughput, median
    epoch), else the profiled window's; raises RooflineInputError without one. Per-op rows are
    reconciled to the step of the epoch the window was taken in
    (perfsuite.analyzers.roofline.reconcile)."""
    for section, key in (("throughput", "step_time"), ("timeline", "measured_step_time")):
        step = labeled(quantity_of(record.get(section), key), "s", "measured")
        if step.value is not None:
            return step
    step = labeled(quantity_of(record.get("timeline"), "step_time"), "s", "measured")
    if step.value is not None:
        return Labeled(
            step.value,
            step.unit,
            step.provenance,
            "profiled window, profiler on (slower than unprofiled steps): " + step.source,
        )
    raise RooflineInputError(
        f"{origin(record)}: field throughput.step_time: missing; "
        "the roofline needs a measured step time"
    )


def work_by_op(work: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """work.per_op summed over phases (forward, backward, optimizer) by op name."""
    out: dict[str, dict[str, Any]] = {}
    for row in work.get("per_op") or []:
        acc = out.setdefault(
            row["op"], {"flops": 0.0, "bytes": 0.0, "calls": 0.0, "family": row.get("family")}
        )
        acc["flops"] += float(row.get("flops") or 0)
        acc["bytes"] += float(row.get("bytes") or 0)
        acc["calls"] += float(row.get("calls") or 0)
    return out


def guess_family(op: str) -> str | None:
    """Matrix family from an op name, for per-op rows written without `family`."""
    name = op.split("::")[-1]
    if "conv" in name:
        return "convolution"
    if name in ("mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "addbmm", "_addmm"):
        return "matmul"
    if "attention" in name:
        return "attention"
    return None
