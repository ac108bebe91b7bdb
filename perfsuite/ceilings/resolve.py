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
from perfsuite.ceilings import roofs as _roofs_mod
from perfsuite.ceilings.table import (
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
        "torch": torch_version,
        "threads": threads,
        **(state or {}),
    }


def _is_cpu(device: str) -> bool:
    return not device.startswith("cuda")


def _measured_source(item: dict[str, Any], cpu: bool) -> str:
    load = f", {_load.load_text(item)}" if cpu else ""
    cached = "" if item.get("cached", True) else "; busy machine: this run only, not cached"
    return (
        f"{item.get('detail', 'measured')}; torch {item.get('torch')}, "
        f"threads {item.get('threads')}{load}, {item.get('measured_at', '')}{cached}"
    )


_UNDER_KEYS = ("threads", "size", "mode", "load_before", "load_after", "cpus", "busy_limit", "busy")


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
    if cpu and "load_before" not in item:
        return True  # cached before loads were recorded: measure again to know the load
    return mode == "thorough" and item.get("mode") != "thorough"


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

    A CPU reading taken on a busy machine (perfsuite.ceilings.load) is returned for this call,
    labeled `cached: False` with a warning on stderr, and never stored. CPU items cached
    before loads were recorded are measured again. `progress` is an optional callable(str)
    told what is being measured.
    """
    device = normalize_device(device)
    name = device_name(device)
    host = socket.gethostname()
    tv, threads = _env()
    data = _cache.load_cache()
    entry = _cache.device_entry(data, host, name)
    meas = _cache.measured_for(entry, _cache.env_key(tv, threads, gpu=device.startswith("cuda")))
    if dtypes is None:
        dtypes = list(_measure.measurable_dtypes(device))
    wanted = [normalize_dtype(d) for d in dtypes]
    session = _Session(device, threads)
    used = {"flops": dict(meas["flops"]), "bandwidth": meas["bandwidth"]}
    warnings: list[str] = []

    def taken(what: str, m: _measure.Measurement) -> dict[str, Any]:
        """The item for this call; on a busy CPU labeled `cached: False`, with a warning."""
        item = _stored(m, tv, threads, session.state())
        if item.get("busy"):
            item["cached"] = False
            warnings.append(
                f"{what} on {name} measured on a busy machine, {_load.load_text(item)}: "
                "used for this call only, not cached"
            )
            _warn(warnings[-1])
        return item

    for dt in wanted:
        if dt not in _measure.measurable_dtypes(device):
            continue
        if _needs(meas["flops"].get(dt), mode, refresh, session.cpu):
            if progress:
                progress(f"matmul {dt}")
            used["flops"][dt] = taken(f"peak {dt}", _measure.measure_matmul(device, dt, mode))
    if bandwidth and _needs(meas["bandwidth"], mode, refresh, session.cpu):
        if progress:
            progress("copy bandwidth")
        used["bandwidth"] = taken("copy bandwidth", _measure.measure_bandwidth(device, mode))
    # Store what this call measured on a quiet machine; a busy reading never replaces a value.
    changed = False
    for dt, item in used["flops"].items():
        if item is not meas["flops"].get(dt) and item.get("cached", True):
            meas["flops"][dt], changed = item, True
    bw = used["bandwidth"]
    if bw is not None and bw is not meas["bandwidth"] and bw.get("cached", True):
        meas["bandwidth"], changed = bw, True
    if changed:
        _cache.save_cache(data)
    return {
        "device": device,
        "device_name": name,
        "host": host,
        "env": _cache.env_key(tv, threads, gpu=device.startswith("cuda")),
        "measured": used,
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

    Peak FLOP/s and bandwidth come from, in order: a cached measurement for this host,
    device, torch version and thread count (the run's: a 1-thread run never takes a 2-thread
    peak); a fresh measurement (when `measure`; on a busy CPU used for this run only, labeled
    with the load); a user-set value; the spec table. `spec` is the table entry (GPUs) or the
    user values. Measured quantities carry `measured_under` (threads, size, CPU load).
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
            _cache.env_key(tv, threads, gpu=device.startswith("cuda")),
        )
    user = _cache.device_entry(_cache.load_cache(), host, name)["user"]
    table = device_spec(device, name)
    spec = _public_spec(table) or user_spec(name, user)
    cpu = _is_cpu(device)

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
