"""The one per-user cache folder (measured peaks, counter calibrations, decoded datasets) and
the one rule for reading a cache file: anything unreadable is an empty cache, never an error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfsuite.safeio import InputError, load_json


def cache_dir() -> Path:
    """`$PERFSUITE_CACHE_DIR` when set and not empty, else `~/.cache/perfsuite`."""
    base = os.environ.get("PERFSUITE_CACHE_DIR")
    return Path(base) if base else Path.home() / ".cache" / "perfsuite"


def load_cache_json(path: Path, version: int, section: str, max_bytes: int) -> dict[str, Any]:
    """The file's JSON object if it parses, has this `version` and a dict of dicts under
    `section`; else an empty cache of that shape (it is rebuilt by the next write, never
    half-trusted)."""
    empty: dict[str, Any] = {"version": version, section: {}}
    if not path.exists():
        return empty
    try:
        data = load_json(path, InputError, max_bytes=max_bytes, max_depth=16)
    except InputError:
        return empty
    if not isinstance(data, dict) or data.get("version") != version:
        return empty
    entries = data.setdefault(section, {})
    if not isinstance(entries, dict) or not all(isinstance(e, dict) for e in entries.values()):
        return empty
    return data
