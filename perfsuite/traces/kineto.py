"""What the trace reader knows of Kineto's event vocabulary, and how it reads odd values.

Shared by the reference reader (ijson) and the fast path (msgspec), which must agree on
every event to the last digit.
"""

from __future__ import annotations

from typing import Any

# Kineto categories that are work on a device stream (older traces use the capitalised names).
DEVICE_CATS = {
    "kernel": 0,
    "Kernel": 0,
    "gpu_memcpy": 1,
    "Memcpy": 1,
    "gpu_memset": 2,
    "Memset": 2,
}
DEVICE_CAT_NAMES = ("kernel", "gpu_memcpy", "gpu_memset")
# Host calls that submit device work; "Runtime" is the PyTorch 1.8-era name of cuda_runtime.
RUNTIME_CATS = {
    "cuda_runtime",
    "cuda_driver",
    "hip_runtime",
    "hip_driver",
    "privateuse1_runtime",
    "Runtime",
}
# Host ranges: 0 = operator (cpu_op), 1 = annotation (record_function, ProfilerStep#N, nccl:...).
RANGE_CATS = {"cpu_op": 0, "Operator": 0, "user_annotation": 1}
SYNC_CAT = "cuda_sync"
# PyTorch's allocator records (profile_memory=True): instant events named "[memory]" whose
# args carry Bytes (negative for a free), Total Allocated/Reserved, Device Type/Id and Addr.
MEMORY_NAME = "[memory]"
MEMORY_PHASES = ("i", "I")
PROFILER_RANGE_CAT = "cuda_profiler_range"
# Timestamps are microseconds; 10^17 us is over 3,000 years from the clock's origin (Unix
# time in us is about 1.8e15), and no event lasts 10^13 us (115 days). Beyond: not a clock.
MAX_TS_US = 1e17
MAX_DUR_US = 1e13
SHAPE_KEYS = ("Input Dims", "Input type", "Concrete Inputs")
# Ids kept in int64 arrays; a larger (or non-integer) id is read as the field's default.
ID_LIMIT = 2**62


def as_float(value: Any, default: float = 0.0) -> float:
    """A number field as a float; anything float() refuses is `default`."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def as_id(value: Any, default: int = -1) -> int:
    """An id as an int64-range int; anything else (lists, NaN, 10**30) is `default`."""
    if isinstance(value, (bool, list, dict)):
        return default
    if not isinstance(value, int):
        try:
            value = int(value)
        except (TypeError, ValueError, OverflowError):
            try:
                value = int(str(value)[:32], 0)  # "0x0" streams in ROCm traces
            except (TypeError, ValueError):
                return default
    return value if -ID_LIMIT < value < ID_LIMIT else default


def frozen_shape(value: Any) -> Any:
    """Lists to tuples so shape descriptions can be interned (hashable); objects, which no
    profiler writes there, become None."""
    if isinstance(value, list):
        return tuple(frozen_shape(v) for v in value)
    if isinstance(value, dict):
        return None
    return value
