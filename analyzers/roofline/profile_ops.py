"""PyProf's table from a profile alone: each operator (name and input shapes, from emit_nvtx
markers in an nsys export or record_shapes in a Kineto trace) with its modeled FLOPs and bytes,
the measured time of the kernels it launched, and its place under the device's roofs.

Roofs: a `perfsuite peaks --json` file when given; otherwise the spec figures the profile
itself carries (an nsys export's TARGET_INFO_GPU: SM count, SM clock, memory bandwidth),
labeled `spec`, never `measured`. Markers carry no dtype, so every op is judged against the
fp32 CUDA-core roof; a run in TF32, BF16 or FP16 on Tensor Cores has higher compute roofs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.roofline.points import place
from perfsuite.analyzers.roofline.results import Placement
from perfsuite.analyzers.timeline.model import Roof, TimelineAnalysis
from perfsuite.analyzers.timeline.spec_roofs import FP32

MATH = FP32


@dataclass
class ProfileOpRow:
    """One (op, input shapes): totals over its calls; `placement` of those totals."""

    op: str
    input_dims: Any
    calls: int
    flops: float  # all calls
    bytes: float
    device_time_s: float
    placement: Placement
    lost_s: float | None  # time x (1 - achieved/attainable)


@dataclass
class ProfileRoofline:
    path: str
    device: str | None
    reader: str
    roofs: list[Roof]
    rows: list[ProfileOpRow]
    unattributed_device_time_s: float
    notes: list[str] = field(default_factory=list)


def peaks_roofs(roofs: Mapping[str, Any]) -> list[Roof]:
    """The fp32 and memory roofs of a peaks file (devices.roofs.peaks_file_roofs)."""
    out = []
    for kind, key in ((MATH, "peak_flops"), ("memory", "bandwidth")):
        q = (roofs.get(kind) or {}).get(key)
        if q:
            out.append(Roof(None, kind, q["value"], q["unit"], q["provenance"], q["source"]))
    return out


def profile_roofline(
    a: TimelineAnalysis, peaks: Mapping[str, Any] | None = None
) -> ProfileRoofline:
    """The per-op roofline of one analyzed profile (`a` with its full roofline list), under
    the first device's roofs: the peaks file's, else the spec roofs the profile carries."""
    device = a.devices[0].device if a.devices else None
    roofs = peaks_roofs(peaks) if peaks else [r for r in a.roofs if r.device == device]
    peak = next((r.value for r in roofs if r.kind == MATH), None)
    bw = next((r.value for r in roofs if r.kind == "memory"), None)
    rows = []
    for p in a.roofline:
        if p.time_kind != "device" or not p.device_time_s:
            continue
        pl = place(p.flops * p.calls, p.bytes * p.calls, p.device_time_s, peak, bw, math=MATH)
        lost = None if pl.frac_of_roof is None else p.device_time_s * (1 - pl.frac_of_roof)
        rows.append(
            ProfileOpRow(
                p.op,
                p.input_dims,
                p.calls,
                p.flops * p.calls,
                p.bytes * p.calls,
                p.device_time_s,
                pl,
                lost,
            )
        )
    rows.sort(key=lambda r: (-(r.lost_s or 0.0), -r.device_time_s, r.op))
    notes = [
        "ops judged against the fp32 CUDA-core roof: the profile does not say which math "
        "(dtype, Tensor Cores) each op ran in"
    ]
    if not roofs:
        notes.append("no roofs: the profile has no TARGET_INFO_GPU facts; give --peaks FILE")
    if not rows:
        notes.append(
            "no op with shapes and device time: profile under torch.autograd.profiler."
            "emit_nvtx(record_shapes=True) (nsys) or with record_shapes=True (Kineto)"
        )
    name = a.devices[0].name if a.devices else None
    return ProfileRoofline(
        a.path, name, a.reader_backend, roofs, rows, a.unmapped_device_time_s, notes + list(a.notes)
    )
