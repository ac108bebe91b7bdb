"""What a hardware name says: the accelerator kind it names, and how many a run used.

Read from device names ("NVIDIA A100-SXM4-80GB") and free text ("8 V100 (AWS p3.16xlarge)")
alike, by the importers (DAWNBench, MLPerf), by capture (a data-parallel run's count) and by
the cost analysis (is this the price table's hardware?). Pure, torch-free.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# The accelerator kind named in the free hardware text, first match wins: device words (an
# NVIDIA device name: "NVIDIA A10G", "NVIDIA L4", as torch and MLPerf logs write them), then
# cloud instance families whose accelerator is fixed (so "p3.16xlarge" or "Azure ND40s_v2"
# alone says cuda). Families with non-NVIDIA GPUs (AWS g4ad, Azure NVv4: AMD) or NPUs are not
# listed and stay None.
_B = r"(?<![a-z0-9])"  # start of a name: not inside a longer word or number
_ACCELERATORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tpu", re.compile(r"tpu")),
    (
        "cuda",
        re.compile(r"gpu|nvidia|v100|p100|k80|t4|a100|h100|1080|2080|m60|titan|tesla|volta"),
    ),
    ("cuda", re.compile(_B + r"p40?(?![a-z0-9.])")),  # Tesla P4 / P40 (not AWS p4d.*)
    # AWS p2 K80, p3/p3dn V100, p4d A100, p5 H100, g3 M60, g4dn T4, g5 A10G; Huawei p1/p2,
    # pi1 P4, pi2 T4
    ("cuda", re.compile(_B + r"(?:p[1-5][a-z]*|pi[12]|g3s?|g4dn|g5g?|g6e?)\.\d*x?large")),
    ("cuda", re.compile(_B + r"n[cd]\d+[a-z]*(?:_v\d+)?(?![a-z0-9])")),  # Azure NC, ND (ND40s_v2)
    ("cuda", re.compile(_B + r"gn\d+[a-z]*[-.]")),  # Alibaba ecs.gn5/gn5i/gn6e/gn6i/gn6v/gn7
    ("cpu", re.compile(r"cpu|xeon")),
    ("cpu", re.compile(_B + r"[cmr][4-7][a-z]*\.\d*x?large")),  # AWS/Huawei c5, m5, r5: no GPU
)


def accelerator(text: str | None) -> str | None:
    """ "cuda"/"tpu"/"cpu" when the hardware text names a device or a known instance family."""
    low = (text or "").lower()
    return next((kind for kind, pattern in _ACCELERATORS if pattern.search(low)), None)


def devices_used(record: Mapping[str, Any]) -> int | None:
    """How many accelerators the run used: one per rank of a data-parallel run on
    accelerators (`distributed.world_size`; records made before `hardware.count` said so
    have 1 there), else `hardware.count`; None where neither says."""
    hw = record.get("hardware") or {}
    kind = hw.get("accelerator") or accelerator(hw.get("name"))
    world = (record.get("distributed") or {}).get("world_size")
    if kind not in (None, "cpu") and is_count(world):
        return int(world)
    count = hw.get("count")
    return int(count) if is_count(count) else None


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
