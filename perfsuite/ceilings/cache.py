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


def env_key(torch_version: str | None, threads: int | None, gpu: bool = False) -> str:
    """The on-disk key of a measurement's software environment. CPU peaks depend on the thread
    count; GPU peaks do not (the host threads only launch kernels), so GPU keys leave it out:
    "torch <v>|gpu". GPU entries keyed with a thread count (an older key form) are not read
    (each is measured again). The "|" form must stay, or older CPU caches would not be found."""
    if gpu:
        return f"torch {torch_version or 'none'}|gpu"
    return f"torch {torch_version or 'none'}|threads {threads if threads else 'n/a'}"


def env_text(key: str) -> str:
    """An `env_key` as users read it: "torch 2.13.0+cpu|threads 2" -> "torch 2.13.0+cpu,
    2 threads". Anything not in the key's form is returned unchanged."""
    torch_part, sep, threads_part = key.partition("|")
    if sep and threads_part == "gpu":
        return f"{torch_part}, GPU (any thread count)"
    if not sep or not threads_part.startswith("threads "):
        return key
    n = threads_part.removeprefix("threads ")
    threads = "1 thread" if n == "1" else f"{n} threads" if n.isdigit() else "threads n/a"
    return f"{torch_part}, {threads}"


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
