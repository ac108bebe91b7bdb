"""Device timeline: temporal breakdown per device and attribution of idle gaps.

Busy time is the union of events over all streams of a device (never a sum), idle time is
the rest of the span from the first event's start to the last event's end (HTA's "kernel
time" window). Each gap in the union is attributed through the correlation id of the event
that ends it: was the host not yet launching it, inside its launch call, or had the call
returned (the work queued on the device)?
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from perfsuite.analyzers.timeline.categories import (
    CATEGORIES,
    COMMUNICATION,
    COMPUTE,
    device_category,
    is_sync_call,
)
from perfsuite.analyzers.timeline.hostmap import HostMap, calls_for
from perfsuite.analyzers.timeline.intervals import CoverIndex, merge, union_length
from perfsuite.analyzers.timeline.keys import unique_ints
from perfsuite.analyzers.timeline.model import (
    CategoryTime,
    DeviceTimeline,
    IdleBreakdown,
    StreamStats,
)
from perfsuite.traces.reader import TraceData

US = 1e-6  # trace time unit -> seconds


class DeviceArrays:
    """Device events of a trace as numpy arrays, with categories resolved once per name, the
    launching runtime call (`call`) and its innermost enclosing cpu_op (`op`), -1 if none."""

    def __init__(self, data: TraceData, host: HostMap) -> None:
        d = data.device
        n = len(d.ts)
        self.n = n
        # Times relative to the trace start: absolute µs timestamps (~1e12) leave float64 only
        # ~1e-4 µs of resolution, enough to blur sums of sub-µs ROCm durations.
        self.base = data.window[0] if data.window else 0.0
        self.ts = (np.frombuffer(d.ts, dtype=np.float64) - self.base) if n else np.zeros(0)
        self.dur = np.frombuffer(d.dur, dtype=np.float64) if n else np.zeros(0)
        self.end = self.ts + self.dur
        self.device = np.asarray(d.device, dtype=np.int64)
        self.stream = np.asarray(d.stream, dtype=np.int64)
        self.name = np.asarray(d.name, dtype=np.int64)
        self.corr = np.asarray(d.corr, dtype=np.int64)
        self.category = _categories(data.names.values, self.name, np.asarray(d.cat, np.int64))
        self.call = calls_for(host, self.corr)
        self.op = np.full(n, -1, dtype=np.int64)
        has_call = self.call >= 0
        self.op[has_call] = host.call_op[self.call[has_call]]
        # Start and end of the launching runtime call (NaN: none); the work is on the device's
        # queue once the call has returned, so a gap is split at both.
        rt = data.runtime
        self.launch = np.full(n, np.nan)
        self.launch_end = np.full(n, np.nan)
        if len(rt.ts):
            rt_ts = np.frombuffer(rt.ts, dtype=np.float64)
            rt_end = rt_ts + np.frombuffer(rt.dur, dtype=np.float64)
            self.launch[has_call] = rt_ts[self.call[has_call]] - self.base
            self.launch_end[has_call] = rt_end[self.call[has_call]] - self.base


def _categories(names: list[str], name: np.ndarray, cat_code: np.ndarray) -> np.ndarray:
    """Category index per event, classified once per distinct (name, Kineto category)."""
    if not len(name):
        return np.zeros(0, dtype=np.int64)
    width = int(cat_code.max()) + 1
    pairs, inv = unique_ints(name * width + cat_code, return_inverse=True)
    per_pair = [
        CATEGORIES.index(device_category(names[p // width], p % width)) for p in pairs.tolist()
    ]
    return np.asarray(per_pair, dtype=np.int64)[inv.reshape(-1)]


def _seq_sum(values: np.ndarray) -> float:
    """Sum in index order, one addition after another (np.sum adds pairwise, which can differ
    in the last digit from the sequential sum the figures are defined by)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def _sync_covers(data: TraceData, base: float) -> dict[int, CoverIndex]:
    """Per host thread: the union of its blocking runtime calls."""
    rt = data.runtime
    if not len(rt.ts):
        return {}
    names = data.names.values
    name = np.asarray(rt.name, dtype=np.int64)
    sync_names = [i for i in unique_ints(name).tolist() if is_sync_call(names[i])]
    if not sync_names:
        return {}
    sel = np.flatnonzero(np.isin(name, sync_names))
    thread = np.asarray(rt.thread, dtype=np.int64)[sel]
    start = np.frombuffer(rt.ts, dtype=np.float64)[sel] - base
    end = start + np.frombuffer(rt.dur, dtype=np.float64)[sel]
    return {
        th: CoverIndex(start[thread == th], end[thread == th]) for th in np.unique(thread).tolist()
    }


def _idle(
    data: TraceData,
    ts: np.ndarray,
    end: np.ndarray,
    call: np.ndarray,
    launch: np.ndarray,
    launch_end: np.ndarray,
    syncs: dict[int, CoverIndex],
) -> IdleBreakdown:
    """Each gap [a, b) split at the start and end of the launch call of the event ending it:
    before the call (host wait), inside it (in launch), after it returned (queued)."""
    starts, ends, first = merge(ts, end)
    out = IdleBreakdown()
    if len(starts) < 2:
        return out
    gap_a, gap_b = ends[:-1], starts[1:]
    nxt = first[1:]
    keep = gap_b > gap_a
    out.gaps = int(np.count_nonzero(keep))
    a, b = gap_a[keep], gap_b[keep]
    k = nxt[keep]
    length = b - a
    t_launch, t_end = launch[k], launch_end[k]
    has = ~np.isnan(t_launch)  # NaN: no correlated launch
    wait = np.where(has, np.minimum(np.maximum(t_launch - a, 0.0), length), 0.0)
    in_call = np.where(has, np.maximum(np.minimum(t_end, b) - np.maximum(t_launch, a), 0.0), 0.0)
    queued = np.where(has, np.maximum(length - wait - in_call, 0.0), 0.0)
    sync = np.zeros(len(a))
    if syncs:
        rt_thread = np.asarray(data.runtime.thread, dtype=np.int64)
        waited = np.flatnonzero(wait > 0)
        th = rt_thread[call[k[waited]]]
        for t, cover in syncs.items():
            at = waited[th == t]
            sync[at] = cover.covered_many(a[at], a[at] + wait[at])
    # Zeros added to a running float sum leave it unchanged, so these sums in gap order equal
    # the per-gap accumulation the figures are defined by.
    out.idle_s = _seq_sum(length)
    out.unattributed_s = _seq_sum(np.where(has, 0.0, length))
    out.host_wait_s = _seq_sum(wait)
    out.in_launch_s = _seq_sum(in_call)
    out.queued_s = _seq_sum(queued)
    out.host_sync_s = _seq_sum(sync)
    for f in ("idle_s", "host_wait_s", "host_sync_s", "in_launch_s", "queued_s", "unattributed_s"):
        setattr(out, f, getattr(out, f) * US)
    return out


def _streams(
    stream: np.ndarray, ts: np.ndarray, dur: np.ndarray, launch: np.ndarray
) -> list[StreamStats]:
    out = []
    for s in np.unique(stream).tolist():
        m = stream == s
        s_ts, s_dur, s_launch = ts[m], dur[m], launch[m]
        order = np.argsort(s_ts, kind="stable")
        s_ts, s_dur, s_launch = s_ts[order], s_dur[order], s_launch[order]
        s_end = s_ts + s_dur
        busy = union_length(s_ts, s_end)
        span = float(s_end.max() - s_ts.min())
        prev_end = s_end[:-1]
        gap = s_ts[1:] - prev_end
        host = s_launch[1:] > prev_end  # NaN compares False
        out.append(
            StreamStats(
                stream=int(s),
                events=int(m.sum()),
                total_s=float(s_dur.sum()) * US,
                busy_s=busy * US,
                idle_s=(span - busy) * US,
                host_wait_s=float(gap[host].sum()) * US,
            )
        )
    return out


def device_timelines(
    data: TraceData, arrays: DeviceArrays, only_device: int | None = None
) -> list[DeviceTimeline]:
    """One DeviceTimeline per device id (kernel `args.device`, else the event's pid)."""
    if arrays.n == 0:
        return []
    launch = arrays.launch
    syncs = _sync_covers(data, arrays.base)
    props = {
        p.get("id"): p.get("name")
        for p in (data.metadata.get("deviceProperties") or [])
        if isinstance(p, dict)
    }
    sync_by_dev: dict[int, list[float]] = defaultdict(list)
    for dev, _stream, _ts, dur in data.syncs:
        sync_by_dev[dev].append(dur)
    out = []
    for dev in np.unique(arrays.device).tolist():
        if only_device is not None and dev != only_device:
            continue
        m = arrays.device == dev
        ts, end, dur, cat = arrays.ts[m], arrays.end[m], arrays.dur[m], arrays.category[m]
        span = float(end.max() - ts.min())
        busy = union_length(ts, end)
        unions = {}
        categories = []
        for ci, cname in enumerate(CATEGORIES):
            cm = cat == ci
            unions[cname] = union_length(ts[cm], end[cm])
            if cm.any():
                categories.append(
                    CategoryTime(
                        cname,
                        int(cm.sum()),
                        float(dur[cm].sum()) * US,
                        unions[cname] * US,
                    )
                )
        both = (cat == CATEGORIES.index(COMPUTE)) | (cat == CATEGORIES.index(COMMUNICATION))
        overlap = unions[COMPUTE] + unions[COMMUNICATION] - union_length(ts[both], end[both])
        out.append(
            DeviceTimeline(
                device=int(dev),
                name=props.get(dev),
                events=int(m.sum()),
                span_s=span * US,
                busy_s=busy * US,
                busy_compute_s=unions[COMPUTE] * US,
                busy_non_compute_s=(busy - unions[COMPUTE]) * US,
                idle_s=(span - busy) * US,
                compute_comm_overlap_s=max(overlap, 0.0) * US,
                categories=categories,
                idle=_idle(data, ts, end, arrays.call[m], launch[m], arrays.launch_end[m], syncs),
                streams=_streams(arrays.stream[m], ts, dur, launch[m]),
                sync_records=len(sync_by_dev.get(dev, [])),
                sync_total_s=sum(sync_by_dev.get(dev, [])) * US,
            )
        )
    return out


def combine(devices: list[DeviceTimeline]) -> DeviceTimeline | None:
    """All devices summed (device = -1): totals, not a union across devices."""
    if not devices:
        return None
    cats: dict[str, list[float]] = {}
    idle = IdleBreakdown()
    for d in devices:
        for c in d.categories:
            acc = cats.setdefault(c.category, [0, 0.0, 0.0])
            acc[0] += c.count
            acc[1] += c.total_s
            acc[2] += c.busy_s
        for f in (
            "idle_s",
            "gaps",
            "host_wait_s",
            "host_sync_s",
            "in_launch_s",
            "queued_s",
            "unattributed_s",
        ):
            setattr(idle, f, getattr(idle, f) + getattr(d.idle, f))

    def total(attr: str) -> float:
        return sum(getattr(d, attr) for d in devices)

    return DeviceTimeline(
        device=-1,
        name=None,
        events=int(total("events")),
        span_s=total("span_s"),
        busy_s=total("busy_s"),
        busy_compute_s=total("busy_compute_s"),
        busy_non_compute_s=total("busy_non_compute_s"),
        idle_s=total("idle_s"),
        compute_comm_overlap_s=total("compute_comm_overlap_s"),
        categories=[
            CategoryTime(c, int(v[0]), v[1], v[2]) for c in CATEGORIES if (v := cats.get(c))
        ],
        idle=idle,
        streams=[],
        sync_records=int(total("sync_records")),
        sync_total_s=total("sync_total_s"),
    )
