"""Result dataclasses of trace analysis. All times are seconds (the trace's microseconds / 1e6)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CategoryTime:
    """Device events of one category: `total_s` sums durations, `busy_s` is their union."""

    category: str
    count: int
    total_s: float
    busy_s: float


@dataclass
class IdleBreakdown:
    """Where idle device time (gaps in the union of all streams) came from.

    host_wait_s: the work that ended the gap had not been submitted yet (its launch call
    started after the device went idle): the host was not feeding the device. host_sync_s is
    the part of host_wait_s during which the launching thread sat in a blocking call
    (cudaStreamSynchronize, cudaDeviceSynchronize, synchronous cudaMemcpy...).
    queued_s: the work was already submitted when the device went idle; the gap is launch
    latency or a wait on a dependency (an event on another stream or device, a pageable copy).
    unattributed_s: no launch call correlated with the next event.
    """

    idle_s: float = 0.0
    gaps: int = 0
    host_wait_s: float = 0.0
    host_sync_s: float = 0.0
    queued_s: float = 0.0
    unattributed_s: float = 0.0


@dataclass
class StreamStats:
    """One stream. host_wait_s follows HTA's per-stream rule: a gap counts wholly as host wait
    when the next kernel's launch call began after the previous kernel on the stream ended."""

    stream: int
    events: int
    total_s: float
    busy_s: float
    idle_s: float
    host_wait_s: float


@dataclass
class DeviceTimeline:
    """Temporal breakdown of one device (device = -1: all devices summed)."""

    device: int
    name: str | None
    events: int
    span_s: float  # first device event start to last end
    busy_s: float  # union over all streams
    busy_compute_s: float  # union of compute kernels
    busy_non_compute_s: float  # busy while only memcpy/memset/communication run
    idle_s: float  # span_s - busy_s
    compute_comm_overlap_s: float  # compute and communication running at the same time
    categories: list[CategoryTime]
    idle: IdleBreakdown
    streams: list[StreamStats] = field(default_factory=list)
    sync_records: int = 0  # cuda_sync records (host blocking, not device work)
    sync_total_s: float = 0.0


@dataclass
class KernelStat:
    name: str
    category: str
    count: int
    total_s: float
    mean_s: float
    min_s: float
    max_s: float


@dataclass
class OpStat:
    """A host operator: inclusive and self CPU time, and the device time of the kernels it
    launched (kernels mapped to their innermost enclosing cpu_op)."""

    name: str
    calls: int
    total_s: float
    self_s: float
    kernels: int
    device_time_s: float


@dataclass
class RangeStat:
    """A user annotation (record_function, nccl:all_reduce, gloo:all_reduce...)."""

    name: str
    count: int
    total_s: float
    communication: bool


@dataclass
class ThreadStat:
    pid: Any
    tid: Any
    ops: int
    annotations: int
    top_level_s: float  # time inside top-level ranges (no double count of nested ones)


@dataclass
class RooflinePoint:
    """One (operator, input shapes) group: FLOPs/bytes modeled from shapes, time measured.

    flops/bytes are per call (op registry, provenance "modeled"); device_time_s sums the kernel
    time of `calls` operator instances (provenance "measured")."""

    op: str
    input_dims: Any
    input_types: Any
    calls: int
    flops: float
    bytes: float
    device_time_s: float
    flops_per_s: float | None
    bytes_per_s: float | None
    intensity: float | None  # FLOP/byte


@dataclass
class Steps:
    count: int
    mean_s: float | None
    total_s: float


@dataclass
class ProfilerRanges:
    """CUPTI profiler-mode ranges (`cuda_profiler_range`): counter collection with kernel
    replay, so their durations are not kernel execution time."""

    count: int
    metrics: list[str]
    top: list[KernelStat]


@dataclass
class TimelineAnalysis:
    path: str
    rank: int | None
    reader_backend: str
    events: int
    events_by_phase: dict[str, int]
    window_s: float  # profiled window: earliest event start to latest end
    has_device: bool
    devices: list[DeviceTimeline]
    overall: DeviceTimeline | None
    top_kernels: list[KernelStat]
    ops: list[OpStat]
    annotations: list[RangeStat]
    threads: list[ThreadStat]
    steps: Steps
    mapped_device_time_s: float  # device time whose launching cpu_op was found
    unmapped_device_time_s: float
    roofline: list[RooflinePoint]
    profiler_ranges: ProfilerRanges | None
    notes: list[str]
