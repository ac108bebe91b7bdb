"""The measured-peaks cache: one JSON file so that a run does not re-measure every time.

Layout: {"version": 1, "devices": {"<host>|<device name>": {"host", "device_name",
"user": {key: value, "set_at"}, "measured": {"torch <v>|threads <n>": {"flops": {dtype:
{...}}, "bandwidth": {...}}}}}}. Measurements are keyed by torch version and thread count
because both change what a matrix product reaches; user-set values describe the device
itself and are not.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfsuite.record import write_json_atomic
from perfsuite.safeio import InputError, load_json

CACHE_VERSION = 1


def cache_path() -> Path:
    """`$PERFSUITE_CACHE_DIR/peaks.json`, else `~/.cache/perfsuite/peaks.json`."""
    base = os.environ.get("PERFSUITE_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "perfsuite"
    return root / "peaks.json"


def load_cache(path: Path | None = None) -> dict[str, Any]:
    """The cache contents; a missing or unreadable file is an empty cache (it is only a cache)."""
    path = path or cache_path()
    empty = {"version": CACHE_VERSION, "devices": {}}
    if not path.exists():
        return empty
    try:
        data = load_json(path, InputError, max_bytes=16 * 1024 * 1024, max_depth=16)
    except InputError:
        return empty
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return empty
    devices = data.setdefault("devices", {})
    if not isinstance(devices, dict) or not all(
        isinstance(e, dict) and isinstance(e.get("user", {}), dict) for e in devices.values()
    ):
        return empty  # misshapen: rebuilt by the next measurement, never half-trusted
    return data


def save_cache(data: dict[str, Any], path: Path | None = None) -> Path:
    return write_json_atomic(path or cache_path(), data)


def device_key(host: str, device_name: str) -> str:
    return f"{host}|{device_name}"


def env_key(torch_version: str | None, threads: int | None) -> str:
    return f"torch {torch_version or 'none'}|threads {threads if threads else 'n/a'}"


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
    return m
