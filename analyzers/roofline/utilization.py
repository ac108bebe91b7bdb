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

from perfsuite.analyzers.roofline.context import Context, context
from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.ops import op_rooflines
from perfsuite.analyzers.roofline.points import divide, run_roofline
from perfsuite.devices.maths import DTYPE_MATH
from perfsuite.devices.roofs import merge_roofs, spec_roofs
from perfsuite.devices.specs import normalize_dtype

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
    util_pct_mean: float | None  # machine-wide: every process, percent of all cores
    util_pct_max: float | None
    rss_bytes_max: float | None
    process_util_pct_mean: float | None = None  # the run's process, percent of one core
    process_util_pct_max: float | None = None


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


def _provenance(roof: Mapping[str, Any]) -> str | None:
    return next((q.get("provenance") for q in roof.values() if isinstance(q, dict)), None)


def _peak(roofs: Mapping[str, Any], math: str) -> tuple[float | None, str | None]:
    q = (roofs.get(math) or {}).get("peak_flops") or {}
    return _f(q.get("value")), q.get("provenance")


def _blend(roofs: Mapping[str, Any], flops_by_math: Mapping[str, float], want: str) -> float | None:
    """FLOP-weighted harmonic blend of the `want`-provenance roofs (None if one is missing)."""
    denom = 0.0
    for math, fl in flops_by_math.items():
        v, prov = _peak(roofs, math)
        if v is None or prov != want:
            return None
        denom += fl / v
    return divide(sum(flops_by_math.values()), denom) if denom else None


def ceilings_both(
    record: Mapping[str, Any],
    ctx: Context | None = None,
    flops_by_math: Mapping[str, float] | None = None,
) -> tuple[float | None, ...]:
    """(measured peak, spec peak, measured bandwidth, spec bandwidth): peaks blended over the
    maths the run computed in (weights: FLOPs per math), bandwidth of the memory roof."""
    ctx = ctx or context(record)
    spec = merge_roofs(
        {k: v for k, v in ctx.roofs.items() if _provenance(v) == "spec"},
        spec_roofs((record.get("ceilings") or {}).get("spec")),
    )
    fbm = dict(flops_by_math or {})
    if not fbm:
        ceil = record.get("ceilings") or {}
        dtype = ceil.get("dtype") or (record.get("work") or {}).get("dtype")
        fbm = {DTYPE_MATH.get(normalize_dtype(dtype), "fp32"): 1.0}
    mem = (ctx.roofs.get("memory") or {}).get("bandwidth") or {}
    smem = (spec.get("memory") or {}).get("bandwidth") or {}
    return (
        _blend(ctx.roofs, fbm, "measured"),
        _blend(spec, fbm, "spec"),
        _f(mem.get("value")) if mem.get("provenance") == "measured" else None,
        _f(smem.get("value")),
    )


_CEILINGS = ("measured peak", "spec peak", "measured bandwidth", "spec bandwidth")


def _rates(scope: str, af: float | None, ab: float | None, c: tuple, notes: list[str]) -> Rates:
    """A fraction above 1 of a ceiling is None, with a note: a rate above a physical limit is
    a model or ceiling error (the roofline names the likely cause), never a utilization."""
    mp, sp, mb, sb = c
    fracs = [divide(af, mp), divide(af, sp), divide(ab, mb), divide(ab, sb)]
    over = [f"{f:.2f}x the {name}" for f, name in zip(fracs, _CEILINGS, strict=True) if f and f > 1]
    if over:
        notes.append(
            f"{scope}: achieved {', '.join(over)}: above a ceiling, so not shown as a "
            "utilization (a wrong roof or a miscounted FLOP/byte model; see the roofline's flag)"
        )
    return Rates(scope, af, ab, *(None if f is not None and f > 1 else f for f in fracs))


def clock_summary(
    telemetry: Mapping[str, Any] | None, spec: Mapping[str, Any] | None
) -> Clock | None:
    """SM clock mean/min against the max spec clock (telemetry's, else the spec table's)."""
    gpu = (telemetry or {}).get("gpu")
    if not gpu:
        return None
    mean, low = _f(gpu.get("sm_clock_hz_mean")), _f(gpu.get("sm_clock_hz_min"))
    top = _f(gpu.get("sm_clock_hz_max_spec")) or _f((spec or {}).get("max_sm_clock_hz"))
    mean_frac = divide(mean, top)
    throttled = None if mean_frac is None else mean_frac < THROTTLE_FRACTION
    return Clock(mean, low, top, mean_frac, divide(low, top), throttled)


def utilization(record: Mapping[str, Any], peaks: Mapping[str, Any] | None = None) -> Utilization:
    """Run and per-op rates over both ceilings, clock and CPU summaries; `peaks`: roofs from a
    peaks file, used before the record's."""
    ctx = context(record, peaks)
    notes: list[str] = []
    try:
        rr = run_roofline(record, ctx)
        # maths without a roof stay in the blend, so that it is None, not the other maths' peak
        c = ceilings_both(record, ctx, {**rr.flops_by_math, **rr.unroofed_flops})
        # a run the roofline flags has its one note there ("whole run: ..."), with the cause
        sink = [] if rr.flag else notes
        run = _rates("run", rr.achieved_flops.value, rr.achieved_bandwidth.value, c, sink)
    except RooflineInputError as exc:
        c = ceilings_both(record, ctx)
        run = None
        notes.append(str(exc))
    ops_rows, _, _ = op_rooflines(record, ctx)
    ops = []
    for o in ops_rows:
        if o.status != "joined":
            continue
        fbm = {o.placement.math: 1.0} if o.placement.math else {}
        oc = ceilings_both(record, ctx, fbm) if fbm else c
        pl = o.placement
        # an op the roofline flags has its one note there, naming the likely cause
        sink = [] if pl.flag else notes
        ops.append(_rates(o.op, pl.achieved_flops, pl.achieved_bandwidth, oc, sink))
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
            _f(cpu_t.get("process_util_pct_mean")),
            _f(cpu_t.get("process_util_pct_max")),
        )
        if cpu_t
        else None
    )
    gpu = tel.get("gpu") or {}
    if c[0] is None and c[1] is None:
        missing = sorted(rr.unroofed_flops) if run is not None else []
        notes.append(
            f"no {', '.join(missing)} FLOP/s ceiling (ops of this run computed in it): "
            "fractions of peak are unknown"
            if missing
            else "no FLOP/s ceiling in the record: fractions of peak are unknown"
        )
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
