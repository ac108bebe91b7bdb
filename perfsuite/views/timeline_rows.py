"""Rows of one trace's kernel time by category, CPU operators, top kernels, kernel launch
statistics, stream queues and memory peak (`perfsuite.analyzers.timeline` and its `.launch`,
`.queues`, `.memory`), shared by `perfsuite timeline` and the report's timeline section so
both name the same columns and fill them alike.

A kernel or op name is shown as the caller's `name` renders it (shortened in a terminal, a
cell with the full name on hover in a page).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perfsuite.fmt import pct, si

if TYPE_CHECKING:
    from perfsuite.analyzers.timeline.model import (
        DeviceTimeline,
        KernelLaunchStat,
        KernelStat,
        LaunchGroup,
        MemoryStat,
        OpStat,
        QueueStat,
    )

STREAM_HEADERS = ["device", "stream", "launches", "call p50", "delay p50", "delay p99",
                  "delay max", "short", "delay outliers"]  # fmt: skip
KERNEL_HEADERS = ["kernel (most outliers first)", "launches", "call mean", "delay mean",
                  "delay max", "short", "call outliers", "delay outliers"]  # fmt: skip
QUEUE_HEADERS = ["device", "stream", "launches", "max", "mean (time-weighted)", "time at max",
                 "span"]  # fmt: skip
HOLDER_HEADERS = ["allocations", "bytes"]  # after the column naming who held the peak
TOP_KERNEL_HEADERS = ["category", "count", "total", "mean"]  # after the kernel's name
CATEGORY_HEADERS = ["kernel category", "events", "sum", "busy (union)", "of span"]
OP_HEADERS = ["cpu op", "calls", "self", "total", "kernels", "device time", "collective"]


def category_rows(d: DeviceTimeline) -> list[list[Any]]:
    """One device's kernel time by category (`CATEGORY_HEADERS`): events, summed kernel time,
    the union of their intervals, and that union's share of the device's span."""
    span = d.span_s or float("nan")
    return [
        [c.category, c.count, si(c.total_s, "s"), si(c.busy_s, "s"), pct(c.busy_s / span)]
        for c in d.categories
    ]


def op_rows(ops: list[OpStat], has_device: bool, name: Callable[[str], Any]) -> list[list[Any]]:
    """The busiest CPU operators (`OP_HEADERS`): calls, self and inclusive host time, kernels
    launched, their device time ("-" in a trace without a device) and whether it is a
    collective."""
    return [
        [name(o.name), o.calls, si(o.self_s, "s"), si(o.total_s, "s"), o.kernels,
         si(o.device_time_s, "s") if has_device else "-", "yes" if o.communication else ""]
        for o in ops
    ]  # fmt: skip


def top_kernel_rows(kernels: list[KernelStat], name: Callable[[str], Any]) -> list[list[Any]]:
    """The kernels with the most device time: name, category, count, total and mean time
    (`TOP_KERNEL_HEADERS` after the name)."""
    return [
        [name(k.name), k.category, k.count, si(k.total_s, "s"), si(k.mean_s, "s")] for k in kernels
    ]


def stream_rows(streams: list[LaunchGroup]) -> list[list[Any]]:
    """Per device stream (`STREAM_HEADERS`): launches, launch-call and launch-delay figures."""
    return [
        [g.device, g.stream, g.launches, si(g.cpu.p50_s, "s"), si(g.delay.p50_s, "s"),
         si(g.delay.p99_s, "s"), si(g.delay.max_s, "s"), g.short, g.delay_outliers]
        for g in streams
    ]  # fmt: skip


def kernel_rows(kernels: list[KernelLaunchStat], name: Callable[[str], Any]) -> list[list[Any]]:
    """Per kernel (`KERNEL_HEADERS`), in the analyzer's order (most outliers first)."""
    return [
        [name(k.name), k.launches, si(k.cpu_mean_s, "s"), si(k.delay_mean_s, "s"),
         si(k.delay_max_s, "s"), k.short, k.runtime_outliers, k.delay_outliers]
        for k in kernels
    ]  # fmt: skip


def queue_rows(queues: list[QueueStat]) -> list[list[Any]]:
    """Per stream (`QUEUE_HEADERS`): launched and not yet started."""
    return [
        [q.device, q.stream, q.launches, q.max_length, f"{q.mean_length:.2f}",
         si(q.time_at_max_s, "s"), si(q.span_s, "s")]
        for q in queues
    ]  # fmt: skip


def memory_place(m: MemoryStat) -> str:
    """`cuda:0`, or the device type alone for a device-less allocator (the host)."""
    return m.device_type if m.device < 0 else f"{m.device_type}:{m.device}"


def holder_rows(m: MemoryStat, name: Callable[[str], Any]) -> list[list[Any]]:
    """Who held the memory peak (op, allocations, bytes; `HOLDER_HEADERS` after the op), and
    the bytes allocated before the trace began, which no op in it can be named for."""
    rows: list[list[Any]] = [[name(h.op), h.allocations, si(h.bytes, "B")] for h in m.peak_holders]
    if m.peak_unattributed_bytes:
        rows.append(["(unattributed: before the trace)", "", si(m.peak_unattributed_bytes, "B")])
    return rows
