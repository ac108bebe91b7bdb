"""The timeline section's kernel launch statistics, queue length per stream and memory
timeline: tables of `perfsuite.analyzers.timeline`'s summaries and two step charts of its series.
The only arithmetic here is drawing: a series longer than MAX_POINTS is drawn as the maximum of
each run of points (said in the chart title), so a page stays small for long traces."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from perfsuite import fmt
from perfsuite.analyzers.timeline.device import DeviceArrays
from perfsuite.analyzers.timeline.hostmap import build_host_map
from perfsuite.analyzers.timeline.launch import launch_pairs
from perfsuite.analyzers.timeline.memory import memory_series
from perfsuite.analyzers.timeline.queues import queue_series
from perfsuite.figures.runs import LAYOUT, time_scale
from perfsuite.report import html as h
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

MAX_POINTS = 20_000  # per drawn series
NUM = True


def _thin(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """At most MAX_POINTS points: each run of k points drawn as its first time and its
    largest value (a queue or memory peak is never hidden)."""
    if len(t) <= MAX_POINTS:
        return t, y, False
    k = -(-len(t) // MAX_POINTS)
    cut = np.arange(0, len(t), k)
    return t[cut], np.maximum.reduceat(y, cut), True


def queue_figure(series: list[Any]) -> go.Figure:
    """Queue length per stream over time, as steps."""
    fig = go.Figure()
    scale, unit = time_scale([float(q.t[-1]) * 1e-6 for q in series if len(q.t)])
    thinned = False
    for q in series:
        t, y, cut = _thin(q.t * 1e-6 / scale, q.length)
        thinned |= cut
        fig.add_trace(
            go.Scatter(
                x=t, y=y, mode="lines", line_shape="hv", name=f"device {q.device} stream {q.stream}"
            )
        )
    title = "Queue length per stream (launched, not yet started)"
    fig.update_layout(
        title=title + (" - max per bin" if thinned else ""),
        xaxis_title=f"time since the trace start ({unit})",
        yaxis_title="device events queued",
        **LAYOUT,
    )
    return fig


def memory_figure(series: list[Any], stats: list[Any]) -> go.Figure:
    """Allocated bytes per device over time, as steps, with each device's peak marked."""
    fig = go.Figure()
    scale, unit = time_scale([float(m.t[-1]) * 1e-6 for m in series if len(m.t)])
    top = max((int(m.allocated.max()) for m in series if len(m.t)), default=0)
    b_scale, prefix = fmt.si_prefix(float(top))
    thinned = False
    for m, s in zip(series, stats, strict=True):
        label = m.device_type if m.device < 0 else f"{m.device_type}:{m.device}"
        t, y, cut = _thin(m.t * 1e-6 / scale, m.allocated)
        thinned |= cut
        fig.add_trace(go.Scatter(x=t, y=y / b_scale, mode="lines", line_shape="hv", name=label))
        fig.add_trace(
            go.Scatter(
                x=[s.peak_t_s / scale],
                y=[s.peak_allocated_bytes / b_scale],
                mode="markers+text",
                text=[f"peak {fmt.si(s.peak_allocated_bytes, 'B')}"],
                textposition="top center",
                name=f"{label} peak",
                showlegend=False,
            )
        )
    fig.update_layout(
        title="Allocated memory (allocator [memory] events)"
        + (" - max per bin" if thinned else ""),
        xaxis_title=f"time since the trace start ({unit})",
        yaxis={"title": "allocated", "ticksuffix": f" {prefix}B", "rangemode": "tozero"},
        **LAYOUT,
    )
    return fig


def _dist_row(label: str, d: Any) -> list[Any]:
    return [label, *(fmt.si(v, "s") for v in (d.mean_s, d.p50_s, d.p90_s, d.p99_s, d.max_s))]


def launch_html(s: Any, top: int, kernel_cell: Any) -> str:
    """Launch statistics: distributions, short kernels and outliers, per stream and kernel."""
    cut_rt, cut_delay = fmt.si(s.runtime_cutoff_s, "s"), fmt.si(s.delay_cutoff_s, "s")
    parts = [
        "<h4>Kernel launches</h4>",
        f"<p>{s.launches} launch calls joined to their device event by correlation id"
        + (f" ({s.unmatched_calls} launch calls without one)" if s.unmatched_calls else "")
        + ". Launch delay: device start minus the end of the launch call, clipped at zero "
        f"(HTA's definition). Short: device time below the launch call's, call at most "
        f"{h.esc(cut_rt)}: {s.short} launches, {h.esc(fmt.si(s.short_gpu_s, 's'))} = "
        f"{h.esc(fmt.pct(s.short_share))} of the launched device time. Launch calls over "
        f"{h.esc(cut_rt)}: {s.runtime_outliers}; launch delays over {h.esc(cut_delay)}: "
        f"{s.delay_outliers}.</p>",
        h.table(
            ["", "mean", "p50", "p90", "p99", "max"],
            [
                _dist_row("launch call (CPU)", s.overall.cpu),
                _dist_row("device event", s.overall.gpu),
                _dist_row("launch delay", s.overall.delay),
            ],
            [False, NUM, NUM, NUM, NUM, NUM],
        ),
    ]
    if len(s.streams) > 1:
        parts.append(h.table(STREAM_HEADERS, stream_rows(s.streams), [NUM] * 9))
    if s.kernels:
        rows = kernel_rows(s.kernels[:top], kernel_cell)
        parts.append(h.table(KERNEL_HEADERS, rows, [False] + [NUM] * 7))
    return "".join(parts)


def queue_html(queues: list[Any], series: list[Any]) -> str:
    parts = [
        "<h4>Queue length per stream</h4>",
        "<p>Device events launched and not yet started (HTA's definition: a launch joins its "
        "stream's queue when the launch call starts and leaves it when the event starts). The "
        "mean is weighted by time over each stream's first to last change.</p>",
        h.table(QUEUE_HEADERS, queue_rows(queues), [NUM] * 7),
    ]
    if series:
        parts.append(h.figure(queue_figure(series), "fig-timeline-queues"))
    return "".join(parts)


def memory_html(memory: list[Any], series: list[Any]) -> str:
    parts = [
        "<h4>Memory timeline</h4>",
        h.table(
            ["device", "events", "allocations", "frees", "at start", "peak", "peak at",
             "final", "peak reserved"],
            [
                [memory_place(m), m.events, m.allocations, m.frees,
                 fmt.si(m.allocated_at_start_bytes, "B"),
                 fmt.si(m.peak_allocated_bytes, "B"), fmt.si(m.peak_t_s, "s"),
                 fmt.si(m.final_allocated_bytes, "B"),
                 fmt.si(m.peak_reserved_bytes, "B") if m.peak_reserved_bytes else "n/a"]
                for m in memory
            ],
            [False] + [NUM] * 8,
        ),
    ]  # fmt: skip
    for m in memory:
        if not m.peak_holders:
            continue
        parts.append(
            h.table(
                [f"held at the {memory_place(m)} peak by", *HOLDER_HEADERS],
                holder_rows(m, lambda op: op),
                [False, NUM, NUM],
            )
        )
    if series:
        parts.append(h.figure(memory_figure(series, memory), "fig-timeline-memory"))
    return "".join(parts)


def analyses_html(a: Any, data: Any, top: int, kernel_cell: Any) -> str:
    """The three parts, each only where the trace has its data; `data` is the TraceData the
    analysis `a` came from (the charts draw its series)."""

    parts = []
    if a.launches is not None:
        parts.append(launch_html(a.launches, top, kernel_cell))
    if a.queues:
        pairs = launch_pairs(data, DeviceArrays(data, build_host_map(data)))
        parts.append(queue_html(a.queues, queue_series(pairs)))
    if a.memory:
        parts.append(memory_html(a.memory, memory_series(data)))
    return "".join(parts)
