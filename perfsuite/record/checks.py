"""Checks of a record that JSON Schema cannot express: finiteness, exact integer versions and
sidecar paths that stay inside the run folder.

Each returns (field, reason) for the first problem or None, so that the loader can say it in
its one-line form. Pure Python, no framework.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from perfsuite.safeio import nonfinite_path

Problem = tuple[str, str]


def schema_version_problem(record: Mapping[str, Any]) -> Problem | None:
    """`schema_version` must be a JSON integer: 1.0 or 2.0 pass JSON Schema's "integer"."""
    version = record.get("schema_version")
    if "schema_version" in record and type(version) is not int:
        return "schema_version", f"{version!r} is not an integer"
    return None


def finite_problem(record: Mapping[str, Any]) -> Problem | None:
    """NaN, Infinity (or 1e999) and integers beyond float range have no meaning in a record."""
    where = nonfinite_path(record)
    if where is None:
        return None
    return where, "not a finite number (NaN, Infinity or out of range)"


def sidecar_fields(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(field, value) of every path the analyzers may open relative to the run folder."""
    out: list[tuple[str, Any]] = []
    for section, key in (("timeline", "trace"), ("telemetry", "file")):
        part = record.get(section)
        value = part.get(key) if isinstance(part, dict) else None
        if value is not None:
            out.append((f"{section}.{key}", value))
    sidecars = record.get("sidecars")
    if isinstance(sidecars, dict):
        out += [(f"sidecars.{k}", v) for k, v in sidecars.items()]
    return out


def sidecar_path_problem(value: Any) -> str | None:
    """Why `value` is not a relative path inside the run folder, or None when it is."""
    if not isinstance(value, str) or not value:
        return "not a non-empty string"
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        return "contains control characters"
    posix, windows = PurePosixPath(value), PureWindowsPath(value)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or value.startswith("\\"):
        return f"{value!r} is absolute; sidecars must lie inside the run folder"
    if ".." in posix.parts or ".." in windows.parts:
        return f"{value!r} leaves the run folder ('..'); sidecars must lie inside it"
    return None


def sidecar_problem(record: Mapping[str, Any]) -> Problem | None:
    for where, value in sidecar_fields(record):
        why = sidecar_path_problem(value)
        if why:
            return where, why
    return None


def resolve_sidecar(run_dir: str | os.PathLike[str], rel: str) -> Path:
    """The sidecar's path under `run_dir`; ValueError if it (or a symlink on the way) leaves it.

    Load-time checks refuse `..` and absolute paths; this also catches a symlink inside the
    run folder that points outside it.
    """
    why = sidecar_path_problem(rel)
    if why:
        raise ValueError(why)
    base = Path(run_dir).resolve()
    target = (base / rel).resolve()
    if target != base and base not in target.parents:
        raise ValueError(f"{rel!r} resolves outside the run folder (a symlink?)")
    return target
