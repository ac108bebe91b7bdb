"""Bounded reading of untrusted input files: regular files only, a size and nesting limit, and
text that must really be UTF-8.

Every reader of a file someone else wrote (records, caches, price tables, traces) goes through
here so that a FIFO cannot hang a command, a nested-array bomb cannot exhaust memory and a
gzip or UTF-16 file is named as such, all as one-line errors of the caller's error type.
Standard library only: the analysis side must not need anything else.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_JSON_DEPTH = 64
MAX_STRING_BYTES = 16 * 1024 * 1024

# A complete JSON string (escapes included), written as an unrolled loop so `re` stays linear.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Every byte value except the four brackets, for bytes.translate(None, delete=...).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class InputError(ValueError):
    """A file that cannot be used as input; the message is one line naming the file."""


def open_regular(path: str | os.PathLike[str], error: type[Exception] = InputError) -> BinaryIO:
    """Open `path` for binary reading only if it is a regular file.

    The file is opened non-blocking and checked with fstat on the open descriptor, so a FIFO
    (or a device) named like a record is refused at once instead of blocking forever, and a
    file swapped between a check and the open cannot slip through.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise error(f"{p}: file not found") from None
    except OSError as exc:
        raise error(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{p}: not a regular file ({_kind(mode)})")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def read_bytes(
    path: str | os.PathLike[str], max_bytes: int, error: type[Exception] = InputError
) -> bytes:
    """The whole file, refused when it is larger than `max_bytes` (the limit is in the message)."""
    with open_regular(path, error) as fh:
        try:
            raw = fh.read(max_bytes + 1)
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise error(f"{path}: larger than the {max_bytes:,}-byte limit for this kind of file")
    return raw


def decode_utf8(raw: bytes, path: str | os.PathLike[str], error: type[Exception]) -> str:
    """UTF-8 text (a UTF-8 byte-order mark is dropped); gzip, UTF-16/32 and binary data named."""
    if raw[:2] == b"\x1f\x8b":
        raise error(f"{path}: gzip-compressed, expected plain UTF-8 JSON text")
    if raw[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        raise error(f"{path}: UTF-32 text, expected UTF-8")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise error(f"{path}: UTF-16 text, expected UTF-8")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise error(f"{path}: binary data (NUL byte at offset {nul}), not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None


def _reduce(brackets: bytes, limit: int) -> tuple[bytes, int]:
    """Remove matched innermost `[]`/`{}` pairs level by level (at most limit + 1 passes).

    Returns the residue and the number of passes that removed something: the nesting depth
    of the balanced parts. Each pass is a C-speed replace, so this is linear per level.
    """
    passes = 0
    while brackets and passes <= limit:
        shorter = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(shorter) == len(brackets):
            break
        brackets = shorter
        passes += 1
    return brackets, passes


def json_depth_exceeds(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text nests arrays/objects deeper than `limit` (strings ignored).

    Meant to run before parsing: CPython's json recurses once per level and ijson keeps a
    prefix string per level, so a few hundred KB of `[[[[` costs gigabytes without it.
    """
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    residue, passes = _reduce(brackets, limit)
    return passes > limit or residue.count(b"[") + residue.count(b"{") + passes > limit


def load_json(
    path: str | os.PathLike[str],
    error: type[Exception] = InputError,
    max_bytes: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
) -> Any:
    """Parse a JSON file within the size and depth limits; every failure is one `error` line.

    Numbers too long to convert (Python's 4,300-digit limit) and NaN/Infinity are parsed as
    written (NaN stays a float); callers that need finite numbers check them with `nonfinite`.
    """
    raw = read_bytes(path, max_bytes, error)
    text = decode_utf8(raw, path, error)
    if json_depth_exceeds(raw, max_depth):
        raise error(f"{path}: JSON nested deeper than the {max_depth}-level limit")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise error(f"{path}: JSON nested deeper than the {max_depth}-level limit") from None
    except ValueError as exc:  # int too long to convert
        raise error(f"{path}: not usable JSON ({first_line(exc)})") from None


def first_line(exc: BaseException, width: int = 120) -> str:
    """The first line of an exception's message, cut to `width` characters."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= width else line[: width - 3] + "..."


HEAD_BYTES = 4096  # how much of a file tells text from binary data


def empty_detail(data: bytes) -> str | None:
    """ "empty file" (or "... (whitespace only)") when `data` holds nothing to read, else None."""
    if data.strip():
        return None
    return "empty file" + (" (whitespace only)" if data else "")


def binary_detail(head: bytes) -> str | None:
    """Why the first bytes of a file are binary data rather than text, or None for text.

    A NUL byte, or more than one byte in ten that is not UTF-8: the odd Latin-1 character in
    a program's output captured with the CSV is still text.
    """
    nul = head.find(b"\x00")
    if nul >= 0:
        return f"binary data, NUL byte at offset {nul}"
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") * 10 > len(text):
        return "binary data, mostly not UTF-8"
    return None


class DepthGuard:
    """A binary reader that checks nesting depth and string length of JSON as it streams by.

    Wraps the file given to ijson: every chunk is scanned (strings removed, brackets reduced)
    before the parser sees it, so a nested-array trace fails within one chunk instead of after
    gigabytes of prefix strings. Depth is bounded from above: the balanced part of a chunk
    counts its full depth on top of everything open before it, so a file is never let through
    deeper than `limit`; real traces nest about 6 levels against a limit of 64. Each chunk is
    first checked to be UTF-8 text, so binary data is named as such, not as deep nesting.
    """

    def __init__(
        self,
        raw: BinaryIO,
        path: str | os.PathLike[str],
        error: type[Exception],
        limit: int = MAX_JSON_DEPTH,
        max_string: int = MAX_STRING_BYTES,
        underlying: BinaryIO | None = None,
    ) -> None:
        self._raw = raw
        self._underlying = underlying  # the file under a decompressor, closed with it
        self._path = path
        self._error = error
        self._limit = limit
        self._max_string = max_string
        self._depth = 0
        self._in_string = False
        self._string_len = 0  # bytes of the string open at the end of the last chunk
        self._held = b""  # trailing backslashes, scanned with the next chunk
        self._offset = 0  # bytes read so far (of the decompressed stream)
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._utf8_open = False  # a multi-byte character cut by the last chunk boundary

    def read(self, n: int = -1) -> bytes:
        chunk = self._raw.read(n)
        self._check_text(chunk)  # before the bracket count: binary is no nesting to report
        self._scan(chunk)
        self._offset += len(chunk)
        return chunk

    def _check_text(self, chunk: bytes) -> None:
        """Refuse NUL bytes (never in JSON text) and invalid UTF-8 as they stream by.

        A character cut at end of file is left to the parser, which reports the JSON as
        incomplete. ASCII chunks, the common case, skip the decoder.
        """
        problems = []  # (offset, what): the first one is reported
        nul = chunk.find(b"\x00")
        if nul >= 0:
            problems.append((self._offset + nul, "NUL byte"))
        if self._utf8_open or not chunk.isascii():
            held = len(self._utf8.getstate()[0])
            try:
                self._utf8.decode(chunk)
            except UnicodeDecodeError as exc:
                problems.append((self._offset - held + exc.start, "invalid byte"))
            self._utf8_open = bool(self._utf8.getstate()[0])
        if problems:
            offset, what = min(problems)
            raise self._error(
                f"{self._path}: not a JSON text (binary or not UTF-8: {what} at offset {offset})"
            )

    def _scan(self, chunk: bytes) -> None:
        data = self._held + chunk
        self._held = b""
        if chunk:
            run = len(data) - len(data.rstrip(b"\\"))
            if run:  # an escape cut by the chunk boundary: decide it with the next chunk
                data, self._held = data[:-run], data[-run:]
        if b"\\" in data:  # escaped backslashes first, so that \\" still ends a string
            data = data.replace(b"\\\\", b"__").replace(b'\\"', b"__")
        parts = data.split(b'"')
        outside = parts[1::2] if self._in_string else parts[::2]
        if len(parts) % 2 == 0:
            self._in_string = not self._in_string
        if self._in_string:
            self._string_len = (self._string_len if len(parts) == 1 else 0) + len(parts[-1])
            if self._string_len > self._max_string:
                raise self._error(
                    f"{self._path}: a JSON string longer than the {self._max_string:,}-byte limit"
                )
        brackets = b"".join(outside).translate(None, _NOT_BRACKETS)
        residue, passes = _reduce(brackets, self._limit)
        opens = residue.count(b"[") + residue.count(b"{")
        if passes > self._limit or self._depth + opens + passes > self._limit:
            raise self._error(
                f"{self._path}: JSON nested deeper than the {self._limit}-level limit"
            )
        self._depth = max(0, self._depth + 2 * opens - len(residue))

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            if self._underlying is not None:
                self._underlying.close()

    def __enter__(self) -> DepthGuard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_FLOAT_MAX = 1.7976931348623157e308


def _all_finite(obj: Any) -> bool:
    """No NaN/Infinity (nor integer beyond float range) anywhere in `obj`: the common answer,
    found without building the field path of every value."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return False
        elif isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > _FLOAT_MAX:
                return False
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return True


def nonfinite_path(obj: Any, prefix: str = "") -> str | None:
    """The field path of the first NaN/Infinity (or integer beyond float range) in `obj`."""
    if _all_finite(obj):
        return None
    stack: list[tuple[str, Any]] = [(prefix, obj)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return where or "(top level)"
        elif isinstance(value, int) and not isinstance(value, bool):
            if abs(value) > _FLOAT_MAX:
                return where or "(top level)"
        elif isinstance(value, dict):
            for k, v in reversed(list(value.items())):
                stack.append((f"{where}.{k}" if where else str(k), v))
        elif isinstance(value, list):
            for i in range(len(value) - 1, -1, -1):
                stack.append((f"{where}[{i}]", value[i]))
    return None


@contextlib.contextmanager
def atomic_binary_writer(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file that replaces `path` only when the block ends without an exception,
    so readers see the old file or the whole new one. The temp file is made by mkstemp in
    the target's folder (unguessable, exclusive) and fsynced before the rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
