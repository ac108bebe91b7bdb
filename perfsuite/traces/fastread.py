"""The trace reader's fast path: msgspec decodes only the fields the analysis reads.

The event list is cut into chunks of about CHUNK_BYTES at event boundaries (`}` `,` `{`
outside any string; a cut that falls inside a string or a nested value cannot decode, so a
chunk that decodes was cut right), and each chunk is decoded in C into Structs that declare
only the needed fields with strict types; unknown fields are skipped without building them.
Chunks are decoded by worker processes while this process reads (and decompresses) the
next ones, and come back as typed columns with chunk-local interners, merged in file order
so that every id equals the one a single sequential pass gives.

A chunk the strict types refuse (a string where a number belongs, args that are not an
object, a phase that is not a string or not one of the format's, a 19-digit integer, a
cuda_profiler_range event whose args are kept whole) is `None` here: the reader runs its
reference per-event code on that chunk. A file whose
layout this module does not recognise (a bare list, keys it cannot place, an event larger
than the buffer) is `None` as a whole: the reader takes the reference path for all of it.
"""

from __future__ import annotations

import collections
import functools
import gc
import gzip
import mmap
import multiprocessing
import operator
import os
import re
import threading
import zlib
from array import array
from collections.abc import Callable, Iterator
from itertools import compress
from typing import Any, BinaryIO

import numpy as np

from perfsuite.traces.kineto import (
    DEVICE_CATS,
    MAX_DUR_US,
    MAX_TS_US,
    MEMORY_NAME,
    MEMORY_PHASES,
    PROFILER_RANGE_CAT,
    RANGE_CATS,
    RUNTIME_CATS,
    SYNC_CAT,
)

# The field readers under the short names the event loops below use.
from perfsuite.traces.kineto import as_id as _int
from perfsuite.traces.kineto import frozen_shape as _freeze

try:
    import msgspec
except ImportError:  # the reference path reads every trace without it
    msgspec = None  # type: ignore[assignment]

try:  # ISA-L's inflate: the same bytes as zlib's for about a third of the CPU time
    from isal import igzip as _igzip
    from isal.igzip_lib import IsalError
except ImportError:
    _igzip = None  # type: ignore[assignment]
    IsalError = zlib.error  # type: ignore[assignment,misc]

# What a damaged gzip stream raises while it is read (either inflater).
DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, IsalError)

# A chunk's Structs and lists stay in the CPU's caches while the passes over them run: a
# 16 MB chunk (88,000 events) costs a fifth more CPU per event than four 4 MB ones.
CHUNK_BYTES = 4 * 1024 * 1024
# An event must end within this many bytes of the last cut, or the file is left to the
# reference path (which bounds string length and nesting itself).
MAX_PENDING_BYTES = 128 * 1024 * 1024
_HEAD = re.compile(rb'"traceEvents"\s*:\s*\[')
_SEP = re.compile(rb"\s*,\s*\{")
_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_BOM = b"\xef\xbb\xbf"
# yajl (ijson's C backend) refuses integers beyond int64: chunks with a 19-digit run are
# left to the reference code, which then reports what it reports for them.
_LONG_RUN = 19

# Column layout of one decoded chunk, shared with the reader's merge: (table, column, typecode).
COLUMNS = (
    ("device", "name", "l"),
    ("device", "cat", "b"),
    ("device", "device", "l"),
    ("device", "stream", "l"),
    ("device", "ts", "d"),
    ("device", "dur", "d"),
    ("device", "corr", "q"),
    ("runtime", "name", "l"),
    ("runtime", "thread", "l"),
    ("runtime", "ts", "d"),
    ("runtime", "dur", "d"),
    ("runtime", "corr", "q"),
    ("ranges", "name", "l"),
    ("ranges", "kind", "b"),
    ("ranges", "thread", "l"),
    ("ranges", "ts", "d"),
    ("ranges", "dur", "d"),
    ("ranges", "shape", "l"),
    ("memory", "ts", "d"),
    ("memory", "bytes", "q"),
    ("memory", "total_allocated", "q"),
    ("memory", "total_reserved", "q"),
    ("memory", "device_type", "q"),
    ("memory", "device", "q"),
    ("memory", "addr", "q"),
    ("memory", "thread", "l"),
)


def available() -> bool:
    return msgspec is not None


if msgspec is not None:
    _UNSET: Any = msgspec.UNSET
    _NO_TEXT = msgspec.Raw(b"")

    class _Args(msgspec.Struct, gc=False):
        """The args keys the analysis reads; every other key is skipped in C."""

        # no bool or float: those go through the reference code's conversions
        device: int | str | msgspec.UnsetType | None = _UNSET
        stream: int | str | msgspec.UnsetType | None = _UNSET
        correlation: int | str | msgspec.UnsetType | None = _UNSET
        # shapes stay raw text: the key of the shape interner, decoded once per new shape
        # absent: empty text (a present value's text never is)
        dims: msgspec.Raw = msgspec.field(default=_NO_TEXT, name="Input Dims")
        types: msgspec.Raw = msgspec.field(default=_NO_TEXT, name="Input type")
        concrete: msgspec.Raw = msgspec.field(default=_NO_TEXT, name="Concrete Inputs")
        nbytes: Any = msgspec.field(default=_UNSET, name="Bytes")
        total_allocated: Any = msgspec.field(default=_UNSET, name="Total Allocated")
        total_reserved: Any = msgspec.field(default=_UNSET, name="Total Reserved")
        device_type: Any = msgspec.field(default=_UNSET, name="Device Type")
        device_id: Any = msgspec.field(default=_UNSET, name="Device Id")
        addr: Any = msgspec.field(default=_UNSET, name="Addr")

    class _Event(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
        """A complete event ("ph": "X"). Strict types: any other type fails the chunk over
        to the reference code."""

        cat: str | None = None
        name: str = ""
        pid: int | str | None = None
        tid: int | str | None = None
        ts: float = float("nan")
        dur: float = 0.0
        args: _Args | None = None

    def _phase(ph: str) -> type:
        """The Struct of events of phase `ph`, chosen by msgspec from the value of "ph" (a
        tagged union): the phases the allocator's memory records use keep their fields;
        every other phase is only counted, and its fields are skipped without building
        them. A phase not listed here, a missing or non-string "ph", or two that differ
        fail the chunk over to the reference code."""
        fields = _MEMORY_FIELDS if ph in MEMORY_PHASES else []
        return msgspec.defstruct(f"_Phase{ord(ph)}", fields, tag_field="ph", tag=ph, gc=False)

    # What reader._memory_event reads, typed as in _Event.
    _MEMORY_FIELDS = [
        (f.name, f.type, f.default)
        for f in msgspec.structs.fields(_Event)
        if f.name in ("name", "pid", "tid", "ts", "args")
    ]
    # The phases of the Trace Event Format (Chrome's catapult documentation).
    _PHASES: dict[type, str] = {_Event: "X"}
    _PHASES.update((_phase(ph), ph) for ph in "BEiICbnestfPONDMVvRc()TpSF")
    _MEMORY_TYPES = frozenset(t for t, ph in _PHASES.items() if ph in MEMORY_PHASES)

    class _Tail(msgspec.Struct):
        traceEvents: msgspec.Raw

    _DECODER = msgspec.json.Decoder(list[functools.reduce(operator.or_, _PHASES)])  # type: ignore[misc]
    _TAIL = msgspec.json.Decoder(_Tail)
    _ANY = msgspec.json.Decoder()


def _arg(value: Any) -> Any:
    """An args value as dict.get gives it: None when the key is absent."""
    return None if value is _UNSET else value


def decode_chunk(text: bytes | memoryview) -> dict[str, Any] | None:
    """Columns of one chunk of events (`[` + the text between two cuts + `]`), or None when
    the strict decoder refuses it. The collector is paused: the chunk's objects hold no cycles, and
    collections triggered by millions of allocations would double the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _decode_chunk(text)
    finally:
        if enabled:
            gc.enable()


# Each category's class: device work 0-2 (DEVICE_CATS), ranges 10 + kind, runtime calls,
# syncs, CUPTI profiler ranges; anything else is only named (its name is interned).
_RUNTIME, _SYNC, _PROFILER, _OTHER = 20, 30, 40, -1
_CLASS: dict[Any, int] = {
    **DEVICE_CATS,
    **{c: 10 + k for c, k in RANGE_CATS.items()},
    **dict.fromkeys(RUNTIME_CATS, _RUNTIME),
    SYNC_CAT: _SYNC,
    PROFILER_RANGE_CAT: _PROFILER,
}


def has_long_digit_run(text: bytes | memoryview, block: int = 1 << 18) -> bool:
    """Whether the text holds a run of _LONG_RUN or more ASCII digits. numpy passes
    (vectorised in C: about a sixth of the instructions of bytes.translate + find):
    a digit mask, then run masks of width 2, 4, 8, 16 and 19 by shifted ANDs, ping-ponged
    between two buffers (an output never overlaps its inputs, so numpy copies nothing).
    The text is taken `block` bytes at a time (each piece read with the _LONG_RUN - 1 bytes
    after it, so a run across the cut is seen), so that the seven passes over a piece stay
    in the CPU's cache: over a whole chunk they would be bound by memory traffic."""
    n = len(text)
    if n < _LONG_RUN:
        return False
    x = np.frombuffer(text, dtype=np.uint8)
    first = np.empty(block + _LONG_RUN - 1, dtype=np.uint8)
    second = np.empty(block + _LONG_RUN - 1, dtype=bool)
    for start in range(0, n - _LONG_RUN + 1, block):  # every start of a run of _LONG_RUN
        piece = x[start : start + block + _LONG_RUN - 1]
        m = len(piece)
        digits = np.subtract(piece, 48, out=first[:m])  # uint8: wraps below b"0"
        a = np.less(digits, 10, out=second[:m])
        b = first.view(bool)  # the digits' memory, no longer needed, is the second buffer
        width = 1
        for step in (1, 2, 4, 8, _LONG_RUN - 16):
            # a[i]: a run of >= width digits starts at i; b[i] then: one of width + step
            k = m - width + 1
            np.logical_and(a[: k - step], a[step:k], out=b[: k - step])
            a, b, width = b, a, width + step
        if a[: m - width + 1].any():
            return True
    return False


def _ids(values: list[Any], default: int) -> Any:
    """Ids as reader.fill_events stores them: ints as they are (the 19-digit check keeps
    them inside int64; the Structs admit no bool or float), anything else through _int."""
    try:
        return _ints(values)
    except (TypeError, OverflowError):  # a str, None or UNSET among them
        return np.array([_int(v, default) for v in values], dtype=np.int64)


def _floats(values: list[float]) -> Any:
    """A float64 column of a list of floats (array's C loop: numpy's np.array(list)
    inspects every item's type first)."""
    return np.frombuffer(array("d", values), dtype=np.float64)


def _ints(values: list[int]) -> Any:
    return np.frombuffer(array("q", values), dtype=np.int64)


def _decode_chunk(text: bytes | memoryview) -> dict[str, Any] | None:
    """decode_chunk's work: whole-column passes (comprehensions, numpy) that give, event
    for event, what reader.fill_events gives."""
    if has_long_digit_run(text):
        return None
    try:
        events = _DECODER.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    # one class per phase (the tagged union): counted by class, in order of first appearance
    phases = {_PHASES[t]: n for t, n in collections.Counter(map(type, events)).items()}
    mem_cols = {c: array(code) for t, c, code in COLUMNS if t == "memory"}
    mem_threads: dict[Any, int] = {}
    if any(ph in phases for ph in MEMORY_PHASES):
        for e in events:
            if type(e) in _MEMORY_TYPES and e.name == MEMORY_NAME:
                _memory(e, mem_cols, mem_threads)
    x = _Event
    xs = events if phases.get("X") == len(events) else [e for e in events if type(e) is x]
    spans = _Spans(xs)
    xs = spans.events
    names: dict[str, int] = {}
    nid = _ints([names.setdefault(e.name, len(names)) for e in xs])
    cls = _ints([_CLASS.get(e.cat, _OTHER) for e in xs])
    if (cls == _PROFILER).any():
        return None  # its args are kept whole: the reference code reads this chunk
    cols: dict[str, Any] = {f"memory.{c}": col for c, col in mem_cols.items()}
    cols.update(_device_columns(xs, cls, nid, spans))
    host = _HostColumns(xs, cls, nid, spans)
    cols.update(host.columns)
    return {
        "columns": cols,
        "names": list(names),
        "threads": list(host.threads),
        "shapes": list(host.shapes),
        "memory_threads": list(mem_threads),
        "syncs": _syncs(xs, cls, spans),
        "profiler_ranges": [],
        "events": len(events),
        # a complete event without a usable timestamp; a phase that is not a string fails
        # the chunk
        "malformed": spans.no_timestamp,
        "negative_durations": spans.negative,
        "beyond_reason": spans.far,
        "phases": dict(phases),
        "lo": spans.lo,
        "hi": spans.hi,
    }


class _Spans:
    """The time spans of a chunk's complete events, checked as reader._CompleteEvents checks
    each one: `events` keeps those with a finite timestamp within any clock, `ts` and `dur`
    their values (a NaN or negative duration as zero length); `far` counts those beyond any
    clock, `no_timestamp` those without a finite timestamp, `negative` the negative durations
    kept; `lo`, `hi` the window they span."""

    def __init__(self, xs: list[Any]) -> None:
        ts = _floats([e.ts for e in xs])
        dur = _floats([e.dur for e in xs])
        finite = np.isfinite(ts)
        with np.errstate(invalid="ignore"):
            far = finite & ((ts > MAX_TS_US) | (ts < -MAX_TS_US) | (dur > MAX_DUR_US))
            keep = finite & ~far
            self.negative = int(np.count_nonzero(keep & (dur < 0.0)))
            dur = np.where(dur >= 0.0, dur, 0.0)  # NaN and negative durations: zero length
        self.far = int(np.count_nonzero(far))
        self.no_timestamp = int(np.count_nonzero(~finite))
        if not keep.all():
            index = np.flatnonzero(keep)
            xs = [xs[i] for i in index.tolist()]
            ts, dur = ts[index], dur[index]
        self.events, self.ts, self.dur = xs, ts, dur
        self.lo, self.hi = float("inf"), float("-inf")
        if len(xs):
            self.lo, self.hi = float(ts.min()), float((ts + dur).max())


def _device_columns(xs: list[Any], cls: Any, nid: Any, spans: _Spans) -> dict[str, Any]:
    """The device table's columns (kernels, memcpys, memsets): device and stream from args,
    else pid and tid; correlation -1 when absent."""
    is_dev = (cls >= 0) & (cls < 3)
    di = np.flatnonzero(is_dev)
    dev = list(compress(xs, is_dev.tolist()))
    args = [e.args for e in dev]
    cols = {
        "device.name": nid[di],
        "device.cat": cls[di].astype(np.int8),
        "device.ts": spans.ts[di],
        "device.dur": spans.dur[di],
    }
    try:  # the common case: args holds all three ids, as ints
        cols["device.device"] = _ints([a.device for a in args])
        cols["device.stream"] = _ints([a.stream for a in args])
        cols["device.corr"] = _ints([a.correlation for a in args])
    except (AttributeError, TypeError):  # args None, an id absent (UNSET) or not an int
        unset = _UNSET
        pairs = list(zip(dev, args, strict=True))
        cols["device.device"] = _ids(
            [e.pid if a is None or a.device is unset else a.device for e, a in pairs], 0
        )
        cols["device.stream"] = _ids(
            [e.tid if a is None or a.stream is unset else a.stream for e, a in pairs], 0
        )
        cols["device.corr"] = _correlations(args)
    return cols


def _correlations(args: list[Any]) -> Any:
    """Correlation ids of events whose args may be None or lack one (-1)."""
    unset = _UNSET
    return _ids([-1 if a is None or a.correlation is unset else a.correlation for a in args], -1)


class _HostColumns:
    """The range and runtime tables' columns. Host threads are interned in event order over
    ranges and runtime calls together (`threads`), input shapes over ranges (`shapes`)."""

    def __init__(self, xs: list[Any], cls: Any, nid: Any, spans: _Spans) -> None:
        is_host = (cls >= 10) & (cls <= _RUNTIME)
        hi_idx = np.flatnonzero(is_host)
        host = list(compress(xs, is_host.tolist()))
        self.threads: dict[Any, int] = {}
        threads = self.threads
        th = _ints([threads.setdefault((e.pid, e.tid), len(threads)) for e in host])
        hcls = cls[hi_idx]
        is_range = hcls < _RUNTIME
        ri, ti = hi_idx[is_range], hi_idx[~is_range]
        in_range = is_range.tolist()
        ranges = list(compress(host, in_range))
        self.shapes: dict[Any, int] = {}
        ts, dur = spans.ts, spans.dur
        calls = list(compress(host, map(operator.not_, in_range)))
        try:  # the common case: args holds the correlation id, as an int
            corr = _ints([e.args.correlation for e in calls])
        except (AttributeError, TypeError):  # args None, the id absent (UNSET) or not an int
            corr = _correlations([e.args for e in calls])
        self.columns = {
            "ranges.name": nid[ri],
            "ranges.kind": (hcls[is_range] - 10).astype(np.int8),
            "ranges.thread": th[is_range],
            "ranges.ts": ts[ri],
            "ranges.dur": dur[ri],
            "ranges.shape": self._shape_ids(ranges),
            "runtime.name": nid[ti],
            "runtime.thread": th[~is_range],
            "runtime.ts": ts[ti],
            "runtime.dur": dur[ti],
            "runtime.corr": corr,
        }

    def _shape_ids(self, ranges: list[Any]) -> Any:
        """Each range's shape id, -1 without shapes. A shape's key is the text of its three
        values joined by NUL (absent: empty; a NUL never occurs in JSON text), decoded and
        frozen once per distinct key."""
        shapes = self.shapes
        shape_keys: dict[bytes, int] = {}
        shape = array("q", [-1]) * len(ranges)
        for k, a in enumerate([e.args for e in ranges]):
            if a is None or not a.dims:
                continue
            raw = _NUL.join((a.dims, a.types, a.concrete))
            sid = shape_keys.get(raw, -1)
            if sid < 0:
                values = [_ANY.decode(r) if r else None for r in raw.split(_NUL)]
                sid = shape_keys[raw] = shapes.setdefault(_freeze(values), len(shapes))
            shape[k] = sid
        return np.frombuffer(shape, dtype=np.int64)


def _syncs(xs: list[Any], cls: Any, spans: _Spans) -> list[tuple[int, int, float, float]]:
    """The cuda_sync records: (device, stream, ts, dur), device and stream from args, else
    pid and tid."""
    syncs = []
    for i in np.flatnonzero(cls == _SYNC).tolist():
        e, a = xs[i], xs[i].args
        v = e.pid if a is None or a.device is _UNSET else a.device
        w = e.tid if a is None or a.stream is _UNSET else a.stream
        syncs.append((_int(v, 0), _int(w, 0), float(spans.ts[i]), float(spans.dur[i])))
    return syncs


_NUL = b"\0"


def _memory(ev: Any, cols: dict[str, array], threads: dict[Any, int]) -> None:
    """One allocator record, as reader._memory_event reads it."""
    a, ts = ev.args, ev.ts
    if a is None or ts - ts != 0.0 or not -MAX_TS_US <= ts <= MAX_TS_US:
        return
    key = (ev.pid, ev.tid)
    th = threads.get(key)
    if th is None:
        th = threads[key] = len(threads)
    values = (
        _int(_arg(a.nbytes), 0),
        _int(_arg(a.total_allocated)),
        _int(_arg(a.total_reserved)),
        _int(_arg(a.device_type)),
        _int(_arg(a.device_id)),
        _int(_arg(a.addr)),
    )
    cols["ts"].append(ts)
    for column, value in zip(
        ("bytes", "total_allocated", "total_reserved", "device_type", "device", "addr"),
        values,
        strict=True,
    ):
        cols[column].append(value)
    cols["thread"].append(th)


class Layout(Exception):
    """The file is not laid out as this module reads it: the reference path reads it."""


def _cut(buf: mmap.mmap, end: int) -> tuple[int, int] | None:
    """In buf[:end]: (end of the last event that ends within CHUNK_BYTES, start of the
    next); for an event longer than that, the first boundary after it; None when there is
    none yet."""
    i = min(end, CHUNK_BYTES)
    while True:
        j = buf.rfind(b"}", 0, i)
        if j < 0:
            break
        m = _SEP.match(buf, j + 1, end)
        if m is not None:
            return j + 1, m.end() - 1
        i = j
    m = _BOUNDARY.search(buf, CHUNK_BYTES, end)
    return None if m is None else (m.start() + 1, m.end() - 1)


def _last_events(rest: bytes) -> bytes:
    """The events in the file's remaining text (`...}] , "key": ... }`): decoded as the one
    object it closes, with the list kept raw, so that a `]` in a later key's value is never
    taken for the list's end. A second traceEvents key is left to the reference path."""
    text = b'{"traceEvents":[' + rest
    try:
        raw = bytes(_TAIL.decode(text).traceEvents)
        after = _ANY.decode(b'{"":0' + text[len(b'{"traceEvents":') + len(raw) :])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        raise Layout("the end of the file does not decode") from None
    if not text.startswith(b'{"traceEvents":' + raw) or "traceEvents" in after:
        raise Layout("a second traceEvents key")
    return raw[1:-1].strip()


def chunks(fh: BinaryIO, metadata: dict[str, Any]) -> Iterator[bytes | memoryview]:
    """The event list's text, in chunks cut at event boundaries (each `{...}, ..., {...}`);
    a chunk is valid until the next one is asked for.

    Raises Layout when the head does not decode to `metadata` plus the list, or an event
    does not end within MAX_PENDING_BYTES.
    """
    buf = fh.read(CHUNK_BYTES)
    if buf.startswith(_BOM):
        buf = buf[3:]
    m = _HEAD.search(buf)
    while m is None and len(buf) < MAX_PENDING_BYTES:
        more = fh.read(CHUNK_BYTES)
        if not more:
            break
        buf += more
        m = _HEAD.search(buf)
    if m is None:
        raise Layout("no traceEvents key near the start")
    try:
        head = _ANY.decode(buf[: m.start()] + b'"traceEvents":0}')
    except (msgspec.DecodeError, RecursionError):
        raise Layout("the head does not decode") from None
    if not isinstance(head, dict) or list(head)[:-1] != list(metadata):
        raise Layout("the head is not the metadata")
    # One buffer of fixed size for the whole file: the stream is read into it in place, a
    # chunk is a view of its front, and the text after a cut moves to the front. No
    # reallocation: fresh pages for every chunk would cost as much as the copies. An
    # anonymous mapping, not a bytearray (which is zero-filled): its pages are resident only
    # once written, so the room kept for long events costs no memory until one comes.
    rest = buf[m.end() :]
    del buf
    pending = mmap.mmap(-1, MAX_PENDING_BYTES + 2 * CHUNK_BYTES)
    space = memoryview(pending)
    end = len(rest)
    space[:end] = rest
    del rest
    eof = False
    try:
        while not eof:
            while end < CHUNK_BYTES and not eof:  # to CHUNK_BYTES: the tail stays short
                got = fh.readinto(space[end:CHUNK_BYTES])
                eof = not got
                end += got
            if eof:
                break
            cut = _cut(pending, end)
            if cut is None:
                if end > MAX_PENDING_BYTES:
                    raise Layout("an event larger than the buffer")
                got = fh.readinto(space[end : end + CHUNK_BYTES])
                eof = not got
                end += got
                continue
            view = space[: cut[0]]
            try:
                yield view  # valid until the next chunk is asked for
            finally:
                view.release()
            tail = bytes(space[cut[1] : end])
            end = len(tail)
            space[:end] = tail
            del tail
        last = _last_events(bytes(space[:end]))
    finally:
        space.release()
        pending.close()
    if last:
        yield last


def text_size(raw: BinaryIO) -> int:
    """About how many bytes of JSON a file holds: its size, or for gzip the larger of that
    and the size its trailer records (modulo 4 GiB, of the last member: an estimate that
    sets thresholds, never correctness)."""
    size = os.fstat(raw.fileno()).st_size
    if raw.read(2) == b"\x1f\x8b" and size >= 18:
        raw.seek(size - 4)
        size = max(size, int.from_bytes(raw.read(4), "little"))
    raw.seek(0)
    return size


def open_stream(raw: BinaryIO, fast_gzip: bool | None = None) -> BinaryIO:
    """The decompressed bytes of a plain or gzipped file. gzip is inflated by ISA-L when
    python-isal is installed (`fast_gzip`, default: when it is), else by zlib: the same
    bytes either way."""
    magic = raw.read(2)
    raw.seek(0)
    if magic != b"\x1f\x8b":
        return raw
    if fast_gzip is None:
        fast_gzip = _igzip is not None
    if fast_gzip:
        return _igzip.IGzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]


def worker_count() -> int:
    """Worker processes for one read: one per CPU this process may use, or
    PERFSUITE_TRACE_WORKERS. One (no pool) when this process runs other threads: the pool is
    forked, and a child forked while another thread holds a lock can wait on it forever (a
    notebook kernel, a test runner's I/O thread); the read is then sequential, with the same
    result."""
    if threading.active_count() > 1:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    env = os.environ.get("PERFSUITE_TRACE_WORKERS")
    return max(1, int(env)) if env and env.isdigit() else cpus


# Shared buffers of the worker processes: anonymous shared mappings made before the workers
# are forked, so that a chunk reaches a worker by one copy, with no pickling and no pipe.
_SLOTS: list[mmap.mmap] = []


def _decode_slot(slot: int, n: int) -> dict[str, Any] | None:
    # decoded where it lies: the slot is not written again before this returns, and no
    # value decoded keeps a view of it (shape keys are joined into bytes of their own)
    return decode_chunk(memoryview(_SLOTS[slot])[:n])


def decoded(
    pieces: Iterator[bytes | memoryview],
    workers: int,
    on_chunk: Callable[[Callable[[], bytes], dict | None], None],
) -> None:
    """Decode every chunk, in worker processes when `workers` > 1, and hand each chunk
    (a function giving its text) with its columns (None: refused) to `on_chunk`, in file
    order. Two slots per worker: at most that many chunks are in flight, which bounds
    memory."""
    if workers <= 1:
        for chunk in pieces:
            on_chunk(lambda c=chunk: bytes(c), decode_chunk(b"[" + chunk + b"]"))
        return
    global _SLOTS
    size = MAX_PENDING_BYTES + 2 * CHUNK_BYTES + 2  # the longest chunk chunks() yields
    _SLOTS = [mmap.mmap(-1, size) for _ in range(2 * workers)]
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            inflight: collections.deque = collections.deque()
            free = list(range(len(_SLOTS)))
            for chunk in pieces:
                if not free:
                    slot, n, job = inflight.popleft()
                    on_chunk(lambda s=slot, n=n: _SLOTS[s][1 : n - 1], job.get())
                    free.append(slot)
                slot = free.pop()
                buf, n = _SLOTS[slot], len(chunk) + 2
                buf[0:1], buf[1 : n - 1], buf[n - 1 : n] = b"[", chunk, b"]"
                del chunk
                inflight.append((slot, n, pool.apply_async(_decode_slot, (slot, n))))
            while inflight:
                slot, n, job = inflight.popleft()
                on_chunk(lambda s=slot, n=n: _SLOTS[s][1 : n - 1], job.get())
    finally:
        for buf in _SLOTS:
            buf.close()
        _SLOTS = []
