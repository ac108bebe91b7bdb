"""Whether a record's sidecar files are there and whole.

A record can be valid while the files it points to are not: a trace cut short by a full disk
or a partial copy loads as "ok" and only fails later, in the report. `perfsuite validate` says
so up front.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Mapping
from typing import Any

from perfsuite.record.checks import resolve_sidecar

CHUNK = 1 << 20


def sidecar_problems(record: Mapping[str, Any]) -> list[str]:
    """One short line per sidecar that is missing, unreadable, or (gzip) truncated or corrupt;
    empty when every named sidecar reads to its end."""
    base = record.get("_dir")
    if not base:
        return []
    out = []
    for key, rel in sorted((record.get("sidecars") or {}).items()):
        if not isinstance(rel, str):
            continue
        try:
            path = resolve_sidecar(base, rel)
        except ValueError as exc:
            out.append(f"sidecars.{key}: {exc}")
            continue
        if not path.is_file():
            out.append(f"sidecars.{key}: {rel} is missing")
            continue
        if not rel.endswith(".gz"):
            continue
        try:  # read to the end: gzip finds a cut stream only there (its CRC and length)
            with gzip.open(path, "rb") as fh:
                while fh.read(CHUNK):
                    pass
        except (OSError, EOFError, zlib.error) as exc:
            out.append(f"sidecars.{key}: {rel} is truncated or corrupt ({exc})")
    return out
