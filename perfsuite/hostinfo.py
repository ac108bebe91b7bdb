"""Facts about this host that need no framework: CPU model name, usable CPU count, CPU flags
and the process's page-fault count.

Shared by the runner (environment capture) and the ceilings (naming the CPU), so neither has
to import the other.
"""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (Linux) or the platform module."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def minor_page_faults() -> int | None:
    """Minor page faults of this process so far (getrusage ru_minflt; None where the resource
    module is missing, as on Windows).

    Why: a minor fault is the kernel handing the process a fresh zeroed page on first touch. A
    CPU run's speed depends on how often its allocator returns large tensors to the OS and
    faults them in again, which depends on the process's allocation history (the profile
    window changes it), so the count on the clock's edges shows an allocator state that
    changed, independently of wall-time noise."""
    try:
        import resource
    except ImportError:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def usable_cpus() -> int:
    """CPUs this process may run on (affinity), which can be fewer than os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# Instruction-set flags (Linux /proc/cpuinfo names; x86 `flags`, Arm `Features`) with which a
# CPU computes the dtype itself. Without one, PyTorch and oneDNN convert every operand to and
# from float32 in software, so a bf16/fp16 autocast run is usually slower than float32.
NATIVE_LOW_PRECISION = {
    "bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
    "float16": ("avx512_fp16", "amx_fp16", "asimdhp"),
}


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The first CPU's instruction-set flags; empty where the file is absent (not Linux)."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip().lower() in ("flags", "features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def native_on_cpu(dtype: str | None, flags: frozenset[str] | None = None) -> bool | None:
    """Whether this CPU has instructions for the low-precision `dtype`; None when that is
    not a question (no such dtype) or cannot be answered (flags unknown, not Linux)."""
    wanted = NATIVE_LOW_PRECISION.get(dtype or "")
    flags = cpu_flags() if flags is None else flags
    if not wanted or not flags:
        return None
    return bool(flags & set(wanted))


def low_precision_note(dtype: str | None, native: bool | None) -> str | None:
    """One line when `native` (`native_on_cpu(dtype)`, as the record's `math.autocast_native`
    keeps it) is False, else None: unknown flags or a GPU (None) are never guessed at."""
    if native is not False:
        return None
    wanted = NATIVE_LOW_PRECISION[dtype or ""]
    return (
        f"{dtype} autocast on a CPU without {dtype} instructions (none of "
        f"{', '.join(wanted)} in its flags): operands are converted to and from float32 in "
        "software, so this run is expected to be slower than float32, not faster"
    )
