"""The hierarchical roofline: kernels (or ops) against each memory level's bandwidth.

With hardware counters the bytes per level (DRAM, L2) are measured per kernel; without them
only DRAM is available, as the modeled compulsory traffic of each op. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.roofline.context import Context
from perfsuite.analyzers.roofline.mathmode import from_counters, from_kernels
from perfsuite.analyzers.roofline.measured import counted_ops, op_of
from perfsuite.analyzers.roofline.points import place
from perfsuite.analyzers.roofline.results import OpRoofline, Placement
from perfsuite.fmt import short_kernel_name


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
    zero_flop: list[str] = field(default_factory=list)  # left out of points: 0 FLOP


def kernel_points(
    counters: Mapping[str, Any],
    bw: float | None,
    l2: float | None,
    peak: float | None,
    ctx: Context | None = None,
    counted: set[str] | None = None,
    zero: list[str] | None = None,
) -> list[LevelPoint]:
    """Counter kernels grouped by op, one point per level: the outermost counted op whose
    range the kernel ran in (as the counted-vs-measured table attributes it), else the
    capture's own op, else the kernel name. Each group against the roof of its math (measured
    precision, the op's, its kernel names'), else `peak`. A group whose kernels measured 0 FLOP
    is no point: its name goes to `zero` (one without FLOP counters, None, stays a point)."""
    zero = [] if zero is None else zero
    groups: dict[str, dict[str, Any]] = {}
    for k in counters.get("kernels") or []:
        name = op_of(k, counted or set()) or k.get("op") or k.get("name") or "?"
        g = groups.setdefault(
            name,
            {"time_s": 0.0, "flops": None, "dram": None, "l2": None, "kernels": {}, "tensor": {},
             "cuda": 0.0},
        )  # fmt: skip
        g["cuda"] += float(k.get("flops") or 0.0)
        for prec, v in (k.get("flops_tensor_by_precision") or {}).items():
            g["tensor"][prec] = (g["tensor"].get(prec) or 0.0) + float(v or 0.0)
        # one untimed kernel leaves its group's time unknown: its FLOP still count, so a
        # partial time would overstate the rate
        t = float(k.get("time_s") or 0.0)
        g["time_s"] = None if g["time_s"] is None or k.get("time_s") is None else g["time_s"] + t
        kn = str(k.get("name") or "?")
        g["kernels"][kn] = g["kernels"].get(kn, 0.0) + t
        fl = [k.get(f) for f in ("flops", "flops_tensor") if k.get(f) is not None]
        if fl:
            g["flops"] = (g["flops"] or 0.0) + float(sum(fl))
        for src, dst in (("dram_bytes", "dram"), ("l2_bytes", "l2")):
            if k.get(src) is not None:
                g[dst] = (g[dst] or 0.0) + float(k[src])
    points = []
    for name in sorted(groups, key=lambda n: -(groups[n]["time_s"] or 0.0)):
        g = groups[name]
        if g["flops"] == 0:  # measured 0 FLOP: no place on a FLOP/s chart (zero_flop_note)
            zero.append(name)
            continue
        # measured precision first, then the op's math, then its kernels' names
        om = (
            from_counters(g["tensor"], g["cuda"])
            or (ctx.maths.get(name) if ctx else None)
            or from_kernels(g["kernels"])
        )
        own = ctx.peak(om.math) if ctx and om else None
        pk = own or peak
        kw: dict[str, Any] = {}
        if om and own:
            kw = {"math": om.math, "evidence": om.evidence, "suspects": ctx.suspects(om.math)}  # type: ignore[union-attr]
        for level, key, ceiling in (("DRAM", "dram", bw), ("L2", "l2", l2)):
            if g[key] is not None:
                p = place(g["flops"], g[key], g["time_s"], pk, ceiling, **kw)
                points.append(LevelPoint(name, level, "measured", ceiling, p))
    return points


def hierarchical(
    record: Mapping[str, Any],
    ops: list[OpRoofline],
    peak: float | None,
    bandwidth: float | None,
    ctx: Context | None = None,
) -> Hierarchical:
    """Measured DRAM and L2 bytes per kernel when counters exist, else modeled DRAM per op."""
    spec = (record.get("ceilings") or {}).get("spec") or {}
    l2 = spec.get("l2_bandwidth")
    counters = record.get("counters")
    if counters and counters.get("kernels"):
        zero: list[str] = []
        pts = kernel_points(counters, bandwidth, l2, peak, ctx, counted_ops(record), zero)
        notes = [
            "bytes and FLOPs measured by hardware counters "
            f"({counters.get('tool', '?')}) over "
            f"{counters.get('window_steps') or 'an unknown number of'} steps; FLOPs = flops + "
            "flops_tensor"
        ]
        if l2 is None:
            notes.append("no published L2 bandwidth: L2 points have no roof")
        notes += zero_flop_note(zero, "kernel group", "measured")
        return Hierarchical("counters", {"DRAM": bandwidth, "L2": l2}, pts, notes, zero)
    joined = [o for o in ops if o.status == "joined"]
    zero = [o.op for o in joined if o.placement.flops == 0]
    pts = [
        LevelPoint(o.op, "DRAM", "modeled", bandwidth, o.placement)
        for o in joined
        if o.placement.flops != 0
    ]
    return Hierarchical(
        "modeled",
        {"DRAM": bandwidth},
        pts,
        [
            "no hardware counters: DRAM bytes are modeled (compulsory traffic)",
            *zero_flop_note(zero, "op", "counted"),
        ],
        zero,
    )


def zero_flop_note(names: list[str], what: str, how: str) -> list[str]:
    """The note for the points left out of the FLOP roofline with 0 FLOP ([] for none):
    FLOP/s over intensity has no place for them (0 FLOP/s, 0 FLOP/byte on log axes). Their
    time is not dropped: the per-op table and the step's rows keep it."""
    if not names:
        return []

    cut = [short_kernel_name(n) for n in names[:8]]  # zero_flop keeps the whole names
    cut = [n if len(n) <= 60 else n[:57] + "..." for n in cut]
    shown = ", ".join(cut) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    what += "s" if len(names) > 1 else ""
    return [
        f"{len(names)} {what} with 0 {how} FLOP left out of the hierarchical roofline (no "
        f"place on a chart of FLOP/s over FLOP/byte): {shown}"
    ]
