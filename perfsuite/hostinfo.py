"""Facts about this host that need no framework: CPU model name and usable CPU count.

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


def usable_cpus() -> int:
    """CPUs this process may run on (affinity), which can be fewer than os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
