"""Trace analysis entry point: TraceData in, TimelineAnalysis out (pure, no I/O)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from analyzers.timeline.categories import CATEGORIES, is_comm_range, is_step_annotation
from analyzers.timeline.device import US, DeviceArrays, combine, device_timelines
from analyzers.timeline.hostmap import HostMap, build_host_map
from analyzers.timeline.model import (
    KernelStat,
    OpStat,
    ProfilerRanges,
    RangeStat,
    Steps,
    ThreadStat,
    TimelineAnalysis,
)
from analyzers.timeline.reader import TraceData, read_trace
from analyzers.timeline.roofline import roofline_points


def _top(items: list, n: int | None) -> list:
    return items if not n or n <= 0 else items[:n]


def _kernel_stats(data: TraceData, arrays: DeviceArrays, mask: np.ndarray) -> list[KernelStat]:
    names = data.names.values
    acc: dict[int, list[float]] = {}
    cat_of: dict[int, int] = {}
    for nm, du, ca in zip(
        arrays.name[mask].tolist(),
        arrays.dur[mask].tolist(),
        arrays.category[mask].tolist(),
        strict=True,
    ):
        a = acc.get(nm)
        if a is None:
            acc[nm] = [1, du, du, du]
            cat_of[nm] = ca
        else:
            a[0] += 1
            a[1] += du
            a[2] = min(a[2], du)
            a[3] = max(a[3], du)
    stats = [
        KernelStat(names[nm], CATEGORIES[cat_of[nm]], int(c), t * US, t / c * US, lo * US, hi * US)
        for nm, (c, t, lo, hi) in acc.items()
    ]
    stats.sort(key=lambda k: (-k.total_s, k.name))
    return stats


def _host_stats(
    data: TraceData, host: HostMap, arrays: DeviceArrays, mask: np.ndarray
) -> tuple[list[OpStat], list[RangeStat], list[ThreadStat], Steps, float, float]:
    rg, names = data.ranges, data.names.values
    # Device time per launching cpu_op (innermost enclosing operator of the launch call).
    op_kernels: dict[int, list[float]] = defaultdict(lambda: [0, 0.0])  # range idx -> n, time
    mapped = unmapped = 0.0
    for c, du in zip(arrays.corr[mask].tolist(), arrays.dur[mask].tolist(), strict=True):
        r = host.corr_to_call.get(c)
        op = int(host.call_op[r]) if r is not None else -1
        if op < 0:
            unmapped += du
            continue
        mapped += du
        acc = op_kernels[op]
        acc[0] += 1
        acc[1] += du

    ops: dict[int, list[float]] = {}
    ann: dict[int, list[float]] = {}
    threads: dict[int, list[float]] = {}
    step_durs: list[float] = []
    parent = host.parent.tolist()
    self_time = host.self_time.tolist()
    for i, (nm, kind, th, du) in enumerate(zip(rg.name, rg.kind, rg.thread, rg.dur, strict=True)):
        t = threads.setdefault(th, [0, 0, 0.0])
        t[kind] += 1
        if parent[i] < 0:
            t[2] += du
        if kind == 0:
            o = ops.setdefault(nm, [0, 0.0, 0.0, 0, 0.0])
            o[0] += 1
            o[1] += du
            o[2] += self_time[i]
            k = op_kernels.get(i)
            if k is not None:
                o[3] += k[0]
                o[4] += k[1]
        elif is_step_annotation(names[nm]):
            step_durs.append(du)
        else:
            a = ann.setdefault(nm, [0, 0.0])
            a[0] += 1
            a[1] += du
    op_stats = [
        OpStat(names[nm], int(c), tot * US, slf * US, int(k), dt * US)
        for nm, (c, tot, slf, k, dt) in ops.items()
    ]
    has_device = arrays.n > 0
    op_stats.sort(
        key=lambda o: ((-o.device_time_s, -o.self_s) if has_device else (-o.self_s,), o.name)
    )
    ann_stats = [
        RangeStat(names[nm], int(c), tot * US, is_comm_range(names[nm]))
        for nm, (c, tot) in ann.items()
    ]
    ann_stats.sort(key=lambda a: (-a.total_s, a.name))
    thread_stats = []
    for th, (n_ops, n_ann, top) in threads.items():
        pid, tid = data.threads.values[th]
        thread_stats.append(ThreadStat(pid, tid, int(n_ops), int(n_ann), top * US))
    thread_stats.sort(key=lambda t: -t.top_level_s)
    steps = Steps(
        count=len(step_durs),
        mean_s=(sum(step_durs) / len(step_durs) * US) if step_durs else None,
        total_s=sum(step_durs) * US,
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


def _rank(meta: dict) -> int | None:
    info = meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), (int, float)):
        return int(info["rank"])
    return None


def analyze_trace(
    data: TraceData, top: int | None = 20, device: int | None = None
) -> TimelineAnalysis:
    """Analyze one read trace. `top` limits the kernel/op/annotation lists (None/0: all);
    `device` restricts the device side to one device id."""
    host = build_host_map(data)
    arrays = DeviceArrays(data)
    mask = np.ones(arrays.n, dtype=bool) if device is None else arrays.device == device
    devices = device_timelines(data, host, arrays, device)
    ops, anns, threads, steps, mapped, unmapped = _host_stats(data, host, arrays, mask)
    notes: list[str] = []
    has_device = bool(mask.any())
    if not has_device:
        if device is not None and arrays.n:
            notes.append(f"no device events on device {device}")
        elif data.profiler_ranges:
            notes.append("no kernel activity records: device time cannot be measured")
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
        notes.append(f"{unmapped:.6g} s of device time has no launching cpu_op in the trace")
    if data.backend != "yajl2_c":
        notes.append(f"ijson backend {data.backend} (slow); install ijson with its C extension")
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
        roofline=_top(roofline_points(data, host, arrays, mask), top),
        profiler_ranges=_profiler_ranges(data, top),
        notes=notes,
    )


def analyze_file(
    path: str | os.PathLike[str],
    top: int | None = 20,
    device: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> TimelineAnalysis:
    """Read and analyze one trace file (plain or .gz)."""
    return analyze_trace(read_trace(path, progress), top=top, device=device)
