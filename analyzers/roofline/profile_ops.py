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
from perfsuite.analyzers.timeline.model import TimelineAnalysis

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic
# Instructions" throughput table: 32-bit floating-point add, multiply, multiply-add): an FMA
# per lane per clock is 2 FLOP.
FP32_LANES_PER_SM = {
    (7, 0): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
}
MATH = "fp32"


@dataclass
class Roof:
    kind: str  # "fp32" (FLOP/s) or "memory" (byte/s)
    value: float | None
    unit: str
    provenance: str  # "spec" | "measured"
    source: str


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


def target_info_roofs(props: list[Mapping[str, Any]], device: int | None) -> list[Roof]:
    """fp32 and memory roofs of one device from TARGET_INFO_GPU facts (deviceProperties of an
    nsys read): peak = SMs x clock x FP32 lanes x 2; bandwidth as nsys records it."""
    p = next((q for q in props if q.get("id") == device), props[0] if props else None)
    if p is None:
        return []
    where = f"TARGET_INFO_GPU of the profile, device {p.get('id')} ({p.get('name')})"
    out = []
    lanes = FP32_LANES_PER_SM.get((p.get("computeMajor"), p.get("computeMinor")))
    sms, clock = p.get("numSms"), p.get("clockRateHz")
    if lanes and sms and clock:
        value = float(sms) * float(clock) * lanes * 2
        out.append(
            Roof(
                MATH,
                value,
                "FLOP/s",
                "spec",
                f"{where}: {sms} SMs x {clock:.4g} Hz x {lanes} FP32 lanes x 2",
            )
        )
    if p.get("memoryBandwidthBytesPerS"):
        out.append(
            Roof(
                "memory",
                float(p["memoryBandwidthBytesPerS"]),
                "byte/s",
                "spec",
                f"{where}: memoryBandwidth",
            )
        )
    return out


def peaks_roofs(roofs: Mapping[str, Any]) -> list[Roof]:
    """The fp32 and memory roofs of a peaks file (devices.roofs.peaks_file_roofs)."""
    out = []
    for kind, key in ((MATH, "peak_flops"), ("memory", "bandwidth")):
        q = (roofs.get(kind) or {}).get(key)
        if q:
            out.append(Roof(kind, q["value"], q["unit"], q["provenance"], q["source"]))
    return out


def profile_roofline(
    a: TimelineAnalysis, props: list[Mapping[str, Any]], peaks: Mapping[str, Any] | None = None
) -> ProfileRoofline:
    """The per-op roofline of one analyzed profile (`a` with its full roofline list)."""
    device = a.devices[0].device if a.devices else None
    roofs = peaks_roofs(peaks) if peaks else target_info_roofs(props, device)
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
