"""A PyTorch profiler (Kineto / Chrome) trace as DataFrames: what `perfsuite timeline` prints.

Every time is in seconds (`*_s` columns), the analyzer's unit and the one `timeline --json`
prints (`"time_unit": "s"`), so a column equals its JSON field exactly.
The whole trace is analyzed once, with no top-N cut (the CLI's `--top 0`).
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from perfsuite.analyzers.timeline import TimelineAnalysis, analyze_trace, read_profile
from perfsuite.analyzers.timeline.device import DeviceArrays
from perfsuite.analyzers.timeline.hostmap import build_host_map
from perfsuite.analyzers.timeline.launch import launch_flags, launch_pairs
from perfsuite.analyzers.timeline.memory import memory_series
from perfsuite.analyzers.timeline.queues import queue_series
from perfsuite.api.frames import Spec, column_frame, frame, of_child, series
from perfsuite.record import load_record
from perfsuite.record.sidecars import trace_path

TEMPORAL: Spec = [
    ("device", "device"),
    ("name", "name"),
    ("events", "events"),
    ("span_s", "span_s"),
    ("busy_s", "busy_s"),
    ("busy_compute_s", "busy_compute_s"),
    ("busy_non_compute_s", "busy_non_compute_s"),
    ("idle_s", "idle_s"),
    ("compute_comm_overlap_s", "compute_comm_overlap_s"),
    ("sync_records", "sync_records"),
    ("sync_total_s", "sync_total_s"),
]
IDLE: Spec = [
    ("device", "device"),
    ("idle_s", "idle.idle_s"),
    ("gaps", "idle.gaps"),
    ("host_wait_s", "idle.host_wait_s"),
    ("host_sync_s", "idle.host_sync_s"),
    ("in_launch_s", "idle.in_launch_s"),
    ("queued_s", "idle.queued_s"),
    ("unattributed_s", "idle.unattributed_s"),
]
# Rows are (device id, child) pairs.
CATEGORIES: Spec = [
    ("device", lambda pair: pair[0]),
    *of_child([(c, c) for c in ("category", "count", "total_s", "busy_s")]),
]
STREAMS: Spec = [
    ("device", lambda pair: pair[0]),
    *of_child([(c, c) for c in ("stream", "events", "total_s", "busy_s", "idle_s", "host_wait_s")]),
]
COPIES: Spec = [(c, c) for c in ("kind", "count", "total_s", "bytes")]
PROJECTION: Spec = [
    (c, c)
    for c in (
        "name",
        "ranges",
        "host_total_s",
        "projected_s",
        "gpu_ops",
        "gpu_time_s",
        "without_gpu_work",
        "communication",
    )
]
KERNELS: Spec = [
    ("name", "name"),
    ("category", "category"),
    ("count", "count"),
    ("total_s", "total_s"),
    ("mean_s", "mean_s"),
    ("min_s", "min_s"),
    ("max_s", "max_s"),
]
OPS: Spec = [
    ("name", "name"),
    ("calls", "calls"),
    ("total_s", "total_s"),
    ("self_s", "self_s"),
    ("kernels", "kernels"),
    ("device_time_s", "device_time_s"),
    ("communication", "communication"),
]
ANNOTATIONS: Spec = [
    ("name", "name"),
    ("count", "count"),
    ("total_s", "total_s"),
    ("communication", "communication"),
]
THREADS: Spec = [
    ("pid", "pid"),
    ("tid", "tid"),
    ("ops", "ops"),
    ("annotations", "annotations"),
    ("top_level_s", "top_level_s"),
]
ROOFLINE: Spec = [
    ("op", "op"),
    ("input_dims", "input_dims"),
    ("input_types", "input_types"),
    ("calls", "calls"),
    ("flops_per_call", "flops"),
    ("bytes_per_call", "bytes"),
    ("device_time_s", "device_time_s"),
    ("time_s", "time_s"),
    ("time_kind", "time_kind"),
    ("achieved_flop_per_s", "flops_per_s"),
    ("achieved_byte_per_s", "bytes_per_s"),
    ("intensity_flop_per_byte", "intensity"),
]
RANGES: Spec = [("name", "name"), ("count", "count"), ("total_s", "total_s")]


# Launch statistics, queue length and memory timeline (perfsuite.analyzers.timeline.launch, .queues,
# .memory). Per-event tables are read by column; `*_start_s` and `t_s` are seconds from the
# trace's first event.
def _dist_columns(prefix: str) -> Spec:
    return [(f"{prefix}_{q}_s", f"{prefix}.{q}_s") for q in ("mean", "p50", "p90", "p99", "max")]


LAUNCH_GROUPS: Spec = [
    ("device", "device"),
    ("stream", "stream"),
    ("launches", "launches"),
    *_dist_columns("cpu"),
    *_dist_columns("gpu"),
    *_dist_columns("delay"),
    ("gpu_total_s", "gpu_total_s"),
    ("short", "short"),
    ("runtime_outliers", "runtime_outliers"),
    ("delay_outliers", "delay_outliers"),
]
LAUNCH_KERNELS: Spec = [
    (c, c)
    for c in (
        "name",
        "category",
        "launches",
        "gpu_total_s",
        "cpu_mean_s",
        "cpu_max_s",
        "delay_mean_s",
        "delay_p90_s",
        "delay_max_s",
        "short",
        "runtime_outliers",
        "delay_outliers",
    )
]
QUEUES: Spec = [
    (c, c)
    for c in (
        "device",
        "stream",
        "launches",
        "max_length",
        "mean_length",
        "time_at_max_s",
        "span_s",
    )
]
MEMORY: Spec = [
    (c, c)
    for c in (
        "device_type",
        "device",
        "events",
        "allocations",
        "frees",
        "bytes_allocated",
        "bytes_freed",
        "allocated_at_start_bytes",
        "final_allocated_bytes",
        "peak_allocated_bytes",
        "peak_t_s",
        "peak_reserved_bytes",
        "from_running_sum",
        "frees_of_earlier_blocks",
        "peak_unattributed_bytes",
    )
]
QUEUE_SERIES: Spec = [
    ("device", "device"),
    ("stream", "stream"),
    ("t_s", lambda q: q.t * US),
    ("length", "length"),
]
MEMORY_SERIES: Spec = [
    ("device_type", "device_type"),
    ("device", "device"),
    ("t_s", lambda m: m.t * US),
    ("allocated_bytes", "allocated"),
    ("reserved_bytes", "reserved"),
]
PEAK_HOLDERS: Spec = [
    ("device_type", lambda pair: pair[0].device_type),
    ("device", lambda pair: pair[0].device),
    *of_child([("op", "op"), ("allocations", "allocations"), ("bytes", "bytes")]),
]


US = 1e-6  # the analyzers' per-event arrays are in the trace's unit, µs


def _stacked(items: list[Any], spec: Spec) -> pd.DataFrame:
    """Per-series column tables (a time series per stream or device) one under the other;
    a series' scalar fields (its device, stream) repeat down its rows."""
    parts = [column_frame(item, spec, len(item.t)) for item in items]
    return pd.concat(parts, ignore_index=True) if parts else frame([], spec)


class Trace:
    """One analyzed trace. `device` keeps only that device id (the CLI's `--device`).

    The trace is read and analyzed here, once, so a bad file fails at the call that named it;
    the tables are conversions of `analysis`, the analyzer's own result object.
    """

    def __init__(self, path: str | os.PathLike[str], device: int | None = None):
        self.path = Path(path)
        self.device = device
        self._data = read_profile(self.path)
        self.analysis: TimelineAnalysis = analyze_trace(self._data, top=None, device=device)

    def __repr__(self) -> str:
        return f"<perfsuite.Trace {self.path}>"

    def _devices(self) -> list[Any]:
        """Per-device timelines, then all devices together (device -1) as `timeline --json`
        gives it: sums over devices, so leave that row out before summing a column."""
        a = self.analysis
        return [*a.devices, *([a.overall] if a.overall else [])]

    @cached_property
    def summary(self) -> pd.Series:
        """Trace-level figures: events, profiled window, steps, device time with/without op."""
        a = self.analysis
        return series(
            {
                "path": a.path,
                "rank": a.rank,
                "events": a.events,
                "window_s": a.window_s,
                "has_device": a.has_device,
                "devices": len(a.devices),
                "steps": a.steps.count,
                "step_mean_s": a.steps.mean_s,
                "steps_total_s": a.steps.total_s,
                "mapped_device_time_s": a.mapped_device_time_s,
                "unmapped_device_time_s": a.unmapped_device_time_s,
                "reader_backend": a.reader_backend,
            },
            self.path.name,
        )

    @cached_property
    def temporal(self) -> pd.DataFrame:
        """Per device: span, busy (streams counted once), compute, non-compute, idle."""
        return frame(self._devices(), TEMPORAL)

    @cached_property
    def idle(self) -> pd.DataFrame:
        """Per device: idle time by cause (host wait, of it in sync calls, inside the launch
        call, queued after it, unknown); the causes sum to idle_s."""
        return frame(self._devices(), IDLE)

    @cached_property
    def categories(self) -> pd.DataFrame:
        """Per device and kernel category: events, summed duration, busy time (union)."""
        pairs = [(d.device, c) for d in self._devices() for c in d.categories]
        return frame(pairs, CATEGORIES)

    @cached_property
    def streams(self) -> pd.DataFrame:
        """Per device and stream: events, busy, idle, host wait (HTA's per-stream rule)."""
        pairs = [(d.device, s) for d in self.analysis.devices for s in d.streams]
        return frame(pairs, STREAMS)

    @cached_property
    def kernels(self) -> pd.DataFrame:
        """Every kernel name with its category, count and total/mean/min/max duration."""
        return frame(self.analysis.top_kernels, KERNELS)

    @cached_property
    def ops(self) -> pd.DataFrame:
        """CPU operators: inclusive and self time, kernels launched and their device time."""
        return frame(self.analysis.ops, OPS)

    @cached_property
    def annotations(self) -> pd.DataFrame:
        """User annotations (record_function, collectives) with count and total time."""
        return frame(self.analysis.annotations, ANNOTATIONS)

    @cached_property
    def threads(self) -> pd.DataFrame:
        """Host threads: ops, annotations and busy time in top-level ranges."""
        return frame(self.analysis.threads, THREADS)

    @cached_property
    def roofline(self) -> pd.DataFrame:
        """Per (op, input shapes): FLOPs and bytes modeled from shapes, time measured: the
        kernels' device time, or in a CPU trace the op's host self time (`time_kind`)."""
        return frame(self.analysis.roofline, ROOFLINE)

    @cached_property
    def profiler_ranges(self) -> pd.DataFrame:
        """CUPTI profiler-mode ranges (counter replay: durations are not kernel time)."""
        pr = self.analysis.profiler_ranges
        return frame(pr.top if pr else [], RANGES)

    @cached_property
    def _launch_pairs(self) -> Any:

        arrays = DeviceArrays(self._data, build_host_map(self._data))
        keep = None if self.device is None else arrays.device == self.device
        return launch_pairs(self._data, arrays, keep)

    @cached_property
    def launches(self) -> pd.DataFrame:
        """One row per kernel/memcpy/memset launch: the launch call joined to its device
        event by correlation id, with the call's duration (`cpu_s`), the device event's
        (`gpu_s`) and the launch delay (`delay_s`: device start minus call end, clipped at 0,
        as HTA's get_cuda_kernel_launch_stats), and the short / outlier flags of
        `launch_kernels` (HTA's cutoffs: 50 µs call, 100 µs delay)."""

        p = self._launch_pairs
        names = self._data.names.values
        f = launch_flags(p)
        spec: Spec = [
            ("correlation", "correlation"),
            ("device", "device"),
            ("stream", "stream"),
            ("name", lambda p: [names[i] for i in p.name.tolist()]),
            ("launch_call", lambda p: [names[i] for i in p.call_name.tolist()]),
            ("cpu_start_s", lambda p: p.cpu_ts * US),
            ("cpu_s", lambda p: p.cpu_dur * US),
            ("gpu_start_s", lambda p: p.gpu_ts * US),
            ("gpu_s", lambda p: p.gpu_dur * US),
            ("delay_s", lambda p: p.delay * US),
            ("short", lambda _: f.short),
            ("runtime_outlier", lambda _: f.runtime),
            ("delay_outlier", lambda _: f.delay),
        ]
        return column_frame(p, spec, len(p))

    @cached_property
    def launch_streams(self) -> pd.DataFrame:
        """Launch statistics per (device, stream), then all launches (device and stream -1):
        count, mean/p50/p90/p99/max of the launch call, the device event and the launch
        delay, device time, short kernels and outliers."""
        s = self.analysis.launches
        return frame([*s.streams, s.overall] if s else [], LAUNCH_GROUPS)

    @cached_property
    def launch_kernels(self) -> pd.DataFrame:
        """Launch statistics per kernel name, the kernels with most outliers first."""
        s = self.analysis.launches
        return frame(s.kernels if s else [], LAUNCH_KERNELS)

    @cached_property
    def queue_length(self) -> pd.DataFrame:
        """Queue length per stream over time (launched, not yet started; HTA's definition):
        a step series, one row per change (`t_s`, seconds from the trace start), the value
        holding until the stream's next row."""

        return _stacked(queue_series(self._launch_pairs), QUEUE_SERIES)

    @cached_property
    def queues(self) -> pd.DataFrame:
        """Queue length summary per stream: launches, max, time-weighted mean, time at max."""
        return frame(self.analysis.queues, QUEUES)

    @cached_property
    def memory_timeline(self) -> pd.DataFrame:
        """Allocated and reserved bytes after each allocator event, per device (`t_s`:
        seconds from the trace start; reserved -1 where the trace does not say)."""

        return _stacked(memory_series(self._data), MEMORY_SERIES)

    @cached_property
    def memory(self) -> pd.DataFrame:
        """Memory summary per device: allocations, frees, peak and when, final bytes."""
        return frame(self.analysis.memory, MEMORY)

    @cached_property
    def memory_peak_holders(self) -> pd.DataFrame:
        """Per device, the operators whose allocations were live at the peak, and bytes."""
        pairs = [(m, h) for m in self.analysis.memory for h in m.peak_holders]
        return frame(pairs, PEAK_HOLDERS)

    @cached_property
    def copies(self) -> pd.DataFrame:
        """Copies per kind (HtoD, DtoH, DtoD, PtoP, Unified ...): count, device time, bytes
        (None where the trace does not record them: Kineto; an nsys export does)."""
        return frame(self.analysis.copies, COPIES)

    @cached_property
    def nvtx_projection(self) -> pd.DataFrame:
        """Annotation (NVTX) ranges projected onto the GPU, per name, like nsys's
        nvtx_gpu_proj_sum: host time, projected time, device ops launched inside."""
        return frame(self.analysis.nvtx_projection, PROJECTION)

    @property
    def notes(self) -> list[str]:
        """The analyzer's notes (CPU-only trace, unmapped device time, slow reader...)."""
        return list(self.analysis.notes)


def trace(path: str | os.PathLike[str], device: int | None = None) -> Trace:
    """Analyze a Kineto/Chrome trace file (.json or .json.gz), an Nsight Systems profile (an
    `nsys export --type sqlite` file, or a .nsys-rep when nsys is on PATH), or the
    `timeline.trace` sidecar of a run folder / run.json. Bad input raises a one-line
    TraceError or RecordError naming the file (and the field)."""
    p = Path(path)
    if p.is_dir() or p.name == "run.json":
        p = trace_path(load_record(p))
    return Trace(p, device)
