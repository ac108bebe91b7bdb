"""Queue length per stream over time: device work launched on a stream and not yet started.

Defined as HTA 0.5's `get_queue_length_time_series` (`TraceCounters`): every launch
(`launch.launch_pairs`: a call in `categories.QUEUE_LAUNCH_CALLS` joined to its device event by
correlation id) enters the queue of its device event's stream when the launch call starts, and
leaves it when the device event starts executing. A running kernel is therefore not counted:
the figure is the backlog the host has built ahead of the device. Calls without a device event
(and device events without a launch call) do not enter.

The series is a step function: one point per distinct time at which the length changes, the
value holding until the next point (0 before the first and after the last). Where a launch and
a start fall on the same timestamp, the point carries the value after both; HTA keeps one row
per event there, in an order its unstable sort picks. Streams are keyed by (device, stream);
HTA keys them by stream id alone (one device per rank).

Summary per stream: `max_length`; `mean_length`, the time-weighted mean over the stream's
series (its first to its last point); `time_at_max_s`, the time the length equals its maximum
(HTA's `get_time_spent_blocked_on_full_queue` with that maximum as the threshold).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfsuite.analyzers.timeline.device import US
from perfsuite.analyzers.timeline.keys import pairs_sorted
from perfsuite.analyzers.timeline.launch import LaunchPairs
from perfsuite.analyzers.timeline.model import QueueStat


@dataclass
class QueueSeries:
    """One stream's step series; `t` in the trace unit (µs) relative to `base` (trace start)."""

    device: int
    stream: int
    base: float
    t: np.ndarray
    length: np.ndarray  # after the changes at t


def queue_series(pairs: LaunchPairs) -> list[QueueSeries]:
    """The step series of every (device, stream) that has launches, sorted by key."""
    out = []
    keys = pairs_sorted(pairs.device, pairs.stream)
    for dev, s in keys:
        m = (pairs.device == dev) & (pairs.stream == s)
        n = int(m.sum())
        t = np.concatenate([pairs.gpu_ts[m], pairs.cpu_ts[m]])
        step = np.concatenate([-np.ones(n, np.int64), np.ones(n, np.int64)])
        # By time; at a tie the start (-1, placed first) before the launch: a stable sort.
        order = np.argsort(t, kind="stable")
        t, length = t[order], np.cumsum(step[order])
        last = np.append(t[1:] != t[:-1], True)  # the value after all changes at a time
        out.append(QueueSeries(dev, s, pairs.base, t[last], length[last]))
    return out


def queue_stats(series: list[QueueSeries], pairs: LaunchPairs) -> list[QueueStat]:
    out = []
    for q in series:
        hold = np.diff(q.t)  # how long each point's value lasts (the last lasts 0: it is 0)
        values = q.length[:-1]
        span = float(q.t[-1] - q.t[0])
        peak = int(q.length.max())
        launches = int(((pairs.device == q.device) & (pairs.stream == q.stream)).sum())
        out.append(
            QueueStat(
                device=q.device,
                stream=q.stream,
                launches=launches,
                max_length=peak,
                mean_length=float((values * hold).sum() / span) if span > 0 else float(peak),
                time_at_max_s=float(hold[values == peak].sum()) * US,
                span_s=span * US,
            )
        )
    return out
