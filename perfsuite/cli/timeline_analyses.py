"""Text sections of `perfsuite timeline` for kernel launch statistics, queue length per stream
and the memory timeline (perfsuite.analyzers.timeline.launch, .queues, .memory)."""

from __future__ import annotations

from typing import Any

from perfsuite.fmt import pct, short_kernel_name, si, table, truncate

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
        rows = [
            [g.device, g.stream, g.launches, si(g.cpu.p50_s, "s"), si(g.delay.p50_s, "s"),
             si(g.delay.p99_s, "s"), si(g.delay.max_s, "s"), g.short, g.delay_outliers]
            for g in s.streams
        ]  # fmt: skip
        headers = ["device", "stream", "launches", "call p50", "delay p50", "delay p99",
                   "delay max", "short", "delay outliers"]  # fmt: skip
        out.append(_indent(table(rows, headers, "rrrrrrrrr")))
    if s.kernels:
        rows = [
            [truncate(short_kernel_name(k.name), NAME_WIDTH), k.launches, si(k.cpu_mean_s, "s"),
             si(k.delay_mean_s, "s"), si(k.delay_max_s, "s"), k.short, k.runtime_outliers,
             k.delay_outliers]
            for k in s.kernels
        ]  # fmt: skip
        headers = ["kernel (most outliers first)", "launches", "call mean", "delay mean",
                   "delay max", "short", "call outliers", "delay outliers"]  # fmt: skip
        out.append(_indent(table(rows, headers, "lrrrrrrr")))
    return out


def queue_lines(queues: list[Any]) -> list[str]:
    """Queue length per stream: launched and not yet started (HTA's definition)."""
    rows = [
        [q.device, q.stream, q.launches, q.max_length, f"{q.mean_length:.2f}",
         si(q.time_at_max_s, "s"), si(q.span_s, "s")]
        for q in queues
    ]  # fmt: skip
    headers = ["device", "stream", "launches", "max", "mean (time-weighted)", "time at max",
               "span"]  # fmt: skip
    return [
        "",
        "queue length per stream (launched, not yet started)",
        _indent(table(rows, headers, "rrrrrrr")),
    ]


def memory_lines(memory: list[Any]) -> list[str]:
    """Allocated bytes per device from the allocator's [memory] events; who held the peak."""
    out = ["", "memory (allocator [memory] events)"]
    for m in memory:
        where = m.device_type if m.device < 0 else f"{m.device_type}:{m.device}"
        out.append(
            f"  {where}: {m.events} events ({m.allocations} allocations, {m.frees} frees); "
            f"peak {si(m.peak_allocated_bytes, 'B')} allocated at {si(m.peak_t_s, 's')}, "
            f"final {si(m.final_allocated_bytes, 'B')}, at start "
            f"{si(m.allocated_at_start_bytes, 'B')}"
            + (f", peak reserved {si(m.peak_reserved_bytes, 'B')}" if m.peak_reserved_bytes else "")
        )
        if m.peak_holders:
            rows = [[truncate(h.op, NAME_WIDTH), h.allocations, si(h.bytes, "B")]
                    for h in m.peak_holders]  # fmt: skip
            if m.peak_unattributed_bytes:
                rows.append(
                    ["(unattributed: before the trace)", "", si(m.peak_unattributed_bytes, "B")]
                )
            out.append(_indent(table(rows, ["held at the peak by", "allocations", "bytes"], "lrr")))
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
