"""Text sections of `perfsuite timeline` for copies by kind, annotation ranges projected onto
the GPU and the spec roofs a profile carries (analyzers.timeline.copies, .projection and
.spec_roofs)."""

from __future__ import annotations

from typing import Any

NAME_WIDTH = 60


def copy_lines(a: Any) -> list[str]:
    """Copies per kind: count, device time and bytes where the trace records them."""
    from perfsuite.fmt import si, table

    if not a.copies:
        return []
    rows = [
        [c.kind, c.count, si(c.total_s, "s"), "n/a" if c.bytes is None else si(c.bytes, "B")]
        for c in a.copies
    ]
    return ["", "copies by kind", table(rows, ["kind", "count", "device time", "bytes"], "lrrr")]


def projection_lines(a: Any) -> list[str]:
    """Annotation ranges projected onto the GPU (like nsys's nvtx_gpu_proj_sum)."""
    from perfsuite.fmt import si, table, truncate

    rows = [
        [truncate(r.name, NAME_WIDTH), r.ranges, si(r.host_total_s, "s"), si(r.projected_s, "s"),
         r.gpu_ops, si(r.gpu_time_s, "s"), r.without_gpu_work]
        for r in a.nvtx_projection
        if r.gpu_ops
    ]  # fmt: skip
    if not rows:
        return []
    headers = ["range", "count", "host time", "GPU projected", "GPU ops", "GPU op time",
               "ranges without GPU work"]  # fmt: skip
    return [
        "",
        "ranges projected onto the GPU (device work launched inside each range on its thread; "
        "projected = first start to last end)",
        table(rows, headers, "lrrrrrr"),
    ]


def roof_lines(a: Any) -> list[str]:
    """The spec roofs of the profile's devices (an nsys export's TARGET_INFO_GPU)."""
    from perfsuite.fmt import si

    by_device: dict[Any, list[str]] = {}
    for r in a.roofs:
        by_device.setdefault(r.device, []).append(f"{r.kind} {si(r.value, r.unit)}")
    return [
        f"roofs of device {d} (spec, from the profile's TARGET_INFO_GPU): " + ", ".join(parts)
        for d, parts in by_device.items()
    ]
