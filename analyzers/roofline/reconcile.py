"""Per-op times that add up to the measured step time.

Why: profiled op times come from a window with the profiler on, and they never cover the whole
step (launch gaps, host work, idle device). Shares of the profiled sum would overstate every
op; shares of the measured step, with an explicit "other / not attributed" row, add up. When
the profiled sum exceeds the measured step (profiler overhead, overlapping streams, nested
inclusive times), rows are scaled to the measured time by their share and labeled modeled.
Pure functions on record dicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from perfsuite.fmt import si

OTHER = "other / not attributed"


@dataclass(frozen=True)
class TimeRow:
    name: str
    time_s: float  # per step
    share: float  # of the measured step time
    provenance: str  # "measured" | "modeled" (scaled) | "derived" (the other row)
    profiled_s: float | None = None  # before scaling; None for the other row


@dataclass(frozen=True)
class Reconciled:
    rows: list[TimeRow]  # largest first, the other row last
    measured_step_s: float
    measured_source: str
    attributed_s: float  # profiled sum per step, before scaling
    scale: float  # 1.0, or measured / attributed when the profiled sum exceeded it
    time_kind: str
    notes: list[str] = field(default_factory=list)

    @property
    def other(self) -> TimeRow:
        return self.rows[-1]


def measured_step_time(record: Mapping[str, Any]) -> tuple[float | None, str]:
    """The run clock's step time: `timeline.measured_step_time` (same epoch as the profiled
    window) when present, else `throughput.step_time`; (seconds, source)."""
    for section, key in (("timeline", "measured_step_time"), ("throughput", "step_time")):
        q = (record.get(section) or {}).get(key)
        if isinstance(q, Mapping) and q.get("value"):
            return float(q["value"]), f"{section}.{key}: {q.get('source', '')}".rstrip(": ")
    return None, "no measured step time"


# Window and clock steps this far apart (either way) describe different machines: on the
# shared 2-vCPU VM a contended epoch ran its steps 25x slower than the window after it.
APART = 1.5


def window_vs_clock(record: Mapping[str, Any], measured_s: float | None) -> str | None:
    """A note when the profile window's own steps (`timeline.step_time`, profiler on) and the
    clock's step the per-op times are reconciled to are more than APART times apart."""
    q = (record.get("timeline") or {}).get("step_time")
    window = float(q["value"]) if isinstance(q, Mapping) and q.get("value") else None
    if not window or not measured_s or max(window, measured_s) / min(window, measured_s) < APART:
        return None
    if measured_s > window:
        why = "the clock's steps were slowed: a contended machine while it ran"
        then = "op shares and roof fractions describe the window, the other row takes the rest"
    else:
        why = "the window's steps were slowed: the profiler's own cost, or a contended machine"
        then = "op times are scaled down to the clock's step where they sum past it (modeled)"
    return (
        f"the profile window's steps took {si(window, 's')} each, the clock's "
        f"{si(measured_s, 's')}: "
        f"{max(window, measured_s) / min(window, measured_s):.1f}x apart ({why}); {then}"
    )


def reconcile(
    times: Mapping[str, float], measured_s: float, *, time_kind: str = "", measured_source: str = ""
) -> Reconciled:
    """Rows with shares of `measured_s`, plus the other row; they sum to `measured_s`."""
    if not measured_s or measured_s <= 0 or not math.isfinite(measured_s):
        raise ValueError(f"measured step time must be positive, got {measured_s!r}")
    attributed = math.fsum(max(0.0, float(t)) for t in times.values())
    notes: list[str] = []
    scale, prov = 1.0, "measured"
    if attributed > measured_s:
        scale, prov = measured_s / attributed, "modeled"
        notes.append(
            f"profiled op times sum to {si(attributed, 's', 4)} per step, more than the measured "
            f"{si(measured_s, 's', 4)} (profiler overhead, or overlapping streams/nested times): "
            f"each row is scaled by {scale:.3f} to its share of the measured step (modeled)"
        )
    rows = [
        TimeRow(
            n, max(0.0, float(t)) * scale, max(0.0, float(t)) * scale / measured_s, prov, float(t)
        )
        for n, t in times.items()
    ]
    rows.sort(key=lambda r: (-r.time_s, r.name))
    other = measured_s - math.fsum(r.time_s for r in rows)
    other = max(0.0, other) if scale == 1.0 else 0.0
    rows.append(TimeRow(OTHER, other, other / measured_s, "derived"))
    return Reconciled(rows, measured_s, measured_source, attributed, scale, time_kind, notes)


def is_device_row(row: Mapping[str, Any]) -> bool:
    """Kernel/memcpy/GPU-annotation rows of key_averages: device time but no host time. Not
    ops: every reader of `timeline.ops` that wants ops skips them (on a GPU record)."""
    return not row.get("self_time_s") and not row.get("total_time_s")


Basis = Literal["device", "host"]


def own_time(row: Mapping[str, Any], basis: Basis | None = None) -> float:
    """The part of an op row's time that is its own, not its children's (its self time).

    `basis` picks the clock: "device" (device self time, kernels launched by the op itself; 0
    where the row records none), "host" (host self time: duration minus its children), or None,
    the row's own: the basis op_time reads for that row (device self time where any device
    time is recorded, host self time otherwise).

    Why a choice: a single row's own time belongs next to that row's time (op_time), so the
    roofline's per-op rows take each row's own basis (None). A sum over rows must not add host
    and device times together, so reconcile_timeline fixes one basis for the whole record.
    """
    if basis is None:
        has_device = (
            row.get("device_total_time_s") is not None or row.get("device_time_s") is not None
        )
        basis = "device" if has_device else "host"
    if basis == "device":
        return float(row.get("device_time_s") or 0.0)
    if basis == "host":
        return float(row.get("self_time_s") or 0.0)
    raise ValueError(f"basis must be 'device', 'host' or None, got {basis!r}")


def own_times(record: Mapping[str, Any], basis: Basis | None = None) -> dict[str, float]:
    """op -> own_time(row, basis) per step from `timeline.ops`, summed over the rows of one op
    name; kernel rows (is_device_row) are not ops and are skipped, as profiled_times does.
    Every op row is kept, an op with no time of its own at 0."""
    tl = record.get("timeline") or {}
    steps = tl.get("steps") or 0
    out: dict[str, float] = {}
    if not steps:
        return out
    for row in tl.get("ops") or []:
        if row.get("device_time_s") is not None and is_device_row(row):
            continue
        out[row["op"]] = out.get(row["op"], 0.0) + own_time(row, basis) / steps
    return out


def reconcile_timeline(record: Mapping[str, Any]) -> Reconciled | None:
    """The profiled ops' own (self) times against the measured step; None without both.

    Self times do not nest, so they can be summed; one basis for the whole record (device
    self time when any row has device time, host self time otherwise) so that host and device
    times are never added together: on a GPU an op row without device time counts 0.
    """
    rows = (record.get("timeline") or {}).get("ops") or []
    basis: Basis = "device" if any(r.get("device_time_s") is not None for r in rows) else "host"
    times = {op: t for op, t in own_times(record, basis).items() if t > 0}
    return reconcile_record(record, times, f"{basis} self")


def reconcile_record(
    record: Mapping[str, Any], times: Mapping[str, float], kind: str
) -> Reconciled | None:
    """`times` (per step) against the record's measured step, with the window-vs-clock note;
    None without both."""
    measured, src = measured_step_time(record)
    if measured is None or not times:
        return None
    out = reconcile(times, measured, time_kind=kind, measured_source=src)
    apart = window_vs_clock(record, measured)
    if apart:
        out.notes.append(apart)
    return out


class ProfiledOp(NamedTuple):
    """One op of the profile window, per step."""

    time_s: float
    kind: str  # "device" | "total" (inclusive host) | "self"
    calls: float
    step_cv: float | None  # stdev/mean of its time across the window's steps; None if unknown


def op_time(row: Mapping[str, Any]) -> tuple[float, str]:
    """Inclusive device time when profiled, else device self time, else inclusive host time,
    else self host time.

    Inclusive first: the FLOP model sits on the outer op (aten::convolution) while on GPUs the
    kernels belong to its innermost child (aten::cudnn_convolution), whose self time would
    leave the modeled op at zero.
    """
    if row.get("device_total_time_s") is not None:
        return float(row["device_total_time_s"]), "device"
    if row.get("device_time_s") is not None:
        return float(row["device_time_s"]), "device"
    if row.get("total_time_s") is not None:
        return float(row["total_time_s"]), "total"
    return float(row.get("self_time_s") or 0.0), "self"


def profiled_times(record: Mapping[str, Any], notes: list[str]) -> dict[str, ProfiledOp]:
    """op -> its per-step time from `timeline.ops` (rows of one op name are summed)."""
    tl = record.get("timeline") or {}
    steps = tl.get("steps") or 0
    times: dict[str, ProfiledOp] = {}
    if tl.get("ops") and not steps:
        notes.append("timeline.steps is 0 or missing: per-op times cannot be made per step")
        return times
    for row in tl.get("ops") or []:
        if row.get("device_time_s") is not None and is_device_row(row):
            continue  # a kernel/memcpy row of key_averages, not an op
        t, kind = op_time(row)
        calls = float(row.get("calls") or 0)
        cv = row.get("step_cv")
        prev = times.get(row["op"])
        if prev:
            t, calls, cv = t + prev.time_s * steps, calls + prev.calls * steps, None
        times[row["op"]] = ProfiledOp(t / steps, kind, calls / steps, cv)
    return times
