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

from analyzers.timeline import TimelineAnalysis, analyze_file
from perfsuite.api.frames import Spec, frame, of_child, series
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


class Trace:
    """One analyzed trace. `device` keeps only that device id (the CLI's `--device`).

    The trace is read and analyzed here, once, so a bad file fails at the call that named it;
    the tables are conversions of `analysis`, the analyzer's own result object.
    """

    def __init__(self, path: str | os.PathLike[str], device: int | None = None):
        self.path = Path(path)
        self.device = device
        self.analysis: TimelineAnalysis = analyze_file(self.path, top=None, device=device)

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

    @property
    def notes(self) -> list[str]:
        """The analyzer's notes (CPU-only trace, unmapped device time, slow reader...)."""
        return list(self.analysis.notes)


def trace(path: str | os.PathLike[str], device: int | None = None) -> Trace:
    """Analyze a Kineto/Chrome trace file (.json or .json.gz), or the `timeline.trace` sidecar
    of a run folder / run.json. Bad input raises a one-line TraceError or RecordError naming
    the file (and the field)."""
    p = Path(path)
    if p.is_dir() or p.name == "run.json":
        p = trace_path(load_record(p))
    return Trace(p, device)
