"""Roofline placement of a run and of its ops: how far each is from what the device allows.

Pure functions on record dicts (no torch). Conventions: a multiply-add is 2 FLOP; work
FLOPs are counted per step, bytes are modeled compulsory DRAM traffic (so arithmetic
intensity is an upper bound: real traffic is larger when caches miss); time is measured.
Attainable roof = min(peak FLOP/s, intensity x bandwidth); bound = memory when intensity <
ridge point (peak / bandwidth). The fraction of the roof is achieved FLOP/s over the compute
roof when compute-bound, achieved byte/s over the bandwidth when memory-bound (the same
number as achieved / attainable, and still defined for ops with zero FLOPs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# One line per field of the whole-run block; the CLI and report show these verbatim.
EXPLAIN = {
    "flops_per_step": "FLOPs of one training step, counted by instrumentation (mul-add = 2)",
    "bytes_per_step": "DRAM bytes of one step, modeled as compulsory traffic (caches ignored)",
    "step_time": "wall time of one training step, measured",
    "achieved_flops": "flops_per_step / step_time",
    "achieved_bandwidth": "bytes_per_step / step_time (modeled bytes over measured time)",
    "intensity": "arithmetic intensity = flops / bytes; an upper bound, bytes are compulsory",
    "peak_flops": "compute ceiling for the run's dtype (measured matmul, else spec)",
    "memory_bandwidth": "memory ceiling (measured copy, else spec)",
    "ridge": "peak_flops / memory_bandwidth: intensity where the two roofs meet",
    "bound": "memory if intensity < ridge, else compute",
    "attainable": "min(peak_flops, intensity x memory_bandwidth): the roof above this point",
    "frac_of_roof": "achieved / attainable: how close the run gets to its roof",
    "frac_of_peak": "achieved_flops / peak_flops",
}


class RooflineInputError(ValueError):
    """A record lacking what a roofline needs; the message names the file and the field."""


@dataclass(frozen=True)
class Labeled:
    """A number with its unit and where it came from (measured, counted, modeled, spec...)."""

    value: float | None
    unit: str
    provenance: str
    source: str = ""


@dataclass(frozen=True)
class Placement:
    """Where one point (run, op or kernel) sits under the roofs."""

    flops: float | None  # per step (or per window for kernels)
    bytes: float | None
    time_s: float | None
    achieved_flops: float | None
    achieved_bandwidth: float | None
    intensity: float | None
    bound: str | None  # "memory" | "compute" | None
    attainable: float | None
    frac_of_roof: float | None
    frac_of_peak: float | None


@dataclass(frozen=True)
class RunRoofline:
    run_id: str
    device: str | None
    dtype: str | None
    flops_per_step: Labeled
    bytes_per_step: Labeled
    step_time: Labeled
    achieved_flops: Labeled
    achieved_bandwidth: Labeled
    intensity: Labeled
    peak_flops: Labeled
    memory_bandwidth: Labeled
    ridge: Labeled
    bound: str | None
    attainable: Labeled
    frac_of_roof: float | None
    frac_of_peak: float | None


@dataclass(frozen=True)
class OpRoofline:
    """One op of the profiled window joined with its FLOP/byte model (per step)."""

    op: str
    status: str  # "joined" | "no_flop_model" | "no_time"
    calls: float | None  # per step
    time_s: float | None  # per step
    time_kind: str | None  # "device" | "total" | "self"
    time_share: float | None  # of the profiled step time
    placement: Placement
    lost_time_s: float | None  # time_s x (1 - frac_of_roof), >= 0


@dataclass(frozen=True)
class LevelPoint:
    """A kernel or op against one memory level of the hierarchical roofline."""

    name: str
    level: str  # "DRAM" | "L2"
    bytes_provenance: str  # "measured" | "modeled"
    ceiling_bandwidth: float | None
    placement: Placement


@dataclass(frozen=True)
class Hierarchical:
    source: str  # "counters" | "modeled"
    levels: dict[str, float | None]  # level -> bandwidth byte/s (None: not known)
    points: list[LevelPoint]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Roofline:
    run: RunRoofline
    ops: list[OpRoofline]
    ranking: list[OpRoofline]  # joined ops by lost time, largest first
    hierarchical: Hierarchical
    profiled_step_time_s: float | None
    notes: list[str] = field(default_factory=list)


def _q(section: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    q = (section or {}).get(key)
    return q if isinstance(q, dict) else None


def _labeled(q: dict[str, Any] | None, unit: str, default_prov: str) -> Labeled:
    if not q or q.get("value") is None:
        # never label a missing number as measured/spec: it was not obtained at all
        return Labeled(None, unit, "absent", (q or {}).get("source") or "absent from the record")
    return Labeled(float(q["value"]), q.get("unit", unit), q.get("provenance", default_prov),
                   q.get("source", ""))


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def place(flops: float | None, nbytes: float | None, time_s: float | None,
          peak: float | None, bandwidth: float | None) -> Placement:
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
    return Placement(flops, nbytes, time_s, af, ab, ai, bound, attainable, frac, _div(af, peak))


def _origin(record: Mapping[str, Any]) -> str:
    return str(record.get("_path") or record.get("run_id") or "<record>")


def run_roofline(record: Mapping[str, Any]) -> RunRoofline:
    """Whole-run placement from work.flops_per_step, work.bytes_per_step, throughput.step_time."""
    work = record.get("work") or {}
    ceil = record.get("ceilings") or {}
    flops = _labeled(_q(work, "flops_per_step"), "FLOP", "counted")
    if flops.value is None:
        raise RooflineInputError(f"{_origin(record)}: field work.flops_per_step: missing; the "
                                 "roofline needs counted FLOPs (record from `perfsuite run`)")
    nbytes = _labeled(_q(work, "bytes_per_step"), "byte", "modeled")
    step = _labeled(_q(record.get("throughput"), "step_time"), "s", "measured")
    if step.value is None:
        step = _labeled(_q(record.get("timeline"), "step_time"), "s", "measured")
        if step.value is not None:
            step = Labeled(step.value, step.unit, step.provenance,
                           "profiled window, profiler on (slower than unprofiled steps): "
                           + step.source)
    if step.value is None:
        raise RooflineInputError(f"{_origin(record)}: field throughput.step_time: missing; "
                                 "the roofline needs a measured step time")
    peak = _labeled(_q(ceil, "peak_flops"), "FLOP/s", "measured")
    bw = _labeled(_q(ceil, "memory_bandwidth"), "byte/s", "measured")
    p = place(flops.value, nbytes.value, step.value, peak.value, bw.value)
    ceil_prov = "/".join(sorted({peak.provenance, bw.provenance}))
    d = "derived"
    return RunRoofline(
        run_id=str(record.get("run_id")), device=ceil.get("device"),
        dtype=ceil.get("dtype") or work.get("dtype"),
        flops_per_step=flops, bytes_per_step=nbytes, step_time=step,
        achieved_flops=Labeled(p.achieved_flops, "FLOP/s", d,
                               f"{flops.provenance} FLOP / {step.provenance} s"),
        achieved_bandwidth=Labeled(p.achieved_bandwidth, "byte/s", d,
                                   f"{nbytes.provenance} byte / {step.provenance} s"),
        intensity=Labeled(p.intensity, "FLOP/byte", d,
                          f"{flops.provenance} FLOP / {nbytes.provenance} byte"),
        peak_flops=peak, memory_bandwidth=bw,
        ridge=Labeled(_div(peak.value, bw.value), "FLOP/byte", d, f"{ceil_prov} ceilings"),
        bound=p.bound,
        attainable=Labeled(p.attainable, "FLOP/s", d, f"{ceil_prov} ceilings"),
        frac_of_roof=p.frac_of_roof, frac_of_peak=p.frac_of_peak,
    )


def _work_by_op(work: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """work.per_op summed over phases (forward, backward, optimizer) by op name."""
    out: dict[str, dict[str, float]] = {}
    for row in work.get("per_op") or []:
        acc = out.setdefault(row["op"], {"flops": 0.0, "bytes": 0.0, "calls": 0.0})
        acc["flops"] += float(row.get("flops") or 0)
        acc["bytes"] += float(row.get("bytes") or 0)
        acc["calls"] += float(row.get("calls") or 0)
    return out


def _op_time(row: Mapping[str, Any]) -> tuple[float, str]:
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


def op_rooflines(record: Mapping[str, Any], peak: float | None,
                 bandwidth: float | None) -> tuple[list[OpRoofline], float | None, list[str]]:
    """Per-op rows (per step) joining work.per_op with timeline.ops by op name."""
    work = record.get("work") or {}
    tl = record.get("timeline") or {}
    notes: list[str] = []
    model = _work_by_op(work)
    steps = tl.get("steps") or 0
    step_time = (_q(tl, "step_time") or {}).get("value")
    times: dict[str, tuple[float, str, float]] = {}
    if tl.get("ops") and not steps:
        notes.append("timeline.steps is 0 or missing: per-op times cannot be made per step")
    elif steps:
        for row in tl.get("ops") or []:
            t, kind = _op_time(row)
            prev = times.get(row["op"])
            calls = float(row.get("calls") or 0)
            if prev:
                t, calls = t + prev[0] * steps, calls + prev[2] * steps
            times[row["op"]] = (t / steps, kind, calls / steps)
    rows: list[OpRoofline] = []
    for op in sorted(set(model) | set(times)):
        m = model.get(op)
        t = times.get(op)
        tsec, kind, calls = (t if t else (None, None, m["calls"] if m else None))
        if m and t:
            p = place(m["flops"], m["bytes"], tsec, peak, bandwidth)
            status = "joined"
        elif m:
            p = place(m["flops"], m["bytes"], None, peak, bandwidth)
            status = "no_time"
        else:
            p = place(None, None, tsec, peak, bandwidth)
            status = "no_flop_model"
        lost = None
        if tsec is not None and p.frac_of_roof is not None:
            lost = tsec * max(0.0, 1.0 - p.frac_of_roof)
        rows.append(OpRoofline(op, status, calls, tsec, kind, _div(tsec, step_time), p, lost))
    flops_total = sum(m["flops"] for m in model.values())
    fps = (_q(work, "flops_per_step") or {}).get("value")
    if model and fps and abs(flops_total - fps) > 0.01 * fps:
        notes.append(f"per-op FLOPs sum to {flops_total:.4g}, flops_per_step is {fps:.4g}: "
                     "the per-op table does not cover the whole step")
    if any(r.time_kind == "total" for r in rows):
        notes.append("op times without device time are inclusive host times: nested ops "
                     "overlap, so time shares can sum to more than 100%")
    over = [r.op for r in rows if r.placement.frac_of_roof and r.placement.frac_of_roof > 1.0]
    if over:
        notes.append(f"above the roof (model or ceiling too low): {', '.join(over[:5])}")
    # Joined ops first (they have a roofline), then modeled-but-unprofiled, then profiled ops
    # without a FLOP model (often wrappers whose inclusive time nests the joined ops).
    order = {"joined": 0, "no_time": 1, "no_flop_model": 2}
    rows.sort(key=lambda r: (order[r.status], -(r.time_s or 0.0), r.op))
    return rows, step_time, notes


def _kernel_points(counters: Mapping[str, Any], bw: float | None, l2: float | None,
                   peak: float | None) -> list[LevelPoint]:
    """Counter kernels grouped by aten op (kernel name when no op), one point per level."""
    groups: dict[str, dict[str, float | None]] = {}
    for k in counters.get("kernels") or []:
        name = k.get("op") or k.get("name") or "?"
        g = groups.setdefault(name, {"time_s": 0.0, "flops": None, "dram": None, "l2": None})
        g["time_s"] = (g["time_s"] or 0.0) + float(k.get("time_s") or 0.0)
        fl = [k.get(f) for f in ("flops", "flops_tensor") if k.get(f) is not None]
        if fl:
            g["flops"] = (g["flops"] or 0.0) + float(sum(fl))
        for src, dst in (("dram_bytes", "dram"), ("l2_bytes", "l2")):
            if k.get(src) is not None:
                g[dst] = (g[dst] or 0.0) + float(k[src])
    points = []
    for name in sorted(groups, key=lambda n: -(groups[n]["time_s"] or 0.0)):
        g = groups[name]
        for level, key, ceiling in (("DRAM", "dram", bw), ("L2", "l2", l2)):
            if g[key] is not None:
                p = place(g["flops"], g[key], g["time_s"], peak, ceiling)
                points.append(LevelPoint(name, level, "measured", ceiling, p))
    return points


def hierarchical(record: Mapping[str, Any], ops: list[OpRoofline], peak: float | None,
                 bandwidth: float | None) -> Hierarchical:
    """Measured DRAM and L2 bytes per kernel when counters exist, else modeled DRAM per op."""
    spec = (record.get("ceilings") or {}).get("spec") or {}
    l2 = spec.get("l2_bandwidth")
    counters = record.get("counters")
    if counters and counters.get("kernels"):
        pts = _kernel_points(counters, bandwidth, l2, peak)
        notes = ["bytes and FLOPs measured by hardware counters "
                 f"({counters.get('tool', '?')}) over {counters.get('window_steps', '?')} "
                 "steps; FLOPs = flops + flops_tensor"]
        if l2 is None:
            notes.append("no published L2 bandwidth: L2 points have no roof")
        return Hierarchical("counters", {"DRAM": bandwidth, "L2": l2}, pts, notes)
    pts = [LevelPoint(o.op, "DRAM", "modeled", bandwidth, o.placement)
           for o in ops if o.status == "joined"]
    return Hierarchical("modeled", {"DRAM": bandwidth}, pts,
                        ["no hardware counters: DRAM bytes are modeled (compulsory traffic)"])


def roofline(record: Mapping[str, Any]) -> Roofline:
    """The whole analysis: run placement, per-op table, lost-time ranking, hierarchy."""
    run = run_roofline(record)
    ops, step_time, notes = op_rooflines(record, run.peak_flops.value,
                                         run.memory_bandwidth.value)
    if run.peak_flops.value is None or run.memory_bandwidth.value is None:
        notes.insert(0, "ceilings missing: run `perfsuite peaks` or record ceilings; no roof")
    ranking = sorted((o for o in ops if o.lost_time_s is not None),
                     key=lambda o: (-(o.lost_time_s or 0.0), o.op))
    hier = hierarchical(record, ops, run.peak_flops.value, run.memory_bandwidth.value)
    return Roofline(run, ops, ranking, hier, step_time, notes)
