"""Text sections of `perfsuite timeline` for kernel launch statistics, queue length per stream
and the memory timeline (perfsuite.analyzers.timeline.launch, .queues, .memory)."""

from __future__ import annotations

from typing import Any

from perfsuite.fmt import pct, short_kernel_name, si, table, truncate
from perfsuite.views.timeline_rows import (
    HOLDER_HEADERS,
    KERNEL_HEADERS,
    QUEUE_HEADERS,
    STREAM_HEADERS,
    holder_rows,
    kernel_rows,
    memory_place,
    queue_rows,
    stream_rows,
)

NAME_WIDTH = 60


def _dist(d: Any) -> str:
    return (
        f"mean {si(d.mean_s, 's')}, p50 {si(d.p50_s, 's')}, p90 {si(d.p90_s, 's')}, "
        f"p99 {si(d.p99_s, 's')}, max {si(d.max_s, 's')}"
    )


def launch_lines(s: Any) -> list[str]:
    """Launch statistics: distributions, short kernels, outliers, per stream and kernel."""
    cut_rt, cut_delay = si(s.runtime_cutoff_s, "s"), si(s.delay_cutoff_s, "s")
    out = [
        "",
        f"kernel launches: {s.launches} launch calls joined to their device event"
        + (f" ({s.unmatched_calls} launch calls without one)" if s.unmatched_calls else ""),
        f"  launch call (CPU) {_dist(s.overall.cpu)}",
        f"  device event      {_dist(s.overall.gpu)}",
        f"  launch delay      {_dist(s.overall.delay)}",
        f"  short (device time < launch call <= {cut_rt}): {s.short}, "
        f"{si(s.short_gpu_s, 's')} = {pct(s.short_share)} of the launched device time",
        f"  outliers: launch call > {cut_rt}: {s.runtime_outliers}; "
        f"launch delay > {cut_delay}: {s.delay_outliers}",
    ]
    if len(s.streams) > 1:
        out.append(_indent(table(stream_rows(s.streams), STREAM_HEADERS, "rrrrrrrrr")))
    if s.kernels:
        rows = kernel_rows(s.kernels, lambda name: truncate(short_kernel_name(name), NAME_WIDTH))
        out.append(_indent(table(rows, KERNEL_HEADERS, "lrrrrrrr")))
    return out


def queue_lines(queues: list[Any]) -> list[str]:
    """Queue length per stream: launched and not yet started (HTA's definition)."""
    return [
        "",
        "queue length per stream (launched, not yet started)",
        _indent(table(queue_rows(queues), QUEUE_HEADERS, "rrrrrrr")),
    ]


def memory_lines(memory: list[Any]) -> list[str]:
    """Allocated bytes per device from the allocator's [memory] events; who held the peak."""
    out = ["", "memory (allocator [memory] events)"]
    for m in memory:
        out.append(
            f"  {memory_place(m)}: {m.events} events ({m.allocations} allocations, {m.frees} "
            f"frees); peak {si(m.peak_allocated_bytes, 'B')} allocated at {si(m.peak_t_s, 's')}, "
            f"final {si(m.final_allocated_bytes, 'B')}, at start "
            f"{si(m.allocated_at_start_bytes, 'B')}"
            + (f", peak reserved {si(m.peak_reserved_bytes, 'B')}" if m.peak_reserved_bytes else "")
        )
        if m.peak_holders:
            rows = holder_rows(m, lambda op: truncate(op, NAME_WIDTH))
            out.append(_indent(table(rows, ["held at the peak by", *HOLDER_HEADERS], "lrr")))
    return out


def analyses_lines(a: Any) -> list[str]:
    """The three sections of one TimelineAnalysis, each only where the trace has its data."""
    out: list[str] = []
    if a.launches is not None:
        out += launch_lines(a.launches)
    if a.queues:
        out += queue_lines(a.queues)
    if a.memory:
        out += memory_lines(a.memory)
    return out


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
