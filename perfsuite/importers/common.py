"""Shared plumbing of the importers: one error type, lenient text/date reading, writing.

Importers turn other benchmarks' result files into run records. They never guess silently:
anything suspicious goes into the record's `flags` list (and the command's output).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsuite.safeio import InputError, read_bytes

MAX_RESULT_BYTES = 256 * 1024 * 1024  # a result log or entry; larger files are refused


class ImportFailure(InputError):
    """A result file that cannot be imported; the message is one line naming file and field."""


@dataclass
class Imported:
    """One imported run: its record, where it was written, and the figures worth printing."""

    record: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None


def decode_text(path: Path, raw: bytes) -> tuple[str, list[str]]:
    """Text without a UTF-8 BOM, CRLF/CR line endings made LF (Latin-1 when not UTF-8), and
    notes on those tolerated oddities (for the record's flags)."""
    notes = []
    if raw.startswith(b"\xef\xbb\xbf"):
        notes.append(f"{path.name}: UTF-8 byte-order mark ignored")
    if b"\r\n" in raw:
        notes.append(f"{path.name}: CRLF line endings")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
        notes.append(f"{path.name}: not UTF-8; read as Latin-1")
    return text.replace("\r\n", "\n").replace("\r", "\n"), notes


def read_text(path: Path) -> str:
    """File text as `decode_text` makes it."""
    return decode_text(path, read_bytes(path, MAX_RESULT_BYTES, ImportFailure))[0]


def had_bom_or_crlf(path: Path) -> list[str]:
    """Notes about byte-level oddities that were tolerated (for the record's flags)."""
    return decode_text(path, read_bytes(path, MAX_RESULT_BYTES, ImportFailure))[1]


_DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%m/%d/%Y",
    "%d.%m.%Y",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%SZ",
    "%B %d, %Y",
    "%b %d, %Y",
    "%d %B %Y",
)


def parse_date(value: Any) -> tuple[str | None, str | None]:
    """Leniently parse a date; returns (ISO date or datetime, note or None).

    Accepts missing zero padding ("2018-4-9"), slashes, ISO datetimes and a few spelled-out
    forms. The note says what was tolerated or why it failed; None when the input was clean.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, "timestamp missing"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # seconds (or milliseconds) since the epoch
        secs = float(value) / (1000.0 if value > 1e11 else 1.0)
        try:
            stamp = _dt.datetime.fromtimestamp(secs, _dt.timezone.utc)
        except (ValueError, OverflowError, OSError):
            return None, f"timestamp {value!r} out of range; left out"
        return stamp.isoformat(timespec="seconds"), "timestamp given as a number (epoch seconds)"
    text = str(value).strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return _dt.date.fromisoformat(text).isoformat(), None
        except ValueError:
            return None, f"timestamp {text!r} is not a valid date; left out"
    # pad single-digit fields so that "2018-4-9" parses
    padded = re.sub(r"(?<!\d)(\d)(?!\d)", r"0\1", text)
    for fmt in _DATE_FORMATS:
        for candidate in (text, padded):
            try:
                parsed = _dt.datetime.strptime(candidate, fmt)
            except ValueError:
                continue
            iso = parsed.isoformat() if "%H" in fmt else parsed.date().isoformat()
            return iso, f"timestamp {text!r} is not YYYY-MM-DD; read as {iso}"
    return None, f"timestamp {text!r} not understood; left out"


# Longest id fragment (`slug`) and run id (`bounded`) an import makes: a run id names a
# folder, and file systems refuse names over 255 bytes.
MAX_SLUG = 64
MAX_RUN_ID = 200


def bounded(text: str, limit: int = MAX_RUN_ID) -> str:
    """`text` as is when it has at most `limit` characters, else its head and the first 8 hex
    digits of its SHA-256: short enough for a folder name, and still unique."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 9]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def slug(text: str) -> str:
    """A folder-safe id fragment: letters, digits, `._-` only, at most MAX_SLUG characters."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")
    return bounded(out, MAX_SLUG) or "entry"


def find_files(paths: Iterable[str | Path], patterns: tuple[str, ...]) -> Iterator[Path]:
    """Files given as is; folders searched recursively for `patterns` (sorted, deduplicated).

    A folder without any match is an error: a typo in a path must not import nothing quietly.
    """
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            yield p
        elif p.is_dir():
            found = sorted({q for pat in patterns for q in p.rglob(pat) if q.is_file()})
            if not found:
                raise ImportFailure(f"{p}: no {' or '.join(patterns)} files in this folder")
            yield from found
        else:
            raise ImportFailure(f"{p}: no such file or folder")
