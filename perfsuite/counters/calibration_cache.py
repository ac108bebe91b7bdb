"""Where `perfsuite counters --calibrate` keeps its results, so later counters sections can say
that their Tensor-Core counters were calibrated on that chip (and when, with which ncu).

Layout of `$PERFSUITE_CACHE_DIR/counters-calibration.json` (else `~/.cache/perfsuite/...`):
{"version": 1, "chips": {"<device name>": {"device": {name, cc, chip}, "at", "tool", "size",
"ok", "precisions": {p: {"expected", "measured", "ok"}}}}}. Keyed by the device's marketing
name because that is what a capture and a run both report; the last calibration wins. A
missing, unreadable or misshapen file is an empty cache: it can only add a claim that was
checked, never invent one.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from perfsuite.cachefiles import cache_dir, load_cache_json
from perfsuite.record import write_json_atomic

VERSION = 1


def cache_path() -> Path:
    return cache_dir() / "counters-calibration.json"


def load(path: Path | None = None) -> dict[str, Any]:
    return load_cache_json(path or cache_path(), VERSION, "chips", 4 * 1024 * 1024)


def entry_for(device_name: str | None, path: Path | None = None) -> dict[str, Any] | None:
    """The last calibration of a chip with this name, or None."""
    if not device_name:
        return None
    return load(path)["chips"].get(device_name)


def save(result: Any, tool: str, path: Path | None = None) -> Path | None:
    """Keep a calibration result (a `calibrate.CalibrationResult`) for the chip it ran on;
    None (nothing kept) when the capture did not name its device."""
    name = result.device.get("name")
    if not name:
        return None
    data = load(path)
    data["chips"][name] = {
        "device": dict(result.device),
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "tool": tool,
        "size": [result.m, result.n, result.k],
        "ok": result.ok,
        "precisions": {
            c.precision: {"expected": c.expected_flops, "measured": c.measured_flops, "ok": c.ok}
            for c in result.checks
        },
    }
    return write_json_atomic(path or cache_path(), data)
