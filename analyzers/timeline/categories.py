"""What kind of work a device event or host range is: compute, memory, communication.

Classification is by Kineto category first (gpu_memcpy / gpu_memset are memory whatever their
name) and then by name, because communication kernels are ordinary `kernel` events.
"""

from __future__ import annotations

import re

from perfsuite.devices.kernels import COMM_KERNEL as _COMM_KERNEL
from perfsuite.devices.kernels import MEMCPY_NAME as _MEMCPY_NAME
from perfsuite.devices.kernels import MEMSET_NAME as _MEMSET_NAME

COMPUTE = "compute"
MEMCPY = "memcpy"
MEMSET = "memset"
COMMUNICATION = "communication"
CATEGORIES = (COMPUTE, MEMCPY, MEMSET, COMMUNICATION)
NON_COMPUTE = (MEMCPY, MEMSET, COMMUNICATION)

# Host ranges (annotations and cpu_ops) that are collectives: `nccl:all_reduce`,
# `gloo:all_reduce`, c10d ops (`c10d::allreduce_`), the profiler's `record_param_comms`.
_COMM_RANGE = re.compile(r"^(?:nccl|rccl|gloo|mpi|ucc|c10d)[:_]|^record_param_comms$", re.I)

# Host calls that block until the device (or a transfer) finishes.
_SYNC_CALL = re.compile(
    r"^(?:cuda|hip)(?:Stream|Device|Event|Ctx)Synchronize$"
    r"|^cu(?:Stream|Ctx|Event)Synchronize$"
    r"|^(?:cuda|hip)Memcpy(?:2D|3D|WithStream|ToSymbol|FromSymbol)?$"
    r"|^(?:cuda|hip)Memset$"
)
# The runtime calls that put one kernel, copy or memset on a stream's queue: HTA 0.5's list
# for its queue length (TraceSymbolTable.get_runtime_launch_events_query), so the launch
# statistics and queue lengths count the same launches HTA does. A synchronous cudaMemcpy or
# a graph launch is not one launch of one device event, and is not here.
QUEUE_LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "hipLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipMemcpyAsync",
        "hipMemsetAsync",
        "hipMemcpyWithStream",
        "runFunction - job_prep_and_submit_for_execution",  # MTIA
    }
)


def device_category(name: str, cat_code: int) -> str:
    """Category of one device event; `cat_code` indexes reader.DEVICE_CAT_NAMES."""
    if cat_code == 1:
        return MEMCPY
    if cat_code == 2:
        return MEMSET
    if _COMM_KERNEL.match(name):
        return COMMUNICATION
    if _MEMCPY_NAME.match(name):
        return MEMCPY
    if _MEMSET_NAME.match(name):
        return MEMSET
    return COMPUTE


def is_comm_range(name: str) -> bool:
    return _COMM_RANGE.match(name) is not None


def is_sync_call(name: str) -> bool:
    return _SYNC_CALL.match(name) is not None


def is_step_annotation(name: str) -> bool:
    """`ProfilerStep#12`: the profiler's per-iteration range."""
    return name.startswith("ProfilerStep")
