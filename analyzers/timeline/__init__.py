"""Analysis of PyTorch profiler (Kineto) Chrome traces: device temporal breakdown, idle-time
attribution, kernel categories, operator -> kernel mapping, per-op roofline points, kernel
launch statistics, queue length per stream and the allocator's memory timeline.

Torch-free: a trace from any machine (CUDA, ROCm, CPU-only) can be analyzed anywhere.
"""

from perfsuite.analyzers.timeline.analysis import analyze_file, analyze_trace, rank_table
from perfsuite.analyzers.timeline.model import (
    CategoryTime,
    CopyKind,
    DeviceTimeline,
    IdleBreakdown,
    KernelLaunchStat,
    KernelStat,
    LaunchGroup,
    LaunchStats,
    MemoryStat,
    OpStat,
    PeakHolder,
    QueueStat,
    RangeProjection,
    RankRow,
    RooflinePoint,
    StreamStats,
    TimelineAnalysis,
)
from perfsuite.traces.profile import read_profile
from perfsuite.traces.reader import TraceData, TraceError, iter_events, read_trace

__all__ = [
    "CategoryTime",
    "CopyKind",
    "DeviceTimeline",
    "IdleBreakdown",
    "KernelLaunchStat",
    "KernelStat",
    "LaunchGroup",
    "LaunchStats",
    "MemoryStat",
    "OpStat",
    "PeakHolder",
    "QueueStat",
    "RangeProjection",
    "RankRow",
    "RooflinePoint",
    "StreamStats",
    "TimelineAnalysis",
    "TraceData",
    "TraceError",
    "analyze_file",
    "analyze_trace",
    "iter_events",
    "rank_table",
    "read_profile",
    "read_trace",
]
