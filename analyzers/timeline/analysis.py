"""Trace analysis entry point: TraceData in, TimelineAnalysis out (pure, no I/O)."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from perfsuite.analyzers.timeline.categories import CATEGORIES, is_comm_range, is_step_annotation
from perfsuite.analyzers.timeline.copies import copy_kinds
from perfsuite.analyzers.timeline.device import US, DeviceArrays, combine, device_timelines
from perfsuite.analyzers.timeline.hostmap import HostMap, build_host_map
from perfsuite.analyzers.timeline.keys import unique_ints
from perfsuite.analyzers.timeline.launch import launch_pairs, launch_stats
from perfsuite.analyzers.timeline.memory import memory_stats
from perfsuite.analyzers.timeline.model import (
    KernelStat,
    LaunchStats,
    MemoryStat,
    OpStat,
    ProfilerRanges,
    QueueStat,
    RangeStat,
    RankRow,
    Steps,
    ThreadStat,
    TimelineAnalysis,
)
from perfsuite.analyzers.timeline.projection import range_projections
from perfsuite.analyzers.timeline.queues import queue_series, queue_stats
from perfsuite.analyzers.timeline.roofline import roofline_points
from perfsuite.analyzers.timeline.spec_roofs import profile_roofs
from perfsuite.fmt import si
from perfsuite.traces.profile import read_profile
from perfsuite.traces.reader import TraceData, TraceError


def _top(items: list, n: int | None) -> list:
    return items if not n or n <= 0 else items[:n]


def _group(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per distinct key: (key, count, sum, min, max) of values."""
    uniq, inv = unique_ints(keys, return_inverse=True)
    count = np.bincount(inv, minlength=len(uniq))
    total = np.bincount(inv, weights=values, minlength=len(uniq))
    lo = np.full(len(uniq), np.inf)
    hi = np.full(len(uniq), -np.inf)
    np.minimum.at(lo, inv, values)
    np.maximum.at(hi, inv, values)
    return uniq, count, total, lo, hi


def _kernel_stats(data: TraceData, arrays: DeviceArrays, mask: np.ndarray) -> list[KernelStat]:
    names = data.names.values
    if not mask.any():
        return []
    uniq, count, total, lo, hi = _group(arrays.name[mask], arrays.dur[mask])
    first_cat = dict(zip(arrays.name[mask].tolist(), arrays.category[mask].tolist(), strict=True))
    stats = [
        KernelStat(names[nm], CATEGORIES[first_cat[nm]], int(c), t * US, t / c * US, a * US, b * US)
        for nm, c, t, a, b in zip(
            uniq.tolist(), count.tolist(), total.tolist(), lo.tolist(), hi.tolist(), strict=True
        )
    ]
    stats.sort(key=lambda k: (-k.total_s, k.name))
    return stats


def _host_stats(
    data: TraceData, host: HostMap, arrays: DeviceArrays, mask: np.ndarray
) -> tuple[list[OpStat], list[RangeStat], list[ThreadStat], Steps, float, float]:
    rg, names = data.ranges, data.names.values
    n_rg = len(rg.ts)
    # Device time per launching cpu_op (innermost enclosing operator of the launch call).
    op = arrays.op[mask]
    dur = arrays.dur[mask]
    has_op = op >= 0
    mapped = float(dur[has_op].sum())
    unmapped = float(dur[~has_op].sum())
    k_count = np.bincount(op[has_op], minlength=n_rg)[:n_rg]
    k_time = np.bincount(op[has_op], weights=dur[has_op], minlength=n_rg)[:n_rg]

    name = np.asarray(rg.name, dtype=np.int64)
    kind = np.asarray(rg.kind, dtype=np.int64)
    thread = np.asarray(rg.thread, dtype=np.int64)
    r_dur = np.frombuffer(rg.dur, dtype=np.float64) if n_rg else np.zeros(0)
    is_op = kind == 0

    op_stats = []
    if is_op.any():
        nm = name[is_op]
        uniq, inv = unique_ints(nm, return_inverse=True)
        calls = np.bincount(inv)
        tot = np.bincount(inv, weights=r_dur[is_op])
        slf = np.bincount(inv, weights=host.self_time[is_op])
        kc = np.bincount(inv, weights=k_count[is_op])
        kt = np.bincount(inv, weights=k_time[is_op])
        for i, n in enumerate(uniq.tolist()):
            op_stats.append(
                OpStat(
                    names[n],
                    int(calls[i]),
                    tot[i] * US,
                    slf[i] * US,
                    int(kc[i]),
                    kt[i] * US,
                    is_comm_range(names[n]),
                )
            )
    has_device = arrays.n > 0
    op_stats.sort(
        key=lambda o: ((-o.device_time_s, -o.self_s) if has_device else (-o.self_s,), o.name)
    )

    step_ids = {i for i, n in enumerate(names) if is_step_annotation(n)}
    is_step = np.isin(name, list(step_ids)) & ~is_op if step_ids else np.zeros(n_rg, bool)
    step_durs = r_dur[is_step]
    ann_mask = ~is_op & ~is_step
    ann_stats = []
    if ann_mask.any():
        uniq, count, total, _, _ = _group(name[ann_mask], r_dur[ann_mask])
        for n, c, t in zip(uniq.tolist(), count.tolist(), total.tolist(), strict=True):
            ann_stats.append(RangeStat(names[n], int(c), t * US, is_comm_range(names[n])))
    ann_stats.sort(key=lambda a: (-a.total_s, a.name))

    thread_stats = []
    top = host.parent < 0
    for th in np.unique(thread).tolist():
        m = thread == th
        pid, tid = data.threads.values[th]
        thread_stats.append(
            ThreadStat(
                pid,
                tid,
                int((m & is_op).sum()),
                int((m & ~is_op).sum()),
                float(r_dur[m & top].sum()) * US,
            )
        )
    thread_stats.sort(key=lambda t: -t.top_level_s)
    steps = Steps(
        count=len(step_durs),
        mean_s=float(step_durs.mean()) * US if len(step_durs) else None,
        total_s=float(step_durs.sum()) * US,
    )
    return op_stats, ann_stats, thread_stats, steps, mapped * US, unmapped * US


def _profiler_ranges(data: TraceData, top: int | None) -> ProfilerRanges | None:
    if not data.profiler_ranges:
        return None
    acc: dict[str, list[float]] = {}
    metrics: set[str] = set()
    for name, _dev, _ts, dur, args in data.profiler_ranges:
        metrics.update(args)
        a = acc.setdefault(name, [0, 0.0, float("inf"), 0.0])
        a[0] += 1
        a[1] += dur
        a[2] = min(a[2], dur)
        a[3] = max(a[3], dur)
    stats = [
        KernelStat(n, "profiler_range", int(c), t * US, t / c * US, lo * US, hi * US)
        for n, (c, t, lo, hi) in acc.items()
    ]
    stats.sort(key=lambda k: (-k.total_s, k.name))
    return ProfilerRanges(len(data.profiler_ranges), sorted(metrics), _top(stats, top))


def _launches_queues_memory(
    data: TraceData, host: HostMap, arrays: DeviceArrays, mask: np.ndarray, top: int | None
) -> tuple[LaunchStats | None, list[QueueStat], list[MemoryStat], list[str]]:
    """Launch statistics and queue lengths of the kept devices, the memory timeline (all
    devices: allocator events are not filtered by --device), and their notes."""
    pairs = launch_pairs(data, arrays, mask)
    launches = launch_stats(data, pairs)
    if launches is not None:
        launches.kernels = _top(launches.kernels, top)
    queues = queue_stats(queue_series(pairs), pairs)
    memory = memory_stats(data, host, top)
    notes = [
        f"memory on {m.device_type} {m.device}: no Total Allocated in the [memory] events; "
        "allocated bytes are the running sum of Bytes from the first event"
        for m in memory
        if m.from_running_sum
    ]
    return launches, queues, memory, notes


def _rank(meta: dict) -> int | None:
    info = meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), (int, float)):
        return int(info["rank"])
    return None


def _reader_notes(data: TraceData) -> list[str]:
    """What the reader skipped or doubted, and what a non-Kineto reader (nsys) had to say."""
    notes = list(getattr(data, "reader_notes", ()))
    if data.malformed:
        notes.append(
            f"{data.malformed} malformed event(s) skipped (a list or object where a phase, "
            "category or pid/tid belongs, or a complete event without a usable timestamp)"
        )
    if data.negative_durations:
        notes.append(
            f"{data.negative_durations} event(s) with a negative duration, counted as zero length"
        )
    if data.beyond_reason:
        notes.append(
            f"{data.beyond_reason} event(s) skipped: a timestamp beyond 1e17 us or a duration "
            "beyond 1e13 us (115 days), which no profiler clock gives"
        )
    if data.backend in ("python", "yajl2", "yajl2_cffi"):  # ijson's slower backends
        notes.append(f"ijson backend {data.backend} (slow); install ijson with its C extension")
    return notes


def analyze_trace(
    data: TraceData, top: int | None = 20, device: int | None = None
) -> TimelineAnalysis:
    """Analyze one read trace. `top` limits the kernel/op/annotation lists (None/0: all);
    `device` restricts the device side to one device id. A trace with no events at all is a
    TraceError: calling it CPU-only would describe a file that says nothing."""
    if data.events_total == 0:
        where = "" if data.bare_list else "field traceEvents: "
        raise TraceError(f"{data.path}: {where}empty trace (0 events)")
    host = build_host_map(data)
    arrays = DeviceArrays(data, host)
    mask = np.ones(arrays.n, dtype=bool) if device is None else arrays.device == device
    devices = device_timelines(data, arrays, device)
    ops, anns, threads, steps, mapped, unmapped = _host_stats(data, host, arrays, mask)
    roofline, dropped = roofline_points(data, host, arrays, mask)
    launches, queues, memory, notes = _launches_queues_memory(data, host, arrays, mask, top)
    has_device = bool(mask.any())
    if not has_device:
        if device is not None and arrays.n:
            notes.append(f"no device events on device {device}")
        elif data.profiler_ranges:
            notes.append("no kernel activity records: device time cannot be measured")
        elif not len(data.ranges.ts):
            notes.append("no timed events (ph X): neither device kernels nor CPU operators")
        else:
            notes.append("no device kernels in this trace (CPU-only); CPU operator time only")
    if data.profiler_ranges:
        notes.append(
            f"{len(data.profiler_ranges)} cuda_profiler_range events (CUPTI profiler mode): "
            "kernels were replayed to collect counters, so range durations are not kernel time"
        )
    if data.syncs:
        notes.append(
            f"{len(data.syncs)} cuda_sync records are host blocking time placed on device rows; "
            "they are not counted as device busy time"
        )
    if has_device and unmapped > 0:
        notes.append(f"{si(unmapped, 's')} of device time has no launching cpu_op in the trace")
    if dropped:
        notes.append(
            f"{dropped} roofline point(s) dropped: recorded shapes with a negative or "
            "non-integer dimension, or modeled FLOP/bytes that are negative or not finite"
        )
    notes += _reader_notes(data)
    window = (data.window[1] - data.window[0]) * US if data.window else 0.0
    return TimelineAnalysis(
        path=data.path,
        rank=_rank(data.metadata),
        reader_backend=data.backend,
        events=data.events_total,
        events_by_phase=dict(data.events_by_phase),
        window_s=window,
        has_device=has_device,
        devices=devices,
        overall=combine(devices),
        top_kernels=_top(_kernel_stats(data, arrays, mask), top),
        ops=_top(ops, top),
        annotations=_top(anns, top),
        threads=threads,
        steps=steps,
        mapped_device_time_s=mapped,
        unmapped_device_time_s=unmapped,
        roofline=_top(roofline, top),
        profiler_ranges=_profiler_ranges(data, top),
        notes=notes,
        launches=launches,
        queues=queues,
        memory=memory,
        copies=copy_kinds(data, arrays, mask),
        nvtx_projection=_top(range_projections(data, arrays, mask), top),
        roofs=profile_roofs(data.metadata, [d.device for d in devices]),
    )


def analyze_file(
    path: str | os.PathLike[str],
    top: int | None = 20,
    device: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> TimelineAnalysis:
    """Read and analyze one profile: a Kineto trace (plain or .gz), an nsys SQLite export or
    an nsys report (traces.profile)."""
    return analyze_trace(read_profile(path, progress), top=top, device=device)


def rank_table(results: list[TimelineAnalysis]) -> list[RankRow]:
    """One row per analyzed trace (one file per rank), in the order given."""
    rows = []
    for a in results:
        o = a.overall
        name = os.path.basename(a.path)
        if o is None:
            rows.append(RankRow(name, a.path, a.rank, *([None] * 7)))
            continue
        span = o.span_s
        rows.append(
            RankRow(
                trace=name,
                path=a.path,
                rank=a.rank,
                span_s=span,
                busy_compute_s=o.busy_compute_s,
                compute_share=o.busy_compute_s / span if span > 0 else None,
                communication_busy_s=sum(
                    c.busy_s for c in o.categories if c.category == "communication"
                ),
                idle_s=o.idle_s,
                idle_share=o.idle_s / span if span > 0 else None,
                host_wait_s=o.idle.host_wait_s,
            )
        )
    return rows
