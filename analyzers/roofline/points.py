"""Where one run and one op sit under their roofs: the placement rule (`place`), the
whole-run point (`run_roofline`) and the rows the per-op table and the hierarchy build on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.roofline.above_roof import Suspects, flag_cause, run_flag
from perfsuite.analyzers.roofline.context import Context, context
from perfsuite.analyzers.roofline.inputs import (
    Labeled,
    RooflineInputError,
    labeled,
    origin,
    quantity_of,
    step_time,
    work_by_op,
)
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


def divide(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing or b is zero: a rate or fraction not obtained."""
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
    af = divide(flops, time_s)
    ab = divide(nbytes, time_s)
    ai = divide(flops, nbytes)
    ridge = divide(peak, bandwidth)
    bound = attainable = frac = None
    if ai is not None and ridge is not None:
        bound = "memory" if ai < ridge else "compute"
        attainable = min(peak, ai * bandwidth)  # type: ignore[operator]
        frac = divide(ab, bandwidth) if bound == "memory" else divide(af, peak)
    of_peak = divide(af, peak)
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


@dataclass
class _RoofSums:
    """The per-op sums the whole-run point blends its roofs from."""

    flop_time: float = 0.0  # sum of flops / peak over ops: the blended peak's denominator
    roof_time: float = 0.0  # sum of max(flops / peak, bytes / bandwidth): the step at its roofs
    by_math: dict[str, float] = field(default_factory=dict)  # counted FLOPs per roofed math
    unroofed: dict[str, float] = field(default_factory=dict)  # FLOPs per math without a roof
    missing: list[str] = field(default_factory=list)  # ops without a roof

    @property
    def blended(self) -> bool:
        """Whether a blended compute roof exists: some FLOPs have roofs and none lack one (ops
        with FLOPs but no roof would make the step look further from its roofs than it is)."""
        return bool(self.flop_time) and not self.unroofed


def _roof_sums(
    record: Mapping[str, Any], ctx: Context, flops: Labeled, nbytes: Labeled
) -> _RoofSums:
    """Each op at the roof of its math, summed; a record without a per-op table is one point at
    the roof of the record's dtype."""
    work = record.get("work") or {}
    sums, bw = _RoofSums(), ctx.bandwidth
    model = work_by_op(work)
    for op, m in model.items():
        om = ctx.maths.get(op)
        pk = ctx.peak(om.math if om else None)
        if pk is None or om is None:
            sums.missing.append(op)
            if m["flops"]:
                key = om.math if om else "unknown math"
                sums.unroofed[key] = sums.unroofed.get(key, 0.0) + m["flops"]
            continue
        # the compute roof blends without a bandwidth roof; only the roof time needs both
        sums.flop_time += m["flops"] / pk
        sums.by_math[om.math] = sums.by_math.get(om.math, 0.0) + m["flops"]
        if bw is not None:
            sums.roof_time += max(m["flops"] / pk, m["bytes"] / bw)
    if not model:  # no per-op table: one roof, the record's dtype
        ceil = record.get("ceilings") or {}
        math = DTYPE_MATH.get(normalize_dtype(ceil.get("dtype") or work.get("dtype")), "fp32")
        pk = ctx.peak(math)
        if pk and flops.value is not None:
            sums.flop_time, sums.by_math = flops.value / pk, {math: flops.value}
            if bw and nbytes.value is not None:
                sums.roof_time = max(flops.value / pk, nbytes.value / bw)
    return sums


def _counted_flops(record: Mapping[str, Any]) -> Labeled:
    """work.flops_per_step; raises RooflineInputError naming the file and field without it."""
    flops = labeled(quantity_of(record.get("work"), "flops_per_step"), "FLOP", "counted")
    if flops.value is None:
        no_capture = (record.get("config") or {}).get("capture") is False
        why = (
            "this run was recorded with --no-capture (no FLOP count); run it again without "
            "--no-capture for a roofline"
            if no_capture
            else "the roofline needs counted FLOPs (a `perfsuite run` record with capture on)"
        )
        raise RooflineInputError(f"{origin(record)}: field work.flops_per_step: missing; {why}")
    return flops


def run_roofline(record: Mapping[str, Any], ctx: Context | None = None) -> RunRoofline:
    """Whole-run placement: counted FLOPs and modeled bytes over the measured step time,
    judged against the time the step would take with every op at the roof of its math.
    Raises RooflineInputError when the record lacks counted FLOPs or a step time."""
    ctx = ctx or context(record)
    flops = _counted_flops(record)
    nbytes = labeled(quantity_of(record.get("work"), "bytes_per_step"), "byte", "modeled")
    step = step_time(record)
    bw = ctx.bandwidth
    sums = _roof_sums(record, ctx, flops, nbytes)
    eff_peak = divide(sum(sums.by_math.values()), sums.flop_time) if sums.blended else None
    p = place(flops.value, nbytes.value, step.value, eff_peak, bw)
    timed = sums.blended and bw is not None and nbytes.value is not None  # needs both roofs
    frac = divide(sums.roof_time, step.value) if timed else None
    over = flag = None
    if frac is not None and frac > 1.0:
        over, frac = frac, None
    elif frac is None and p.over_roof is not None:  # no roof time, still above the peak
        over = p.over_roof
    if over is not None:
        flag = run_flag(over, ctx.suspects, ctx.maths, sums.by_math)
    of_peak = p.frac_of_peak if frac is not None or over is None else None
    used = {k: _roof_labeled(ctx, k) for k in sorted(sums.by_math)}
    if bw is not None:
        used["memory"] = _roof_labeled(ctx, "memory")
    return RunRoofline(
        run_id=str(record.get("run_id")),
        device=(record.get("ceilings") or {}).get("device"),
        dtype=(record.get("ceilings") or {}).get("dtype")
        or (record.get("work") or {}).get("dtype"),
        flops_per_step=flops,
        bytes_per_step=nbytes,
        step_time=step,
        **_derived(record, ctx, p, (flops, nbytes, step), used, eff_peak),
        bound=p.bound,
        roof_time=Labeled(
            sums.roof_time if timed else None,
            "s",
            "modeled",
            f"per-op FLOP/byte model at {_provenances(used)} roofs"
            + (f"; {len(sums.missing)} ops without a roof left out" if sums.missing else ""),
        ),
        frac_of_roof=frac,
        frac_of_peak=of_peak,
        roofs_used=used,
        flops_by_math=sums.by_math,
        math_source=ctx.math_source,
        over_roof=over,
        flag=flag,
        unroofed_flops=sums.unroofed,
    )


def _provenances(used: Mapping[str, Labeled]) -> str:
    """'measured/spec': the provenances of the roofs used, or 'absent'."""
    return "/".join(sorted({u.provenance for u in used.values()})) or "absent"


def _derived(
    record: Mapping[str, Any],
    ctx: Context,
    p: Placement,
    given: tuple[Labeled, Labeled, Labeled],
    used: Mapping[str, Labeled],
    eff_peak: float | None,
) -> dict[str, Labeled]:
    """The whole run's derived fields (rates, intensity, roofs, ridge, attainable), each
    labeled with what it was derived from; `given`: (FLOPs, bytes, step time)."""
    flops, nbytes, step = given
    d, provs = "derived", _provenances(used)
    # only compute roofs make the blended peak; the memory roof is its own row
    names = ", ".join(f"{k} {u.provenance}" for k, u in used.items() if k != "memory")
    bw = ctx.bandwidth
    ceil = record.get("ceilings") or {}
    return {
        "achieved_flops": Labeled(
            p.achieved_flops, "FLOP/s", d, f"{flops.provenance} FLOP / {step.provenance} s"
        ),
        "achieved_bandwidth": Labeled(
            p.achieved_bandwidth, "byte/s", d, f"{nbytes.provenance} byte / {step.provenance} s"
        ),
        "intensity": Labeled(
            p.intensity, "FLOP/byte", d, f"{flops.provenance} FLOP / {nbytes.provenance} byte"
        ),
        "peak_flops": Labeled(eff_peak, "FLOP/s", d, f"blend of roofs: {names}"),
        "memory_bandwidth": _roof_labeled(ctx, "memory")
        if bw
        else Labeled(
            None, "byte/s", "absent", _why_absent(ceil, "memory_bandwidth", "no bandwidth roof")
        ),
        "ridge": Labeled(divide(eff_peak, bw), "FLOP/byte", d, f"{provs} roofs"),
        "attainable": Labeled(p.attainable, "FLOP/s", d, f"{provs} roofs"),
    }
