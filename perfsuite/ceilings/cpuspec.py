"""A CPU's spec peak FLOP/s, from what the OS says about it: the widest fused multiply-add its
flags name, the clock, and the cores a run uses.

    peak = cores x clock x FMA units x lanes x 2 FLOP (a multiply-add is 2)

Why: GPUs have datasheets (specs.json); a CPU's peak follows from its vector width, which the
flags tell, and its clock, which the OS tells with varying precision. The clock rule: cpufreq's
maximum where the OS exposes it, else the model name's "@ x.xxGHz", else /proc/cpuinfo's
"cpu MHz" (the last two may sit below a turbo clock; the source says which was used). Cores are
the run's threads (one core per thread: an upper bound when two threads share a core). Two FMA
units per core are assumed, what current server cores have; parts with one reach half, so the
figure is an upper bound. Each assumption is written in the spec's `source`, and a CPU whose
flags or clock cannot be read gets an entry that says the spec is unknown and why.

A measured reading is judged against the spec (`physical_kernels`): a dense matmul above it
shows an assumption wrong (named), and any other benchmark above a standing spec is refused as
not physically possible, so the compute roof and MFU's denominator are never below a reading.
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


EXACT_KERNEL = "matmul"  # its FLOPs, 2n^3, are what the hardware executes: it can test a spec


def _clock_rule(entry: dict[str, Any]) -> str:
    """Which stated assumption a dense matmul above the spec shows wrong."""
    src = str(entry.get("source", ""))
    if "cpufreq maximum" in src:
        return (
            "the vector width or FMA units stated (the clock is cpufreq's maximum): the core "
            "executes more multiply-adds per cycle than its flags tell"
        )
    return (
        "the clock: the one read is no maximum (turbo may be higher), and the benchmark ran "
        "faster than it allows"
    )


def physical_kernels(
    entry: dict[str, Any], dtype: str, kernels: dict[str, float]
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the spec entry, the readings refused with why) for one dtype's compute benchmarks
    (kernel -> FLOP/s), so that no kept reading is above the spec and no spec is below a
    reading it cannot explain.

    A dense matmul's count is exact: one above the spec shows the spec wrong by its own
    assumptions, so the entry comes back with no spec values and a `source` naming the
    assumption. Any other reading above a spec that stands (a 3x3 convolution's direct count
    2NKHWCr^2 is more than the multiply-adds of the Winograd or FFT algorithms a library may
    pick) is not physically possible and is refused."""
    spec = (entry.get("flops") or {}).get(dtype)
    if not spec:
        return entry, {}
    exact = kernels.get(EXACT_KERNEL)
    if exact and exact > spec:
        return {
            **entry,
            "flops": {},
            "source": (
                f"spec unknown: the measured {dtype} {EXACT_KERNEL} rate {exact:.4g} FLOP/s "
                f"exceeds the {spec:.4g} FLOP/s the CPU flags and clock give ("
                f"{entry['source']}); the assumption shown wrong is {_clock_rule(entry)}"
            ),
        }, {}
    refused = {
        k: (
            f"{k} {dtype} reading {v:.4g} FLOP/s refused: above the CPU spec {spec:.4g} "
            f"FLOP/s, which the dense {EXACT_KERNEL} does not exceed; its counted FLOPs are "
            "more than the multiply-adds its algorithm executed (Winograd or FFT)"
        )
        for k, v in sorted(kernels.items())
        if k != EXACT_KERNEL and v and v > spec
    }
    return entry, refused


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
