"""Spec roofs from the device facts a profile carries: an nsys export's TARGET_INFO_GPU (SM
count, SM clock, memory bandwidth, compute capability), read into deviceProperties. Labeled
`spec`, never `measured`: they are the part's nominal figures, not what this machine ran at.
Kineto traces carry no clock or bandwidth, so they give none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsuite.analyzers.timeline.model import Roof

# FP32 lanes per SM by compute capability (CUDA C Programming Guide, "Arithmetic
# Instructions" throughput table: 32-bit floating-point add, multiply, multiply-add); a
# fused multiply-add per lane per clock is 2 FLOP.
FP32_LANES_PER_SM = {
    (7, 0): 64,
    (7, 5): 64,
    (8, 0): 64,
    (8, 6): 128,
    (8, 7): 128,
    (8, 9): 128,
    (9, 0): 128,
}
FP32 = "fp32"


def device_roofs(props: Mapping[str, Any]) -> list[Roof]:
    """fp32 and memory roofs of one device's properties: fp32 = SMs x clock x FP32 lanes x 2
    (none for a compute capability not in the table); memory = the bandwidth nsys records."""
    dev = props.get("id")
    where = f"TARGET_INFO_GPU of the profile, device {dev} ({props.get('name')})"
    out = []
    lanes = FP32_LANES_PER_SM.get((props.get("computeMajor"), props.get("computeMinor")))
    sms, clock = props.get("numSms"), props.get("clockRateHz")
    if lanes and sms and clock:
        value = float(sms) * float(clock) * lanes * 2
        source = f"{where}: {sms} SMs x {clock:.4g} Hz x {lanes} FP32 lanes x 2"
        out.append(Roof(dev, FP32, value, "FLOP/s", "spec", source))
    bandwidth = props.get("memoryBandwidthBytesPerS")
    if bandwidth:
        source = f"{where}: memoryBandwidth"
        out.append(Roof(dev, "memory", float(bandwidth), "byte/s", "spec", source))
    return out


def profile_roofs(metadata: Mapping[str, Any], devices: list[int]) -> list[Roof]:
    """Spec roofs of the devices that ran events (in `devices` order)."""
    props = {p.get("id"): p for p in metadata.get("deviceProperties") or [] if isinstance(p, dict)}
    return [r for d in devices if d in props for r in device_roofs(props[d])]
