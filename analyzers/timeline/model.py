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
    """Where idle device time (gaps in the union of all streams) came from. The four causes
    split each gap by where the launch call of the event that ends it sits, so
    host_wait_s + in_launch_s + queued_s + unattributed_s == idle_s.

    host_wait_s: the part of the gap before that launch call started: the host had not begun
    submitting the work (CPU-bound code, Python overhead, data loading). host_sync_s is the
    part of host_wait_s during which the launching thread sat in a blocking call
    (cudaStreamSynchronize, cudaDeviceSynchronize, synchronous cudaMemcpy...).
    in_launch_s: the part during which the launch call itself was running: a slow launch
    (lazy module loading or JIT on first use, a pageable copy staged by the call, driver
    locks). Kept apart: the host was busy submitting, and the work may not be on the device's
    queue until the call returns (only a pageable copy is known to start earlier).
    queued_s: the part after the launch call returned: the work was submitted and did not start
    (device-side launch latency, or a wait on a dependency: an event on another stream).
    unattributed_s: no launch call correlated with the next event.
    """

    idle_s: float = 0.0
    gaps: int = 0
    host_wait_s: float = 0.0
    host_sync_s: float = 0.0
    in_launch_s: float = 0.0
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
    launched (kernels mapped to their innermost enclosing cpu_op). `communication`: a
    collective's host range (c10d::allreduce_, record_param_comms...), as for annotations."""

    name: str
    calls: int
    total_s: float
    self_s: float
    kernels: int
    device_time_s: float
    communication: bool = False


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
    time of `calls` operator instances (provenance "measured"). A trace without device events
    (a CPU run) has no kernel time: `time_s` is then the host self time of the op and of the
    ops inside it that have no formula (`time_kind` "host"; device_time_s None), and the rates
    use `time_s` either way."""

    op: str
    input_dims: Any
    input_types: Any
    calls: int
    flops: float
    bytes: float
    device_time_s: float | None
    flops_per_s: float | None
    bytes_per_s: float | None
    intensity: float | None  # FLOP/byte
    time_s: float = 0.0  # the time the rates use: device time, or host self time (CPU)
    time_kind: str = "device"  # "device" or "host"


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


# Launch statistics, queue length and memory timeline: definitions in
# perfsuite.analyzers.timeline.launch, .queues and .memory.


@dataclass
class Distribution:
    """Summary of one quantity over launches, seconds (None: no launches)."""

    mean_s: float | None = None
    p50_s: float | None = None
    p90_s: float | None = None
    p99_s: float | None = None
    max_s: float | None = None


@dataclass
class LaunchGroup:
    """Launches of one stream of one device (stream -1 and device -1: all of them)."""

    device: int
    stream: int
    launches: int
    cpu: Distribution
    gpu: Distribution
    delay: Distribution
    gpu_total_s: float
    short: int
    runtime_outliers: int
    delay_outliers: int


@dataclass
class KernelLaunchStat:
    """Launches of one device event name (a kernel, or Memcpy HtoD...)."""

    name: str
    category: str
    launches: int
    gpu_total_s: float
    cpu_mean_s: float
    cpu_max_s: float
    delay_mean_s: float
    delay_p90_s: float
    delay_max_s: float
    short: int
    runtime_outliers: int
    delay_outliers: int


@dataclass
class LaunchStats:
    """Launch statistics of a trace (see the module docstring for every definition)."""

    runtime_cutoff_s: float
    delay_cutoff_s: float
    launches: int
    unmatched_calls: int
    gpu_total_s: float  # device time of the launched events
    short: int
    short_gpu_s: float
    short_share: float | None  # short_gpu_s / gpu_total_s
    runtime_outliers: int
    delay_outliers: int
    overall: LaunchGroup
    streams: list[LaunchGroup] = field(default_factory=list)
    kernels: list[KernelLaunchStat] = field(default_factory=list)


@dataclass
class QueueStat:
    """Queue length of one stream (perfsuite.analyzers.timeline.queues)."""

    device: int
    stream: int
    launches: int
    max_length: int
    mean_length: float  # time-weighted over first to last point
    time_at_max_s: float
    span_s: float  # first to last point of the series


@dataclass
class PeakHolder:
    """Allocations live at the peak, grouped by the operator that made them."""

    op: str
    allocations: int
    bytes: int


@dataclass
class MemoryStat:
    """Memory timeline summary of one device (perfsuite.analyzers.timeline.memory); bytes."""

    device_type: str
    device: int
    events: int
    allocations: int
    frees: int
    bytes_allocated: int  # sum of allocation sizes
    bytes_freed: int  # sum of free sizes (positive)
    allocated_at_start_bytes: int  # before the first event
    final_allocated_bytes: int
    peak_allocated_bytes: int
    peak_t_s: float  # first time the peak is reached, seconds from the trace start
    peak_reserved_bytes: int | None
    from_running_sum: bool  # True: no Total Allocated in the trace; running sum of Bytes
    frees_of_earlier_blocks: int  # frees whose allocation is not in the trace
    peak_holders: list[PeakHolder] = field(default_factory=list)
    peak_unattributed_bytes: int = 0


@dataclass
class RangeProjection:
    """All annotation ranges of one name projected onto the GPU
    (perfsuite.analyzers.timeline.projection); seconds. projected_s sums each range's span from
    its first device event's start to its last one's end; gpu_time_s sums those events'
    durations (overlapping streams counted each)."""

    name: str
    ranges: int
    host_total_s: float
    projected_s: float
    gpu_ops: int
    gpu_time_s: float
    without_gpu_work: int  # ranges that launched no device work
    communication: bool


@dataclass
class CopyKind:
    """Copies of one kind (HtoD, DtoH, DtoD, PtoP, Unified HtoD...), from the device events'
    names. bytes: what the trace records (an nsys export's SQL sum), None when it does not."""

    kind: str
    count: int
    total_s: float
    bytes: int | None


@dataclass
class Roof:
    """One roof of one device: `kind` "fp32" (FLOP/s, CUDA cores) or "memory" (byte/s).
    provenance "spec" (figures the profile carries, e.g. an nsys export's TARGET_INFO_GPU)
    or "measured" (a peaks file); `source` says where the figure came from."""

    device: int | None
    kind: str
    value: float
    unit: str
    provenance: str
    source: str


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
    launches: LaunchStats | None = None
    queues: list[QueueStat] = field(default_factory=list)
    memory: list[MemoryStat] = field(default_factory=list)
    copies: list[CopyKind] = field(default_factory=list)
    nvtx_projection: list[RangeProjection] = field(default_factory=list)
    roofs: list[Roof] = field(default_factory=list)  # spec roofs the profile carries


@dataclass
class RankRow:
    """One trace (rank) side by side with the others, to spot the straggler or the rank that
    waits. Device fields are None for a trace without device events. Shares are fractions
    of the span; all devices of the trace summed (its `overall`)."""

    trace: str  # file name
    path: str
    rank: int | None
    span_s: float | None
    busy_compute_s: float | None
    compute_share: float | None
    communication_busy_s: float | None
    idle_s: float | None
    idle_share: float | None
    host_wait_s: float | None
