"""Roofline placement of a run and of its ops: how far each is from what the device allows.

Pure functions on record dicts (no torch). Conventions: a multiply-add is 2 FLOP; work
FLOPs are counted per step, bytes are modeled compulsory DRAM traffic (so arithmetic
intensity is an upper bound: real traffic is larger when caches miss); time is measured.
Attainable roof = min(peak FLOP/s, intensity x bandwidth); bound = memory when intensity <
ridge point (peak / bandwidth). The fraction of the roof is achieved FLOP/s over the compute
roof when compute-bound, achieved byte/s over the bandwidth when memory-bound (the same
number as achieved / attainable, and still defined for ops with zero FLOPs).

Each op is judged against the roof of the math it ran in (perfsuite.analyzers.roofline.mathmode:
TF32 convolutions against the TF32 Tensor-Core peak, elementwise ops against bandwidth); the whole
run against the time its ops would take at their roofs. A point above its roof is flagged, never
reported as a fraction: the model or a ceiling is wrong there, not the hardware.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.roofline.above_roof import (
    WindowSpeed,
    missing_roofs_note,
    run_doubts,
    unroofed_note,
)
from perfsuite.analyzers.roofline.context import context
from perfsuite.analyzers.roofline.levels import Hierarchical, hierarchical
from perfsuite.analyzers.roofline.ops import op_rooflines
from perfsuite.analyzers.roofline.points import run_roofline
from perfsuite.analyzers.roofline.reconcile import Reconciled
from perfsuite.analyzers.roofline.results import OpRoofline, RunRoofline

# One line per field of the whole-run block; the CLI and report show these verbatim.
EXPLAIN = {
    "flops_per_step": "FLOPs of one training step, counted by instrumentation (mul-add = 2)",
    "bytes_per_step": "DRAM bytes of one step, modeled as compulsory traffic (caches ignored)",
    "step_time": "wall time of one training step, measured by the run clock",
    "achieved_flops": "flops_per_step / step_time",
    "achieved_bandwidth": "bytes_per_step / step_time (modeled bytes over measured time)",
    "intensity": "arithmetic intensity = flops / bytes; an upper bound, bytes are compulsory",
    "peak_flops": "blended compute roof: flops / sum(op flops / peak of the op's math)",
    "memory_bandwidth": "memory roof (measured copy, else spec)",
    "ridge": "peak_flops / memory_bandwidth: intensity where the two roofs meet",
    "bound": "memory if intensity < ridge, else compute",
    "attainable": "min(peak_flops, intensity x memory_bandwidth)",
    "roof_time": "sum over ops of max(flops/peak of its math, bytes/bandwidth): step at the roofs",
    "frac_of_roof": "roof_time / step_time: the time-weighted blend of per-op roofs",
    "frac_of_peak": "achieved_flops / peak_flops",
}


@dataclass(frozen=True)
class Roofline:
    run: RunRoofline
    ops: list[OpRoofline]
    ranking: list[OpRoofline]  # joined ops by lost time, largest first
    hierarchical: Hierarchical
    # the clock's step (of the epoch the window followed) the per-op times are reconciled to
    reconciled_step_time_s: float | None
    notes: list[str] = field(default_factory=list)
    time_rows: Reconciled | None = None  # roofline ops' times + other, summing to the step
    math_source: str = ""
    machine_check: list[WindowSpeed] = field(default_factory=list)  # speed during the window


def roofline(
    record: Mapping[str, Any],
    peaks: Mapping[str, Any] | None = None,
    kernels: Mapping[str, Mapping[str, float]] | None = None,
) -> Roofline:
    """The whole analysis: run placement, per-op table, lost-time ranking, hierarchy.

    `peaks`: roofs from a peaks file (perfsuite.devices.roofs.peaks_file_roofs), used first;
    `kernels`: {op: {kernel: seconds}} (default: read from the record's trace sidecar).
    """
    ctx = context(record, peaks, kernels)
    run = run_roofline(record, ctx)
    ops, rec_rows, notes = op_rooflines(record, ctx)
    notes = ctx.notes + notes
    run, doubt = run_doubts(run, ops)
    if doubt:
        notes.insert(0, doubt)
    absent = missing_roofs_note(run.flops_by_math, run.unroofed_flops, run.memory_bandwidth.value)
    if absent:
        notes.insert(0, absent)
    if run.flag:
        notes.insert(0, f"whole run: {run.flag}")
    if run.unroofed_flops:
        notes.insert(0, unroofed_note(run.unroofed_flops, run.flops_per_step.value))
    notes.insert(0, f"math: {ctx.math_source}")
    ranking = sorted(
        (o for o in ops if o.lost_time_s is not None), key=lambda o: (-(o.lost_time_s or 0.0), o.op)
    )
    hier = hierarchical(record, ops, run.peak_flops.value, run.memory_bandwidth.value, ctx)
    return Roofline(
        run,
        ops,
        ranking,
        hier,
        rec_rows.measured_step_s if rec_rows else None,
        notes,
        rec_rows,
        ctx.math_source,
        ctx.speeds,
    )
