"""A CPU's spec peak FLOP/s, from what the OS says about it: the widest fused multiply-add its
flags name, the clock, and the cores a run uses.

    peak = cores x clock x FMA units x lanes x 2 FLOP (a multiply-add is 2)

Why: GPUs have datasheets (specs.json); a CPU's peak follows from its vector width, which the
flags tell, and its clock, which the OS tells with varying precision. Cores are the run's
threads (one core per thread: an upper bound when two threads share a core). Two FMA units per
core are assumed, what current server cores have; parts with one reach half, so the figure is
an upper bound. Each assumption is written in the spec's `source`, and a CPU whose flags or
clock cannot be read gets an entry that says the spec is unknown and why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfsuite import hostinfo

FMA_UNITS = 2
AMX_BF16_FLOP_PER_CYCLE = 1024  # per core: Intel's AMX-BF16 tile rate
CPUFREQ_MAX = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"


def vector_lanes(flags: Iterable[str]) -> tuple[int, str] | None:
    """(float32 lanes of the widest FMA instruction, the flag that says so), or None."""
    f = set(flags)
    if "avx512f" in f:
        return 16, "avx512f (512-bit FMA)"
    if "fma" in f and "avx2" in f:
        return 8, "avx2+fma (256-bit FMA)"
    if "asimd" in f:
        return 4, "asimd (128-bit NEON FMA)"
    return None


def clock(cpuinfo: str, cpufreq_max_khz: str | None = None) -> tuple[float, str] | None:
    """(Hz, where it came from): cpufreq's maximum, else the model name's "@ x.xxGHz", else
    "cpu MHz" (the clock reported now: a turbo clock may be higher)."""
    if cpufreq_max_khz and cpufreq_max_khz.strip().isdigit():
        return float(cpufreq_max_khz) * 1e3, "cpufreq maximum"
    named = re.search(r"model name\s*:.*@\s*([\d.]+)\s*GHz", cpuinfo)
    if named:
        return float(named.group(1)) * 1e9, "the model name's nominal clock; turbo may be higher"
    mhz = re.search(r"cpu MHz\s*:\s*([\d.]+)", cpuinfo)
    if mhz and float(mhz.group(1)) > 0:
        return float(mhz.group(1)) * 1e6, "cpu MHz in /proc/cpuinfo; turbo may be higher"
    return None


def cpu_spec(
    name: str, flags: Iterable[str], clock_hz: tuple[float, str] | None, cores: int
) -> dict[str, Any]:
    """A spec-table-shaped entry for `cores` cores; `flops` empty and `source` saying why
    when the vector width or the clock is unknown."""
    flags = set(flags)
    entry: dict[str, Any] = {"id": "cpu-flags", "name": name, "vendor": None, "flops": {},
                             "memory_bandwidth": None, "l2_bandwidth": None,
                             "max_sm_clock_hz": None}  # fmt: skip
    lanes = vector_lanes(flags)
    if lanes is None or clock_hz is None:
        missing = "no FMA vector width in the CPU flags" if lanes is None else "no clock read"
        entry["source"] = f"spec unknown: {missing}"
        return entry
    (n, which), (hz, where) = lanes, clock_hz
    fp32 = cores * hz * FMA_UNITS * n * 2
    bf16, bf16_how = fp32, "as float32 (no bf16 instructions: converted)"
    if "amx_bf16" in flags:
        bf16 = cores * hz * AMX_BF16_FLOP_PER_CYCLE
        bf16_how = f"amx_bf16, {AMX_BF16_FLOP_PER_CYCLE} FLOP/cycle/core"
    elif "avx512_bf16" in flags:
        bf16, bf16_how = 2 * fp32, "avx512_bf16, 2x float32"
    entry["flops"] = {"float32": fp32, "float64": fp32 / 2, "bfloat16": bf16}
    entry["cores"] = cores
    entry["clock_hz"] = hz
    entry["source"] = (
        f"from the CPU flags: {which}, {n} float32 lanes x 2 FLOP x {FMA_UNITS} FMA "
        f"units (assumed; some parts have 1) x {hz / 1e9:.2f} GHz ({where}) x {cores} "
        f"core{'' if cores == 1 else 's'} (one per thread); float64 half; bfloat16 {bf16_how}"
    )
    return entry


def below_measured(entry: dict[str, Any], measured: dict[str, float]) -> dict[str, Any]:
    """`entry` unchanged, or, where a measured rate (dtype -> FLOP/s) exceeds the spec of its
    dtype, an entry with no spec values saying so: a spec is an upper bound or nothing (the
    clock read may be a base clock below the turbo clock the benchmark ran at)."""
    over = [
        (dt, v, entry["flops"][dt])
        for dt, v in sorted(measured.items())
        if v and entry.get("flops", {}).get(dt) and v > entry["flops"][dt]
    ]
    if not over:
        return entry
    dt, v, sp = over[0]
    return {
        **entry,
        "flops": {},
        "source": (
            f"spec unknown: the measured {dt} rate {v:.4g} FLOP/s exceeds the {sp:.4g} FLOP/s "
            f"the CPU flags and clock give ({entry['source']}), so that is no upper bound"
        ),
    }


def this_cpu_spec(name: str, threads: int | None) -> dict[str, Any]:
    """`cpu_spec` of this machine for a run of `threads` threads (Linux; elsewhere unknown)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    try:
        khz: str | None = Path(CPUFREQ_MAX).read_text(encoding="utf-8")
    except OSError:
        khz = None
    usable = hostinfo.usable_cpus()
    cores = max(1, min(threads or usable, usable))
    return cpu_spec(name, hostinfo.cpu_flags(), clock(text, khz), cores)
