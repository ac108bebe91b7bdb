"""Resolve the ceilings of a device: cached measurement, fresh measurement, user value, spec.

This is what the runner calls (`ceilings_for`) and what `perfsuite peaks` drives.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import math
import re
import socket
from typing import Any

from perfsuite.ceilings import cache as _cache
from perfsuite.ceilings import measure as _measure
from perfsuite.ceilings import roofs as _roofs_mod
from perfsuite.ceilings.table import match_spec, normalize_dtype, spec_bandwidth, spec_flops
from perfsuite.hostinfo import cpu_model
from perfsuite.record import quantity

USER_SOURCE = "user-set (perfsuite peaks --set)"
BANDWIDTH_KEYS = ("bandwidth", "memory_bandwidth")


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


def _stored(m: _measure.Measurement, torch_version: str | None, threads: int | None) -> dict:
    return {
        "value": m.value,
        "mode": m.mode,
        "measured_at": _now(),
        "detail": m.describe(),
        "torch": torch_version,
        "threads": threads,
    }


def _measured_source(item: dict[str, Any]) -> str:
    return (
        f"{item.get('detail', 'measured')}; torch {item.get('torch')}, "
        f"threads {item.get('threads')}, {item.get('measured_at', '')}"
    )


def _needs(item: dict[str, Any] | None, mode: str, refresh: bool) -> bool:
    if refresh or item is None:
        return True
    return mode == "thorough" and item.get("mode") != "thorough"


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

    `progress` is an optional callable(str) told what is being measured.
    """
    device = normalize_device(device)
    name = device_name(device)
    host = socket.gethostname()
    tv, threads = _env()
    data = _cache.load_cache()
    entry = _cache.device_entry(data, host, name)
    meas = _cache.measured_for(entry, _cache.env_key(tv, threads))
    if dtypes is None:
        dtypes = list(_measure.measurable_dtypes(device))
    wanted = [normalize_dtype(d) for d in dtypes]
    changed = False
    for dt in wanted:
        if dt not in _measure.measurable_dtypes(device):
            continue
        if _needs(meas["flops"].get(dt), mode, refresh):
            if progress:
                progress(f"matmul {dt}")
            meas["flops"][dt] = _stored(_measure.measure_matmul(device, dt, mode), tv, threads)
            changed = True
    if bandwidth and _needs(meas["bandwidth"], mode, refresh):
        if progress:
            progress("copy bandwidth")
        meas["bandwidth"] = _stored(_measure.measure_bandwidth(device, mode), tv, threads)
        changed = True
    if changed:
        _cache.save_cache(data)
    return {
        "device": device,
        "device_name": name,
        "host": host,
        "env": _cache.env_key(tv, threads),
        "measured": meas,
        "user": entry["user"],
    }


def parse_setting(text: str) -> tuple[str, float]:
    """'float32=1.2e12' -> ('float32', 1.2e12); 'bandwidth=4e10' -> ('bandwidth', 4e10)."""
    key, sep, raw = text.partition("=")
    key = key.strip().lower()
    if not sep or not key:
        raise ValueError(f"--set {text!r}: expected KEY=VALUE, e.g. float32=1.2e12")
    key = "bandwidth" if key in BANDWIDTH_KEYS else normalize_dtype(key)
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"--set {text!r}: value {raw!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"--set {text!r}: value must be a positive finite number")
    return key, value


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
    flops = {k: v for k, v in user.items() if k not in ("bandwidth", "set_at")}
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
    device: str, dtype: str, *, measure: bool = True, quick: bool = True
) -> dict[str, Any]:
    """The record's `ceilings` section for `device` ("cpu" | "cuda[:i]") and `dtype`.

    Peak FLOP/s and bandwidth come from, in order: a cached measurement for this host,
    device, torch version and thread count; a fresh measurement (when `measure`); a
    user-set value; the spec table. `spec` is the table entry (GPUs) or the user values.
    """
    device = normalize_device(device)
    dtype = normalize_dtype(dtype)
    name = device_name(device)
    host = socket.gethostname()
    tv, threads = _env()
    mode = "quick" if quick else "thorough"
    wanted = [d for d in _roof_dtypes(device, dtype) if d in _measure.measurable_dtypes(device)]
    if measure and wanted:
        measured = measure_device(device, wanted, mode=mode)["measured"]
    else:
        data = _cache.load_cache()
        measured = _cache.measured_for(
            _cache.device_entry(data, host, name), _cache.env_key(tv, threads)
        )
    user = _cache.device_entry(_cache.load_cache(), host, name)["user"]
    table = match_spec(name) if device.startswith("cuda") else None
    spec = _public_spec(table) or user_spec(name, user)

    def pick(item: dict | None, user_v: float | None, spec_v: float | None, unit: str) -> dict:
        if item and item.get("value"):
            return quantity(item["value"], unit, "measured", _measured_source(item))
        if user_v:
            return quantity(user_v, unit, "spec", f"{USER_SOURCE} for {name}")
        if spec_v:
            return quantity(spec_v, unit, "spec", f"{table['source']} ({table['id']})")
        return quantity(None, unit, "measured", "not measured and no spec value")

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
        "roofs": _roofs(measured, user, name, table),
    }


def _roof_dtypes(device: str, dtype: str) -> list[str]:
    """What a run in `dtype` may compute in: fp32 runs on CUDA also use TF32 (cuDNN default)."""
    out = [dtype]
    if device.startswith("cuda") and dtype == "float32":
        out.append("tf32")
    return out


def _roofs(
    measured: dict[str, Any], user: dict[str, Any], name: str, table: dict[str, Any] | None
) -> dict[str, Any]:
    """`ceilings.roofs`: per math, the cached measurement, else a user value, else the spec."""
    meas: dict[str, Any] = {}
    for dt, item in (measured.get("flops") or {}).items():
        math = _roofs_mod.DTYPE_MATH.get(dt)
        if math and item and item.get("value"):
            meas[math] = _roofs_mod.roof(item["value"], "measured", _measured_source(item))
    bw = measured.get("bandwidth") or {}
    if bw.get("value"):
        meas["memory"] = _roofs_mod.bandwidth_roof(bw["value"], "measured", _measured_source(bw))
    spec_user = _roofs_mod.spec_roofs(user_spec(name, user))
    for r in spec_user.values():
        for q in r.values():
            q["source"] = f"{USER_SOURCE} for {name}"
    return _roofs_mod.merge_roofs(meas, spec_user, _roofs_mod.spec_roofs(_public_spec(table)))
