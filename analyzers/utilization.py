"""Utilization: achieved rates over measured AND spec ceilings, clocks, CPU load.

Why both ceilings: "% of measured" says how well the workload uses what this stack can
reach; "% of spec" says how much of the silicon's promise is left on the table. SM-clock
telemetry (mean and min against the spec max clock) makes a throttled GPU visible, since a
throttled device lowers every achieved rate without any code being at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzers.roofline import RooflineInputError, _div, op_rooflines, run_roofline

# A mean SM clock under this fraction of the spec max clock is reported as throttled.
THROTTLE_FRACTION = 0.9


@dataclass(frozen=True)
class Rates:
    """Achieved FLOP/s and byte/s of one scope (the run or an op) against both ceilings."""

    scope: str
    achieved_flops: float | None
    achieved_bandwidth: float | None
    of_measured_peak: float | None
    of_spec_peak: float | None
    of_measured_bandwidth: float | None
    of_spec_bandwidth: float | None


@dataclass(frozen=True)
class Clock:
    sm_clock_hz_mean: float | None
    sm_clock_hz_min: float | None
    sm_clock_hz_max_spec: float | None
    mean_of_max: float | None
    min_of_max: float | None
    throttled: bool | None  # None: no spec clock to compare with


@dataclass(frozen=True)
class Cpu:
    util_pct_mean: float | None
    util_pct_max: float | None
    rss_bytes_max: float | None


@dataclass(frozen=True)
class Utilization:
    run_id: str
    measured_peak: float | None
    spec_peak: float | None
    measured_bandwidth: float | None
    spec_bandwidth: float | None
    run: Rates | None
    ops: list[Rates]
    clock: Clock | None
    cpu: Cpu | None
    gpu_util_pct_mean: float | None
    gpu_power_w_mean: float | None
    notes: list[str] = field(default_factory=list)


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


def ceilings_both(record: Mapping[str, Any]) -> tuple[float | None, ...]:
    """(measured peak, spec peak, measured bandwidth, spec bandwidth) from `ceilings`."""
    ceil = record.get("ceilings") or {}
    spec = ceil.get("spec") or {}
    dtype = ceil.get("dtype") or (record.get("work") or {}).get("dtype") or "float32"

    def measured(key: str) -> float | None:
        q = ceil.get(key) or {}
        return _f(q.get("value")) if q.get("provenance") == "measured" else None

    def spec_of(key: str, table_value: Any) -> float | None:
        q = ceil.get(key) or {}
        if q.get("provenance") == "spec" and q.get("value") is not None:
            return float(q["value"])
        return _f(table_value)

    return (
        measured("peak_flops"),
        spec_of("peak_flops", (spec.get("flops") or {}).get(dtype)),
        measured("memory_bandwidth"),
        spec_of("memory_bandwidth", spec.get("memory_bandwidth")),
    )


def _rates(scope: str, af: float | None, ab: float | None, c: tuple) -> Rates:
    mp, sp, mb, sb = c
    return Rates(scope, af, ab, _div(af, mp), _div(af, sp), _div(ab, mb), _div(ab, sb))


def clock_summary(
    telemetry: Mapping[str, Any] | None, spec: Mapping[str, Any] | None
) -> Clock | None:
    """SM clock mean/min against the max spec clock (telemetry's, else the spec table's)."""
    gpu = (telemetry or {}).get("gpu")
    if not gpu:
        return None
    mean, low = _f(gpu.get("sm_clock_hz_mean")), _f(gpu.get("sm_clock_hz_min"))
    top = _f(gpu.get("sm_clock_hz_max_spec")) or _f((spec or {}).get("max_sm_clock_hz"))
    mean_frac = _div(mean, top)
    throttled = None if mean_frac is None else mean_frac < THROTTLE_FRACTION
    return Clock(mean, low, top, mean_frac, _div(low, top), throttled)


def utilization(record: Mapping[str, Any]) -> Utilization:
    """Run and per-op rates over both ceilings, clock and CPU summaries."""
    c = ceilings_both(record)
    notes: list[str] = []
    try:
        rr = run_roofline(record)
        run = _rates("run", rr.achieved_flops.value, rr.achieved_bandwidth.value, c)
    except RooflineInputError as exc:
        run = None
        notes.append(str(exc))
    ops_rows, _, _ = op_rooflines(record, None, None)
    ops = [
        _rates(o.op, o.placement.achieved_flops, o.placement.achieved_bandwidth, c)
        for o in ops_rows
        if o.status == "joined"
    ]
    tel = record.get("telemetry") or {}
    clock = clock_summary(tel, (record.get("ceilings") or {}).get("spec"))
    if clock and clock.throttled:
        notes.append(
            f"GPU SM clock averaged {100 * (clock.mean_of_max or 0):.0f}% of its max "
            "spec clock: throttled (power/thermal), every achieved rate is lowered"
        )
    cpu_t = tel.get("cpu") or {}
    cpu = (
        Cpu(
            _f(cpu_t.get("util_pct_mean")),
            _f(cpu_t.get("util_pct_max")),
            _f(cpu_t.get("rss_bytes_max")),
        )
        if cpu_t
        else None
    )
    gpu = tel.get("gpu") or {}
    if c[0] is None and c[1] is None:
        notes.append("no FLOP/s ceiling in the record: fractions of peak are unknown")
    return Utilization(
        str(record.get("run_id")),
        *c,
        run,
        ops,
        clock,
        cpu,
        _f(gpu.get("util_pct_mean")),
        _f(gpu.get("power_w_mean")),
        notes,
    )
