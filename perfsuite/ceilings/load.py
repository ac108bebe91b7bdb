"""The machine's state around a CPU peak measurement, and whether the peak can be trusted.

Why: on a shared machine a matmul benchmark that competes with other jobs reports what it got,
not what the CPU reaches; cached, such a peak makes every later run look above its roof. So
each CPU measurement keeps the 1-minute load average before and after it, the CPU count and
the thread count, and is cached only when the machine was quiet:

    busy  <=>  max(load_before, load_after - own) > cpus - threads + 0.5

`cpus - threads` is the room other work may take without sharing a core with the benchmark's
threads; 0.5 tolerates short blips in the average. `own` = threads x (1 - exp(-t / 60 s)) is
the most the benchmark's own threads can have added to the 1-minute average in its t seconds,
so the reading after is not held against the benchmark itself. The load average counts
runnable tasks of the whole machine, so `cpus` is os.cpu_count(), not this process's affinity.
GPU peaks get no load record: a busy host says nothing about a shared GPU.
"""

from __future__ import annotations

import math
import os
from typing import Any

SLACK = 0.5  # load that may sit above cpus - threads before a machine counts as busy
WINDOW_S = 60.0  # time constant of the 1-minute load average


def read_load() -> float | None:
    """The 1-minute load average, or None where the OS has none (Windows)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def machine_cpus() -> int:
    return os.cpu_count() or 1


def busy_limit(cpus: int, threads: int) -> float:
    """The load above which a benchmark with `threads` threads shares cores with other work."""
    return cpus - threads + SLACK


def own_load(threads: int, seconds: float) -> float:
    """The most `threads` busy threads can add to the 1-minute load in `seconds`."""
    return threads * (1.0 - math.exp(-max(seconds, 0.0) / WINDOW_S))


def judge(
    before: float | None, after: float | None, cpus: int, threads: int | None, seconds: float
) -> dict[str, Any]:
    """The stored state of one measurement: loads, CPUs, threads, the limit and the verdict.

    `busy` is None when the load is unknown (no load average on this OS).
    """
    t = threads or 1
    limit = busy_limit(cpus, t)
    others = before
    if before is not None and after is not None:
        others = max(before, after - own_load(t, seconds))
    busy = None if others is None else others > limit
    return {
        "load_before": before,
        "load_after": after,
        "cpus": cpus,
        "threads": threads,
        "busy_limit": limit,
        "busy": busy,
    }


def load_text(item: dict[str, Any]) -> str:
    """'load 0.12 -> 0.31 on 2 CPUs, 2 threads (quiet: <= 0.5)', or why the load is unknown."""
    if "load_before" not in item:
        return "load at measurement not recorded (cached before perfsuite recorded it)"
    before, after = item.get("load_before"), item.get("load_after")
    if before is None:
        return "load unknown (no load average on this OS)"
    after_s = f" -> {after:.2f}" if after is not None else ""
    verdict = "busy: above" if item.get("busy") else "quiet: <="
    t = item.get("threads")
    return (
        f"load {before:.2f}{after_s} on {item.get('cpus')} CPUs, {t} thread{'' if t == 1 else 's'}"
        f" ({verdict} {item.get('busy_limit')})"
    )
