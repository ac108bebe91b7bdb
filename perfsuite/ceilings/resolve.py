"""Resolve the ceilings of a device: cached measurement, fresh measurement, user value, spec.

This is what the runner calls (`ceilings_for`) and what `perfsuite peaks` drives.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import math
import re
import socket
import sys
import time
from typing import Any

from perfsuite.ceilings import cache as _cache
from perfsuite.ceilings import load as _load
from perfsuite.ceilings import measure as _measure
from perfsuite.ceilings.cpuspec import physical_kernels, this_cpu_spec
from perfsuite.devices import roofs as _roofs_mod
from perfsuite.devices.specs import (
    DTYPES,
    match_spec,
    normalize_dtype,
    spec_bandwidth,
    spec_flops,
)
from perfsuite.hostinfo import cpu_model
from perfsuite.record import quantity

USER_SOURCE = "user-set (perfsuite peaks --set)"
BANDWIDTH_KEYS = ("bandwidth", "memory_bandwidth")
# what `perfsuite peaks --set` may name: a dtype's FLOP/s, or the memory bandwidth in byte/s
SETTABLE = (*DTYPES, "bandwidth")
PLAUSIBLE_MIN = 1e6  # FLOP/s or byte/s: below it a value is a unit slip, warned about


def normalize_device(device: str) -> str:
    """'cpu' | 'cuda' | 'cuda:1' (cuda means cuda:0)."""
    d = (device or "cpu").strip().lower()
    if d == "cuda":
        return "cuda:0"
    if d == "cpu" or re.fullmatch(r"cuda:\d+", d):
        return d
    raise ValueError(f"unknown device {device!r}; expected cpu, cuda or cuda:N")


def device_name(device: str) -> str:
    """Human name: the CPU model, or the GPU name torch reports."""
    device = normalize_device(device)
    if device == "cpu":
        return cpu_model() or "cpu"
    import torch

    return torch.cuda.get_device_name(int(device.split(":")[1]))


def device_spec(device: str, name: str) -> dict[str, Any] | None:
    """The spec-table entry of a GPU (None for CPUs): its compute-unit count tells apart parts
    that share one name ("AMD Instinct MI250X/MI250")."""
    if not normalize_device(device).startswith("cuda"):
        return None
    return match_spec(name, _compute_units(device))


def _compute_units(device: str) -> int | None:
    """torch's multi_processor_count (SMs on NVIDIA, CUs on AMD), or None when unknown."""
    try:
        import torch

        props = torch.cuda.get_device_properties(int(normalize_device(device).split(":")[1]))
        return int(props.multi_processor_count)
    except Exception:  # no torch, no device, an old build: the name alone decides
        return None


def _env() -> tuple[str | None, int | None]:
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None, None
    try:
        import torch

        return version, torch.get_num_threads()
    except ImportError:
        return version, None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _stored(
    m: _measure.Measurement,
    torch_version: str | None,
    threads: int | None,
    state: dict[str, Any] | None,
) -> dict:
    """A cache item: the value, how it was measured and (CPU) the machine's state then."""
    return {
        "value": m.value,
        "mode": m.mode,
        "measured_at": _now(),
        "detail": m.describe(),
        "size": m.size,
        "kernel": m.kind,
        **({"shape": list(m.shape)} if m.shape else {}),
        "torch": torch_version,
        "threads": threads,
        **(state or {}),
    }


def _is_cpu(device: str) -> bool:
    return not device.startswith("cuda")


def _measured_source(item: dict[str, Any], cpu: bool) -> str:
    load = f", {_load.load_text(item)}" if cpu else ""
    tries = int(item.get("tries", 1))
    best = f"; the best of {tries} measurements kept" if tries > 1 else ""
    others = "".join(
        f"; {k} {v / 1e9:.4g} GFLOP/s" for k, v in (item.get("other_kernels") or {}).items()
    )
    refused = "".join(f"; {why}" for why in item.get("refused_kernels") or [])
    return (
        f"{item.get('detail', 'measured')}; torch {item.get('torch')}, "
        f"threads {item.get('threads')}{load}, {item.get('measured_at', '')}{best}{others}"
        f"{refused}"
    )


_UNDER_KEYS = (
    "threads", "size", "mode", "load_before", "load_after", "cpus", "busy_limit", "busy",
    "kernel", "shape", "tries",
)  # fmt: skip


def _measured_under(item: dict[str, Any], cpu: bool) -> dict[str, Any]:
    """`measured_under` of a record quantity: what the analyzers need to doubt a peak."""
    out = {k: item[k] for k in _UNDER_KEYS if k in item}
    if cpu:
        out.setdefault("busy", None)  # an old cache item: load at measurement not recorded
    out["cached"] = bool(item.get("cached", True))
    return out


def _needs(item: dict[str, Any] | None, mode: str, refresh: bool, cpu: bool) -> bool:
    if refresh or item is None:
        return True
    if item.get("refused"):
        return False  # above the spec by its algorithm's count, not by load: no retry helps
    if cpu and ("load_before" not in item or item.get("busy")):
        return True  # load unrecorded, or the best so far taken busy: it may improve
    return mode == "thorough" and item.get("mode") != "thorough"


def kept_best(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The cache item after a new measurement: the higher value of the two (interference
    only ever slows a benchmark, so a busy reading may still raise the best, and never lowers
    it), counting the measurements and keeping the latest one's value and load."""
    latest = {k: new.get(k) for k in ("value", "measured_at", "busy")}
    if old is None or not old.get("value") or old.get("refused"):
        kept = dict(new)
    else:
        quieter = bool(old.get("busy")) and new.get("busy") is False  # as fast, not doubted
        higher = new["value"] > old["value"] or (quieter and new["value"] >= old["value"])
        kept = dict(new if higher else old)
    kept["tries"] = int((old or {}).get("tries", 1 if old else 0)) + 1
    kept["latest"] = latest
    return kept


def _kernel_items(meas: dict[str, Any], dtype: str) -> dict[str, Any]:
    """The best item per compute benchmark of `dtype`; an older cache's single item is a
    matmul's."""
    kernels = meas.setdefault("kernels", {}).setdefault(dtype, {})
    old = meas["flops"].get(dtype)
    if not kernels and old:
        kernels[old.get("kernel", "matmul")] = old
    return kernels


def _roof_item(kernels: dict[str, Any]) -> dict[str, Any] | None:
    """The compute roof: the best of the benchmarks, naming it and the others' values."""
    usable = {k: v for k, v in kernels.items() if v and v.get("value") and not v.get("refused")}
    if not usable:
        return None
    top = max(usable, key=lambda k: usable[k]["value"])
    roof = {**usable[top], "kernel": top}
    roof["other_kernels"] = {k: v["value"] for k, v in usable.items() if k != top}
    refused = [v["refused"] for v in kernels.values() if v and v.get("refused")]
    if refused:
        roof["refused_kernels"] = refused
    return roof


def _set_roofs(meas: dict[str, Any], dtypes: list[str], cpu_spec: dict[str, Any] | None) -> None:
    """Each dtype's compute roof in `meas["flops"]` from its benchmarks, after a CPU's
    readings are judged against its spec (`judge_kernels`)."""
    if cpu_spec is not None:
        judge_kernels(cpu_spec, meas["kernels"])
    for dt in dtypes:
        roof = _roof_item(meas["kernels"].get(dt) or {})
        if roof is not None:
            meas["flops"][dt] = roof


def judge_kernels(table: dict[str, Any], kernels: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The CPU spec entry after the compute readings (dtype -> kernel -> cache item) are
    judged against it (`cpuspec.physical_kernels`): a matmul above it leaves a spec with no
    values naming the assumption shown wrong; any other reading above a standing spec is
    marked `refused` in place, so it is never a roof."""
    values = {
        dt: {k: float(v["value"]) for k, v in ks.items() if v and v.get("value")}
        for dt, ks in kernels.items()
    }
    for dt, vs in values.items():
        table = physical_kernels(table, dt, vs)[0]
    for dt, vs in values.items():
        for k, why in physical_kernels(table, dt, vs)[1].items():
            kernels[dt][k]["refused"] = why
    return table


class _Session:
    """One measurement session: the load before its first benchmark, its start time."""

    def __init__(self, device: str, threads: int | None) -> None:
        self.cpu = _is_cpu(device)
        self.threads = threads
        self.t0 = time.monotonic()
        self.before = _load.read_load() if self.cpu else None
        self.cpus = _load.machine_cpus()

    def state(self) -> dict[str, Any] | None:
        if not self.cpu:
            return None
        after = _load.read_load()
        return _load.judge(self.before, after, self.cpus, self.threads, time.monotonic() - self.t0)


def _warn(message: str) -> None:
    print(f"perfsuite: {message}", file=sys.stderr, flush=True)


def measure_device(
    device: str,
    dtypes: list[str] | None = None,
    *,
    mode: str = "quick",
    refresh: bool = False,
    bandwidth: bool = True,
    progress: Any = None,
) -> dict[str, Any]:
    """Measure (what is missing, or everything with refresh) and store it; the cache entry.

    Each dtype's compute roof is the best of its benchmarks (`measure.flop_kernels`: matmul,
    and on CPUs convolutions), each kept as the best seen for this host, device, torch
    version and thread count (`kept_best`): a reading on a busy machine (perfsuite.ceilings.
    load) is stored when it beats the best, with its load, and warned about on stderr; it
    never lowers a better one. CPU items whose best was taken busy, or before loads were
    recorded, are measured again. `progress` is an optional callable(str) told what is
    being measured.
    """
    device = normalize_device(device)
    name = device_name(device)
    host = socket.gethostname()
    tv, threads = _env()
    data = _cache.load_cache()
    entry = _cache.device_entry(data, host, name)
    meas = _cache.measured_for(
        entry, _roofs_mod.env_key(tv, threads, gpu=device.startswith("cuda"))
    )
    if dtypes is None:
        dtypes = list(_measure.measurable_dtypes(device))
    wanted = [normalize_dtype(d) for d in dtypes]
    session = _Session(device, threads)
    warnings: list[str] = []
    changed = False

    def taken(what: str, old: dict[str, Any] | None, m: _measure.Measurement) -> dict:
        """The cache item after this reading (`kept_best`); a busy one is warned about."""
        reading = _stored(m, tv, threads, session.state())
        item = kept_best(old, reading)
        latest = item["latest"]
        if latest.get("busy"):
            kept = "a new best" if item["value"] == m.value else "below the best seen, kept"
            warnings.append(
                f"{what} on {name} measured on a busy machine, {_load.load_text(reading)}: "
                f"{m.value:.4g} {m.unit}, {kept}"
            )
            _warn(warnings[-1])
        return item

    for dt in wanted:
        if dt not in _measure.measurable_dtypes(device):
            continue
        kernels = _kernel_items(meas, dt)
        for kernel in _measure.flop_kernels(device, dt):
            if _needs(kernels.get(kernel), mode, refresh, session.cpu):
                if progress:
                    progress(f"{kernel} {dt}")
                m = _measure.measure_flops(device, dt, kernel, mode)
                kernels[kernel], changed = taken(f"{kernel} {dt}", kernels.get(kernel), m), True
    _set_roofs(meas, wanted, this_cpu_spec(name, threads) if session.cpu else None)
    if bandwidth and _needs(meas["bandwidth"], mode, refresh, session.cpu):
        if progress:
            progress("copy bandwidth")
        m = _measure.measure_bandwidth(device, mode)
        meas["bandwidth"], changed = taken("copy bandwidth", meas["bandwidth"], m), True
    if changed:
        _cache.save_cache(data)
    return {
        "device": device,
        "device_name": name,
        "host": host,
        "env": _roofs_mod.env_key(tv, threads, gpu=device.startswith("cuda")),
        "measured": {**meas, "flops": dict(meas["flops"])},  # flops, bandwidth, kernels
        "user": entry["user"],
        "warnings": warnings,
    }


def parse_setting(text: str) -> tuple[str, float]:
    """'float32=1.2e12' -> ('float32', 1.2e12); 'bandwidth=4e10' -> ('bandwidth', 4e10)."""
    key, sep, raw = text.partition("=")
    key = key.strip().lower()
    if not sep or not key:
        raise ValueError(f"--set {text!r}: expected KEY=VALUE, e.g. float32=1.2e12")
    key = "bandwidth" if key in BANDWIDTH_KEYS else normalize_dtype(key)
    if key not in SETTABLE:
        raise ValueError(
            f"--set {text!r}: unknown key {key!r}; expected one of {', '.join(SETTABLE)}"
        )
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"--set {text!r}: value {raw!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"--set {text!r}: value must be a positive finite number")
    return key, value


def implausible_setting(key: str, value: float) -> str | None:
    """A warning (not a refusal) for a value no device has: below 1e6 FLOP/s or byte/s is
    almost surely TFLOP/s or GB/s written without the exponent."""
    if value >= PLAUSIBLE_MIN:
        return None
    unit, big, scale = (
        ("byte/s", "GB/s", 1e9) if key == "bandwidth" else ("FLOP/s", "TFLOP/s", 1e12)
    )
    return (
        f"--set {key}={value:g}: {value:g} {unit} is implausibly small (the unit is {unit}, "
        f"not {big}); did you mean {f'{value * scale:.4g}'.replace('e+', 'e')}?"
    )


def set_user_values(device: str, settings: dict[str, float]) -> dict[str, Any]:
    """Store user-named peaks (FLOP/s per dtype, 'bandwidth' in byte/s); the user section."""
    device = normalize_device(device)
    name = device_name(device)
    data = _cache.load_cache()
    entry = _cache.device_entry(data, socket.gethostname(), name)
    entry["user"].update(settings)
    entry["user"]["set_at"] = _now()
    _cache.save_cache(data)
    return entry["user"]


def user_spec(name: str, user: dict[str, Any]) -> dict[str, Any] | None:
    """User values shaped like a spec-table entry (so the report shows them as 'spec')."""
    flops = {k: v for k, v in user.items() if k in DTYPES}  # older caches may hold junk keys
    if not flops and "bandwidth" not in user:
        return None
    return {
        "id": "user",
        "name": name,
        "flops": flops,
        "memory_bandwidth": user.get("bandwidth"),
        "l2_bandwidth": None,
        "max_sm_clock_hz": None,
        "source": USER_SOURCE,
        "set_at": user.get("set_at"),
    }


def _public_spec(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if entry is None else {k: v for k, v in entry.items() if k != "match"}


def ceilings_for(
    device: str,
    dtype: str,
    *,
    measure: bool = True,
    quick: bool = True,
    also: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The record's `ceilings` section for `device` ("cpu" | "cuda[:i]") and `dtype`.

    Peak FLOP/s and bandwidth come from, in order: the best measurement seen for this host,
    device, torch version and thread count (the run's: a 1-thread run never takes a 2-thread
    peak), measured now when missing or taken busy (when `measure`; `measure_device`); a
    user-set value; the spec. `spec` is the table entry (GPUs), else the user values, else
    (CPUs) FMA width x clock x cores from the CPU flags (cpuspec.py; it says when unknown).
    Measured quantities carry `measured_under` (kernel, threads, size, CPU load).
    `also`: more dtypes the run computes in (its autocast dtype), measured with `dtype`.
    """
    device = normalize_device(device)
    dtype = normalize_dtype(dtype)
    name = device_name(device)
    host = socket.gethostname()
    tv, threads = _env()
    mode = "quick" if quick else "thorough"
    extra = [normalize_dtype(d) for d in also]
    wanted = [
        d
        for d in dict.fromkeys(_roof_dtypes(device, dtype) + extra)
        if d in _measure.measurable_dtypes(device)
    ]
    if measure and wanted:
        measured = measure_device(device, wanted, mode=mode)["measured"]
    else:
        data = _cache.load_cache()
        measured = _cache.measured_for(
            _cache.device_entry(data, host, name),
            _roofs_mod.env_key(tv, threads, gpu=device.startswith("cuda")),
        )
    user = _cache.device_entry(_cache.load_cache(), host, name)["user"]
    cpu = _is_cpu(device)
    table = this_cpu_spec(name, threads) if cpu else device_spec(device, name)
    if cpu:  # an older cache's readings are judged as a new one's
        for dt in list(measured["flops"]):
            _kernel_items(measured, dt)
        table = judge_kernels(table, measured["kernels"])
        for dt, ks in measured["kernels"].items():
            roof = _roof_item(ks)
            if roof is not None:
                measured["flops"][dt] = roof
    mine = user_spec(name, user)  # a CPU's user values outrank what its flags suggest
    spec = (mine or _public_spec(table)) if cpu else (_public_spec(table) or mine)

    def pick(item: dict | None, user_v: float | None, spec_v: float | None, unit: str) -> dict:
        if _usable(item):
            return _measured_q(item, unit, cpu)  # type: ignore[arg-type]
        if user_v:
            return quantity(user_v, unit, "spec", f"{USER_SOURCE} for {name}")
        if spec_v:
            return quantity(spec_v, unit, "spec", f"{table['source']} ({table['id']})")
        why = "not asked to measure" if not measure else f"no micro-benchmark for {dtype} here"
        return quantity(None, unit, "absent", f"no cached measurement ({why}) and no spec value")

    return {
        "device": name,
        "dtype": dtype,
        "peak_flops": pick(
            measured["flops"].get(dtype), user.get(dtype), spec_flops(table, dtype), "FLOP/s"
        ),
        "memory_bandwidth": pick(
            measured.get("bandwidth"), user.get("bandwidth"), spec_bandwidth(table), "byte/s"
        ),
        "spec": spec,
        "roofs": _roofs(measured, user, name, table, cpu),
    }


def _usable(item: dict[str, Any] | None) -> bool:
    """A measured item with a value: a busy reading is never stored (`measure_device`), so it
    is either a quiet cached one, one of unknown load (said in its source), or this call's."""
    return bool(item and item.get("value"))


def _measured_q(item: dict[str, Any], unit: str, cpu: bool) -> dict[str, Any]:
    q = quantity(item["value"], unit, "measured", _measured_source(item, cpu))
    q["measured_under"] = _measured_under(item, cpu)
    return q


def _roof_dtypes(device: str, dtype: str) -> list[str]:
    """What a run in `dtype` may compute in: fp32 runs on CUDA also use TF32 (cuDNN default)."""
    out = [dtype]
    if device.startswith("cuda") and dtype == "float32":
        out.append("tf32")
    return out


def _roofs(
    measured: dict[str, Any],
    user: dict[str, Any],
    name: str,
    table: dict[str, Any] | None,
    cpu: bool,
) -> dict[str, Any]:
    """`ceilings.roofs`: per math, the cached measurement, else a user value, else the spec."""
    meas: dict[str, Any] = {}
    for dt, item in (measured.get("flops") or {}).items():
        math = _roofs_mod.DTYPE_MATH.get(dt)
        if math and _usable(item):
            meas[math] = {"peak_flops": _measured_q(item, "FLOP/s", cpu)}
    bw = measured.get("bandwidth")
    if _usable(bw):
        meas["memory"] = {"bandwidth": _measured_q(bw, "byte/s", cpu)}
    spec_user = _roofs_mod.spec_roofs(user_spec(name, user))
    for r in spec_user.values():
        for q in r.values():
            q["source"] = f"{USER_SOURCE} for {name}"
    return _roofs_mod.merge_roofs(meas, spec_user, _roofs_mod.spec_roofs(_public_spec(table)))
