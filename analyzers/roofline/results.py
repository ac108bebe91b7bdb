"""What a roofline returns: where a point sits under its roofs (`Placement`), the whole run
(`RunRoofline`) and one op (`OpRoofline`). The rules that compute them
(`points`, `above_roof`) both import these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perfsuite.analyzers.roofline.inputs import Labeled


@dataclass(frozen=True)
class Placement:
    """Where one point (run, op or kernel) sits under the roofs.

    A point above its roof is never reported as a fraction: `frac_of_roof` and `frac_of_peak`
    are None, `over_roof` keeps the ratio and `flag` says which part of the model is wrong.
    """

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
    math: str | None = None  # the roof judged against (fp32, tf32, bf16...)
    math_evidence: str | None = None  # "counters" | "kernel names" | "policy"
    peak: float | None = None  # compute roof of that math, FLOP/s
    over_roof: float | None = None  # achieved / attainable when > 1 (a model error)
    flag: str | None = None


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
    roof_time: Labeled
    frac_of_roof: float | None
    frac_of_peak: float | None
    roofs_used: dict[str, Labeled] = field(default_factory=dict)  # math -> peak (and "memory")
    flops_by_math: dict[str, float] = field(default_factory=dict)
    math_source: str = ""
    over_roof: float | None = None
    flag: str | None = None
    # math -> counted FLOPs of ops whose math has no roof: the blend would leave them out
    unroofed_flops: dict[str, float] = field(default_factory=dict)
    # roof ("memory" or a math) -> ops flagged above it; field (frac_of_roof, frac_of_peak)
    # -> those roofs it uses: a fraction shown, but in doubt
    # (perfsuite.analyzers.roofline.above_roof.run_doubts)
    doubted_roofs: dict[str, list[str]] = field(default_factory=dict)
    doubts: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class OpRoofline:
    """One op of the profiled window joined with its FLOP/byte model (per step)."""

    op: str
    status: str  # "joined" | "calls_differ" | "no_flop_model" | "no_time"
    calls: float | None  # per step
    time_s: float | None  # per step, reconciled with the measured step
    time_kind: str | None  # "device" | "total" | "self"
    time_share: float | None  # of the measured step time
    placement: Placement
    lost_time_s: float | None  # time_s x (1 - frac_of_roof), >= 0; None when flagged
    step_cv: float | None = None  # the op's per-step time, stdev/mean over the window's steps
    own_time_s: float | None = None  # the part of time_s not in its children (self time)
    wrapper: bool = False  # no FLOP model and no time of its own (perfsuite.analyzers.roofline.ops)
    lost_time_why: str | None = None  # why lost_time_s is None (no roof, no time, flagged...)
