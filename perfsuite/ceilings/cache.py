"""The measured-peaks cache: one JSON file so that a run does not re-measure every time.

Layout: {"version": 1, "devices": {"<host>|<device name>": {"host", "device_name",
"user": {key: value, "set_at"}, "measured": {"torch <v>|threads <n>" (CPU) or "torch <v>|gpu":
{"flops": {dtype: {...}}, "kernels": {dtype: {"matmul": {...}, "conv": {...}}}, "bandwidth":
{...}}}}}}. `kernels` holds the best reading of each compute benchmark and `flops` the best of
those (the compute roof, naming its kernel). CPU measurements are keyed by torch version
and thread count because both change what a matrix product reaches; GPU ones by torch version
only; user-set values describe the device itself and are not keyed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfsuite.cachefiles import cache_dir, load_cache_json
from perfsuite.record import write_json_atomic

CACHE_VERSION = 1


def cache_path() -> Path:
    """`$PERFSUITE_CACHE_DIR/peaks.json`, else `~/.cache/perfsuite/peaks.json`."""
    return cache_dir() / "peaks.json"


def load_cache(path: Path | None = None) -> dict[str, Any]:
    """The cache contents; a missing or unreadable file is an empty cache (it is only a cache)."""
    data = load_cache_json(path or cache_path(), CACHE_VERSION, "devices", 16 * 1024 * 1024)
    if not all(isinstance(e.get("user", {}), dict) for e in data["devices"].values()):
        return {"version": CACHE_VERSION, "devices": {}}  # misshapen: rebuilt, never half-trusted
    return data


def save_cache(data: dict[str, Any], path: Path | None = None) -> Path:
    return write_json_atomic(path or cache_path(), data)


def device_key(host: str, device_name: str) -> str:
    return f"{host}|{device_name}"


def device_entry(data: dict[str, Any], host: str, device_name: str) -> dict[str, Any]:
    """The cache entry of a device, created empty when absent."""
    key = device_key(host, device_name)
    entry = data["devices"].setdefault(key, {})
    entry.setdefault("host", host)
    entry.setdefault("device_name", device_name)
    entry.setdefault("user", {})
    entry.setdefault("measured", {})
    return entry


def measured_for(entry: dict[str, Any], env: str) -> dict[str, Any]:
    """The measurements under one software environment, created empty when absent."""
    m = entry["measured"].setdefault(env, {})
    m.setdefault("flops", {})
    m.setdefault("bandwidth", None)
    m.setdefault("kernels", {})
    return m
