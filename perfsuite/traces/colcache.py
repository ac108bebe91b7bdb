"""A cache of a trace's parsed columns beside the trace: `<trace>.perfsuite-columns`.

One file: a magic line, the length of a JSON header (8 bytes, little-endian), the header
(the key, the interners, counters and short lists as JSON) and the columns' raw bytes in
the header's order. No pickle: loading builds arrays and JSON values only. The key is the
trace's size and modification time (ns) and READER_FORMAT, which changes whenever what the
reader extracts changes; any mismatch, or a file that does not add up, is a miss.
"""

from __future__ import annotations

import json
import os
from array import array
from pathlib import Path
from typing import Any

from perfsuite.safeio import atomic_binary_writer

READER_FORMAT = 2
SUFFIX = ".perfsuite-columns"
_MAGIC = b"PERFSUITE-COLUMNS\n"
_TYPECODES = frozenset("bqld")


def cache_path(trace: Path) -> Path:
    return trace.with_name(trace.name + SUFFIX)


def key(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "format": READER_FORMAT}


def save(
    trace: Path, st: os.stat_result, header: dict[str, Any], columns: dict[str, array]
) -> None:
    """Write the cache atomically; OSError (a read-only folder) is the caller's to report."""
    header = dict(header, key=key(st))
    header["columns"] = [[name, col.typecode, len(col)] for name, col in columns.items()]
    text = json.dumps(header).encode()
    with atomic_binary_writer(cache_path(trace)) as fh:
        fh.write(_MAGIC)
        fh.write(len(text).to_bytes(8, "little"))
        fh.write(text)
        for col in columns.values():
            col.tofile(fh)


def load(trace: Path, st: os.stat_result) -> tuple[dict[str, Any], dict[str, array]] | None:
    """The header and columns when a cache with this trace's key exists, else None."""
    path = cache_path(trace)
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return None
            n = int.from_bytes(fh.read(8), "little")
            if n > os.fstat(fh.fileno()).st_size:
                return None
            header = json.loads(fh.read(n))
            if not isinstance(header, dict) or header.get("key") != key(st):
                return None
            columns: dict[str, array] = {}
            for name, code, length in header["columns"]:
                if code not in _TYPECODES or not isinstance(length, int) or length < 0:
                    return None
                col = array(code)
                col.fromfile(fh, length)
                columns[name] = col
            if fh.read(1):
                return None
    except (OSError, EOFError, ValueError, KeyError, TypeError):
        return None
    return header, columns
