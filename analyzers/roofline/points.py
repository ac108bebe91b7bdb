"""Where one run and one op sit under their roofs: the placement rule (`place`), the
whole-run point (`run_roofline`) and the rows the per-op table and the hierarchy build on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsuite.analyzers.roofline.doubts import Suspects
from perfsuite.analyzers.roofline.flags import (
    flag_cause,
    run_flag,
)
from perfsuite.analyzers.roofline.inputs import (
    Labeled,
    RooflineInputError,
    _labeled,
    _origin,
    _q,
    _step_time,
)
from perfsuite.analyzers.roofline.mathmode import Context, context, work_by_op
from perfsuite.analyzers.roofline.results import Placement, RunRoofline
from perfsuite.devices.maths import DTYPE_MATH
from perfsuite.devices.specs import normalize_dtype


def _roof_labeled(ctx: Context, math: str) -> Labeled:
    q = ctx.quantity(math)
    return Labeled(
        q.get("value"),
        q.get("unit", ""),
        q.get("provenance", "absent"),
        q.get("source", f"no {math} roof"),
    )


def _why_absent(ceil: Mapping[str, Any], key: str, default: str) -> str:
    """`default` and the record's reason for a null ceiling (an empty peaks cache, --no-peaks)."""
    q = ceil.get(key) if isinstance(ceil.get(key), Mapping) else {}
    return f"{default}: {q['source']}" if q.get("value") is None and q.get("source") else default


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def place(
    flops: float | None,
    nbytes: float | None,
    time_s: float | None,
    peak: float | None,
    bandwidth: float | None,
    *,
    math: str | None = None,
    evidence: str | None = None,
    suspects: Suspects | None = None,
) -> Placement:
    """Place one point (FLOPs, bytes, seconds) under the roofs (peak FLOP/s, bandwidth byte/s)."""
    af = _div(flops, time_s)
    ab = _div(nbytes, time_s)
    ai = _div(flops, nbytes)
    ridge = _div(peak, bandwidth)
    bound = attainable = frac = None
    if ai is not None and ridge is not None:
        bound = "memory" if ai < ridge else "compute"
        attainable = min(peak, ai * bandwidth)  # type: ignore[operator]
        frac = _div(ab, bandwidth) if bound == "memory" else _div(af, peak)
    of_peak = _div(af, peak)
    over = flag = None
    if frac is not None and frac > 1.0:
        over = frac
        flag = flag_cause(bound, evidence, frac, bandwidth, peak=peak, suspects=suspects)
        frac = of_peak = None
    elif of_peak is not None and of_peak > 1.0:  # no intensity or ridge, still above the peak
        over = of_peak
        flag = flag_cause("compute", evidence, of_peak, bandwidth, peak=peak, suspects=suspects)
        of_peak = None
    return Placement(
        flops,
        nbytes,
        time_s,
        af,
        ab,
        ai,
        bound,
        attainable,
        frac,
        of_peak,
        math,
        evidence,
        peak,
        over,
        flag,
    )


def run_roofline(record: Mapping[str, Any], ctx: Context | None = None) -> RunRoofline:
    """Whole-run placement: counted FLOPs and modeled bytes over the measured step time,
    judged against the time the step would take with every op at the roof of its math."""
    ctx = ctx or context(record)
    work = record.get("work") or {}
    ceil = record.get("ceilings") or {}
    flops = _labeled(_q(work, "flops_per_step"), "FLOP", "counted")
    if flops.value is None:
        no_capture = (record.get("config") or {}).get("capture") is False
        why = (
            "this run was recorded with --no-capture (no FLOP count); run it again without "
            "--no-capture for a roofline"
            if no_capture
            else "the roofline needs counted FLOPs (a `perfsuite run` record with capture on)"
        )
        raise RooflineInputError(f"{_origin(record)}: field work.flops_per_step: missing; {why}")
    nbytes = _labeled(_q(work, "bytes_per_step"), "byte", "modeled")
    step = _step_time(record)
    bw = ctx.bandwidth
    model = work_by_op(work)
    roof_t = 0.0
    flop_time = 0.0  # sum of flops / peak over ops: the blended compute roof's denominator
    by_math: dict[str, float] = {}
    missing: list[str] = []
    unroofed: dict[str, float] = {}
    for op, m in model.items():
        om = ctx.maths.get(op)
        pk = ctx.peak(om.math if om else None)
        if pk is None:
            missing.append(op)
            if m["flops"]:
                key = om.math if om else "unknown math"
                unroofed[key] = unroofed.get(key, 0.0) + m["flops"]
            continue
        # the compute roof blends without a bandwidth roof; only the roof time needs both
        flop_time += m["flops"] / pk
        by_math[om.math] = by_math.get(om.math, 0.0) + m["flops"]  # type: ignore[union-attr]
        if bw is not None:
            roof_t += max(m["flops"] / pk, m["bytes"] / bw)
    if not model:  # no per-op table: one roof, the record's dtype
        math = DTYPE_MATH.get(normalize_dtype(ceil.get("dtype") or work.get("dtype")), "fp32")
        pk = ctx.peak(math)
        if pk:
            flop_time, by_math = flops.value / pk, {math: flops.value}
            if bw and nbytes.value is not None:
                roof_t = max(flops.value / pk, nbytes.value / bw)
    # Ops with FLOPs but no roof for their math would make the step look further from its
    # roofs than it is: no whole-run blend then, and roofline() says which roof is missing.
    blend = bool(flop_time) and not unroofed
    eff_peak = _div(sum(by_math.values()), flop_time) if blend else None
    used = {k: _roof_labeled(ctx, k) for k in sorted(by_math)}
    if bw is not None:
        used["memory"] = _roof_labeled(ctx, "memory")
    provs = "/".join(sorted({u.provenance for u in used.values()})) or "absent"
    # only compute roofs make the blended peak; the memory roof is its own row
    names = ", ".join(f"{k} {used[k].provenance}" for k in sorted(by_math))
    d = "derived"
    p = place(flops.value, nbytes.value, step.value, eff_peak, bw)
    timed = blend and bw is not None and nbytes.value is not None  # roof time needs both roofs
    frac = _div(roof_t, step.value) if timed else None
    over = flag = None
    if frac is not None and frac > 1.0:
        over = frac
        flag = run_flag(frac, ctx, by_math)
        frac = None
    elif frac is None and p.over_roof is not None:  # no roof time, still above the peak
        over = p.over_roof
        flag = run_flag(over, ctx, by_math)
    of_peak = p.frac_of_peak if frac is not None or over is None else None
    return RunRoofline(
        run_id=str(record.get("run_id")),
        device=ceil.get("device"),
        dtype=ceil.get("dtype") or work.get("dtype"),
        flops_per_step=flops,
        bytes_per_step=nbytes,
        step_time=step,
        achieved_flops=Labeled(
            p.achieved_flops, "FLOP/s", d, f"{flops.provenance} FLOP / {step.provenance} s"
        ),
        achieved_bandwidth=Labeled(
            p.achieved_bandwidth, "byte/s", d, f"{nbytes.provenance} byte / {step.provenance} s"
        ),
        intensity=Labeled(
            p.intensity, "FLOP/byte", d, f"{flops.provenance} FLOP / {nbytes.provenance} byte"
        ),
        peak_flops=Labeled(eff_peak, "FLOP/s", d, f"blend of roofs: {names}"),
        memory_bandwidth=_roof_labeled(ctx, "memory")
        if bw
        else Labeled(
            None, "byte/s", "absent", _why_absent(ceil, "memory_bandwidth", "no bandwidth roof")
        ),
        ridge=Labeled(_div(eff_peak, bw), "FLOP/byte", d, f"{provs} roofs"),
        bound=p.bound,
        attainable=Labeled(p.attainable, "FLOP/s", d, f"{provs} roofs"),
        roof_time=Labeled(
            roof_t if timed else None,
            "s",
            "modeled",
            f"per-op FLOP/byte model at {provs} roofs"
            + (f"; {len(missing)} ops without a roof left out" if missing else ""),
        ),
        frac_of_roof=frac,
        frac_of_peak=of_peak,
        roofs_used=used,
        flops_by_math=by_math,
        math_source=ctx.math_source,
        over_roof=over,
        flag=flag,
        unroofed_flops=unroofed,
    )
