"""Streaming reader for Chrome-trace JSON written by the PyTorch profiler (Kineto).

Traces of real jobs reach hundreds of MB, so events are streamed with ijson (its C backend,
yajl2_c, when installed) and only the few fields the analysis needs are kept, in typed arrays
rather than one dict per event. Accepts plain or gzipped files, `{"traceEvents": [...], ...}`
objects and bare top-level lists. Times stay in the trace's unit (microseconds).
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import ijson
import numpy as np

from perfsuite.safeio import MAX_JSON_DEPTH, DepthGuard, InputError, open_regular
from perfsuite.traces import colcache, fastread
from perfsuite.traces.kineto import (
    DEVICE_CATS,
    MAX_DUR_US,
    MAX_TS_US,
    MEMORY_NAME,
    MEMORY_PHASES,
    PROFILER_RANGE_CAT,
    RANGE_CATS,
    RUNTIME_CATS,
    SHAPE_KEYS,
    SYNC_CAT,
)

# The field readers under the short names the event loops below use.
from perfsuite.traces.kineto import ID_LIMIT as _I64
from perfsuite.traces.kineto import as_float as _num
from perfsuite.traces.kineto import as_id as _int
from perfsuite.traces.kineto import frozen_shape as _freeze

_BOM = b"\xef\xbb\xbf"


class TraceError(InputError):
    """A trace file that cannot be read; the message is one line naming the file."""


def _ijson_backend() -> Any:
    """The fastest ijson backend available (yajl2_c is ~10x faster than pure Python)."""
    try:
        return ijson.get_backend("yajl2_c")
    except ImportError:
        return ijson


class Interner:
    """Strings (kernel and op names, thread keys) stored once, referred to by int id."""

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}
        self.values: list[Any] = []

    def __call__(self, value: Any) -> int:
        i = self.ids.get(value)
        if i is None:
            i = self.ids[value] = len(self.values)
            self.values.append(value)
        return i


@dataclass
class DeviceEvents:
    """Kernels, memcpys and memsets: one entry per event, parallel arrays."""

    name: array = field(default_factory=lambda: array("l"))
    cat: array = field(default_factory=lambda: array("b"))  # index into DEVICE_CAT_NAMES
    device: array = field(default_factory=lambda: array("l"))
    stream: array = field(default_factory=lambda: array("l"))
    ts: array = field(default_factory=lambda: array("d"))
    dur: array = field(default_factory=lambda: array("d"))
    corr: array = field(default_factory=lambda: array("q"))  # -1 when absent


@dataclass
class RuntimeEvents:
    """cudaLaunchKernel, hipMemcpyWithStream...: host calls, correlated to device events."""

    name: array = field(default_factory=lambda: array("l"))
    thread: array = field(default_factory=lambda: array("l"))
    ts: array = field(default_factory=lambda: array("d"))
    dur: array = field(default_factory=lambda: array("d"))
    corr: array = field(default_factory=lambda: array("q"))


@dataclass
class RangeEvents:
    """cpu_op and user_annotation ranges on host threads; `shape` indexes TraceData.shapes."""

    name: array = field(default_factory=lambda: array("l"))
    kind: array = field(default_factory=lambda: array("b"))
    thread: array = field(default_factory=lambda: array("l"))
    ts: array = field(default_factory=lambda: array("d"))
    dur: array = field(default_factory=lambda: array("d"))
    shape: array = field(default_factory=lambda: array("l"))  # -1 when no shapes recorded


@dataclass
class MemoryEvents:
    """The allocator's memory instant events, in trace order. `thread` indexes `threads`, the
    (pid, tid) keys of these events (their own interner: TraceData.threads keeps the ids of
    the threads that run ranges, which the analysis reports). Integer fields that are absent
    or not integers read as -1 (0 for bytes); device_type is c10's DeviceType code (0 CPU,
    1 CUDA)."""

    ts: array = field(default_factory=lambda: array("d"))
    bytes: array = field(default_factory=lambda: array("q"))  # signed: frees are negative
    total_allocated: array = field(default_factory=lambda: array("q"))
    total_reserved: array = field(default_factory=lambda: array("q"))
    device_type: array = field(default_factory=lambda: array("q"))
    device: array = field(default_factory=lambda: array("q"))  # Device Id; -1 for the CPU
    addr: array = field(default_factory=lambda: array("q"))
    thread: array = field(default_factory=lambda: array("l"))
    threads: Interner = field(default_factory=Interner)


@dataclass
class TraceData:
    """Everything the analysis needs from one trace file, compactly."""

    path: str
    metadata: dict[str, Any]
    names: Interner = field(default_factory=Interner)
    # (pid, tid) keys of host threads
    threads: Interner = field(default_factory=Interner)
    # (Input Dims, Input type, Concrete Inputs) as a tuple of JSON-ish values
    shapes: Interner = field(default_factory=Interner)
    device: DeviceEvents = field(default_factory=DeviceEvents)
    runtime: RuntimeEvents = field(default_factory=RuntimeEvents)
    ranges: RangeEvents = field(default_factory=RangeEvents)
    # (device, stream, ts, dur) of cuda_sync records
    syncs: list[tuple[int, int, float, float]] = field(default_factory=list)
    profiler_ranges: list[tuple[str, int, float, float, dict[str, Any]]] = field(
        default_factory=list
    )
    memory: MemoryEvents = field(default_factory=MemoryEvents)
    events_total: int = 0
    events_by_phase: dict[str, int] = field(default_factory=dict)
    window: tuple[float, float] | None = None  # earliest ts, latest end over X events
    backend: str = ""
    bare_list: bool = False
    malformed: int = 0  # events skipped: a list/object where a name, phase or id belongs
    negative_durations: int = 0  # complete events with dur < 0, read as zero length
    beyond_reason: int = 0  # events skipped: a timestamp or duration beyond MAX_TS_US/MAX_DUR_US


def _open(path: Path) -> BinaryIO:
    """The decompressed byte stream behind a depth guard: regular files only, so a FIFO is
    refused instead of waited on, and nesting is bounded before ijson builds anything. A UTF-8
    byte-order mark (Windows editors write one) is skipped: yajl would call it invalid."""
    raw = open_regular(path, TraceError)
    try:
        magic = raw.read(3)
        raw.seek(3 if magic == _BOM else 0)
        if magic[:2] != b"\x1f\x8b":
            return DepthGuard(raw, path, TraceError, MAX_JSON_DEPTH)  # type: ignore[return-value]
        # GzipFile does not close a file it was given: the guard does
        stream = gzip.GzipFile(fileobj=raw, mode="rb")
        if stream.peek(3)[:3] == _BOM:
            stream.read(3)
        return DepthGuard(stream, path, TraceError, MAX_JSON_DEPTH, underlying=raw)  # type: ignore[return-value]
    except (OSError, EOFError, zlib.error) as exc:
        raw.close()
        raise TraceError(f"{path}: cannot read: {_short(exc)}") from None


def _read_head(path: Path, backend: Any) -> tuple[dict[str, Any], str | None]:
    """Top-level keys before `traceEvents` (Kineto writes deviceProperties/distributedInfo
    there), and the ijson prefix of the event list; None when there is no event list."""
    meta: dict[str, Any] = {}
    builder: Any = None
    key = None
    with _open(path) as fh:
        try:
            for prefix, event, value in backend.parse(fh, use_float=True):
                if builder is not None:
                    builder.event(event, value)
                    if prefix == key and event in ("end_map", "end_array"):
                        meta[key] = builder.value
                        builder = None
                    continue
                if prefix == "" and event == "start_array":
                    return meta, "item"
                if prefix == "" and event in ("start_map", "end_map"):
                    if event == "end_map":
                        return meta, None
                    continue
                if prefix == "" and event == "map_key":
                    key = value
                    continue
                if prefix == key and key is not None:
                    if key == "traceEvents":
                        if event != "start_array":
                            raise TraceError(
                                f"{path}: field traceEvents: is not a list "
                                f"(got {_JSON_KINDS.get(event, event)})"
                            )
                        return meta, "traceEvents.item"
                    if event in ("start_map", "start_array"):
                        builder = ijson.ObjectBuilder()
                        builder.event(event, value)
                    else:
                        meta[key] = value
                elif prefix == "":
                    # a scalar top-level document
                    return meta, None
        except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
            raise TraceError(f"{path}: not valid JSON ({_short(exc)})") from None
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
            raise TraceError(f"{path}: cannot read: {_short(exc)}") from None
    return meta, None


_JSON_KINDS = {
    "start_map": "an object",
    "string": "a string",
    "number": "a number",
    "integer": "a number",
    "double": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."


def _memory_event(data: TraceData, ev: dict[str, Any]) -> None:
    """One allocator record into data.memory; one without a usable timestamp, or whose
    args or thread key are not plain values, is skipped (the phase count still has it)."""
    ts, pid, tid, args = ev.get("ts"), ev.get("pid"), ev.get("tid"), ev.get("args")
    if type(args) is not dict or isinstance(pid, (list, dict)) or isinstance(tid, (list, dict)):
        return
    if type(ts) is not float and type(ts) is not int:
        ts = _num(ts, float("nan"))
    try:
        ts = float(ts)
    except OverflowError:
        return
    if ts - ts != 0.0 or not -MAX_TS_US <= ts <= MAX_TS_US:
        return
    mem = data.memory
    g = args.get
    values = (
        _int(g("Bytes"), 0),
        _int(g("Total Allocated")),
        _int(g("Total Reserved")),
        _int(g("Device Type")),
        _int(g("Device Id")),
        _int(g("Addr")),
    )
    mem.ts.append(ts)
    for column, value in zip(
        (mem.bytes, mem.total_allocated, mem.total_reserved, mem.device_type, mem.device, mem.addr),
        values,
        strict=True,
    ):
        column.append(value)
    mem.thread.append(mem.threads((pid, tid)))


def iter_events(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every raw event of a trace, streamed (for tools that want the dicts themselves).

    Plain or gzipped, `{"traceEvents": [...]}` or a bare list. Every failure (missing file,
    bad gzip, invalid JSON, undecodable bytes) is a one-line TraceError naming the file.
    """
    p = Path(path)
    backend = _ijson_backend()
    _, prefix = _read_head(p, backend)
    if prefix is None:
        raise TraceError(f"{p}: field traceEvents: missing (not a Chrome/Kineto trace)")
    with _open(p) as fh:
        try:
            yield from backend.items(fh, prefix, use_float=True)
        except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
            raise TraceError(f"{p}: not valid JSON ({_short(exc)})") from None
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
            raise TraceError(f"{p}: cannot read: {_short(exc)}") from None


def read_trace(
    path: str | os.PathLike[str],
    progress: Callable[[int], None] | None = None,
    *,
    fast: bool | None = None,
    cache: bool | None = None,
) -> TraceData:
    """Read one trace file into a TraceData. `progress(n)` is called as events are read.

    `fast` (default: when msgspec is installed, unless PERFSUITE_TRACE_FAST=0) decodes
    chunks of the event list in worker processes (fastread); `fast=False` is the reference
    path, ijson event by event. Both
    give identical TraceData. `cache` (default: on unless PERFSUITE_TRACE_CACHE=0) reuses
    or writes the columns beside a trace of at least CACHE_MIN_BYTES (colcache).
    """
    p = Path(path)
    backend = _ijson_backend()
    meta, prefix = _read_head(p, backend)
    if prefix is None:
        raise TraceError(f"{p}: field traceEvents: missing (not a Chrome/Kineto trace)")
    name = getattr(backend, "backend_name", getattr(backend, "__name__", "?"))
    if cache is None:
        cache = os.environ.get("PERFSUITE_TRACE_CACHE", "1") != "0"
    st = os.stat(p)
    with open_regular(p, TraceError) as raw:
        size = fastread.text_size(raw)
    cache = cache and size >= CACHE_MIN_BYTES
    if cache:
        hit = colcache.load(p, st)
        data = _from_cache(p, *hit) if hit is not None else None
        if data is not None:
            if progress is not None:
                progress(data.events_total)
            return data
    data = _new(p, meta, name, prefix == "item")
    if fast is None:
        fast = fastread.available() and os.environ.get("PERFSUITE_TRACE_FAST", "1") != "0"
    if fast and prefix == "traceEvents.item":
        try:
            workers = fastread.worker_count() if size >= PARALLEL_MIN_BYTES else 1
            _fill_fast(data, p, backend, workers, progress)
            data.backend = f"msgspec ({workers} process{'es' if workers > 1 else ''})"
        except _NotFast:
            data = _new(p, meta, name, False)
            _fill(data, p, backend, prefix, progress)
    else:
        _fill(data, p, backend, prefix, progress)
    if cache:
        try:
            colcache.save(p, st, *_to_cache(data))
            data.backend += f"; columns cached in {colcache.cache_path(p).name}"
        except OSError as exc:
            data.backend += f"; columns not cached ({exc.strerror or exc})"
    return data


# Traces of less JSON than this (fastread.text_size) are read faster than a cache is written.
CACHE_MIN_BYTES = 32 * 1024 * 1024
# Traces of less JSON than this are decoded in one process: workers cost a start-up.
PARALLEL_MIN_BYTES = 32 * 1024 * 1024


def _new(p: Path, meta: dict[str, Any], backend: str, bare_list: bool) -> TraceData:
    return TraceData(path=str(p), metadata=meta, backend=backend, bare_list=bare_list)


class _NotFast(Exception):
    """The fast path cannot vouch for this file: the reference path reads all of it."""


def _fill_fast(
    data: TraceData,
    p: Path,
    backend: Any,
    workers: int,
    progress: Callable[[int], None] | None,
) -> None:
    """Decode the event list chunk by chunk (fastread); a chunk the strict decoder refuses
    is read by the reference code, and one that is not even valid JSON sends the whole file
    to the reference path, which reports it as it always has."""
    lo, hi = float("inf"), float("-inf")
    pieces: dict[str, list[bytes]] = {f"{t}.{c}": [] for t, c, _ in fastread.COLUMNS}

    def on_chunk(text: Callable[[], bytes], cols: dict[str, Any] | None) -> None:
        nonlocal lo, hi
        if cols is None:
            cols = _reference_chunk(p, text(), backend)
        _merge(data, cols, pieces)
        lo, hi = min(lo, cols["lo"]), max(hi, cols["hi"])
        if progress is not None:
            progress(data.events_total)

    try:
        with open_regular(p, TraceError) as raw:
            fh = fastread.open_stream(raw)
            fastread.decoded(fastread.chunks(fh, data.metadata), workers, on_chunk)
    except (fastread.Layout, TraceError, *fastread.DECOMPRESS_ERRORS):
        raise _NotFast from None
    for t, c, _ in fastread.COLUMNS:  # one allocation per column, freed piece by piece
        column = pieces.pop(f"{t}.{c}")
        getattr(getattr(data, t), c).frombytes(b"".join(column))
        column.clear()
    data.window = (lo, hi) if data.events_total and lo <= hi else None


def _reference_chunk(p: Path, chunk: bytes, backend: Any) -> dict[str, Any]:
    """One chunk through fill_events, as columns with chunk-local interners. Events sit
    one level deeper in the file than in `[chunk]`: the depth limit is one less."""
    part = _new(p, {}, "", False)
    text = io.BytesIO(b"[" + chunk + b"]")
    guard = DepthGuard(text, p, TraceError, MAX_JSON_DEPTH - 1)
    try:
        fill_events(part, backend.items(guard, "item", use_float=True))
    except Exception:
        raise _NotFast from None
    lo, hi = part.window or (float("inf"), float("-inf"))
    return {
        "columns": _columns(part),
        "names": part.names.values,
        "threads": part.threads.values,
        "shapes": part.shapes.values,
        "memory_threads": part.memory.threads.values,
        "syncs": part.syncs,
        "profiler_ranges": part.profiler_ranges,
        "events": part.events_total,
        "malformed": part.malformed,
        "negative_durations": part.negative_durations,
        "beyond_reason": part.beyond_reason,
        "phases": part.events_by_phase,
        "lo": lo,
        "hi": hi,
    }


def _columns(data: TraceData) -> dict[str, array]:
    return {f"{t}.{c}": getattr(getattr(data, t), c) for t, c, _ in fastread.COLUMNS}


# Columns that hold ids of an interner, remapped from chunk-local to file-wide ids.
_REMAP = {
    "device.name": "names",
    "runtime.name": "names",
    "ranges.name": "names",
    "runtime.thread": "threads",
    "ranges.thread": "threads",
    "ranges.shape": "shapes",
    "memory.thread": "memory_threads",
}


def _merge(data: TraceData, cols: dict[str, Any], pieces: dict[str, list[bytes]]) -> None:
    """Add one chunk in file order: its new strings get the next ids, as they would in one
    sequential pass, and its local ids are mapped to those; its columns' bytes go to
    `pieces`, joined once at the end."""
    interners = {
        "names": data.names,
        "threads": data.threads,
        "shapes": data.shapes,
        "memory_threads": data.memory.threads,
    }
    maps = {}
    for key, interner in interners.items():
        ids = [interner(v) for v in cols[key]]
        maps[key] = np.array([*ids, -1], dtype=np.int64)  # local -1 (no shape) stays -1
    for t, c, code in fastread.COLUMNS:
        name = f"{t}.{c}"
        col = cols["columns"][name]
        if not len(col):
            continue
        if name in _REMAP:
            local = np.frombuffer(col, dtype=np.dtype(code))
            pieces[name].append(maps[_REMAP[name]][local].astype(np.dtype(code)).tobytes())
        else:
            pieces[name].append(np.asarray(col, dtype=np.dtype(code)).tobytes())
    data.syncs.extend(cols["syncs"])
    data.profiler_ranges.extend(cols["profiler_ranges"])
    data.events_total += cols["events"]
    data.malformed += cols["malformed"]
    data.negative_durations += cols["negative_durations"]
    data.beyond_reason += cols["beyond_reason"]
    phases = data.events_by_phase
    for k, v in cols["phases"].items():
        phases[k] = phases.get(k, 0) + v


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the interners hold."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _to_cache(data: TraceData) -> tuple[dict[str, Any], dict[str, array]]:
    header = {
        "metadata": data.metadata,
        "names": data.names.values,
        "threads": data.threads.values,
        "shapes": data.shapes.values,
        "memory_threads": data.memory.threads.values,
        "syncs": data.syncs,
        "profiler_ranges": data.profiler_ranges,
        "events_total": data.events_total,
        "events_by_phase": data.events_by_phase,
        "window": data.window,
        "backend": data.backend,
        "bare_list": data.bare_list,
        "malformed": data.malformed,
        "negative_durations": data.negative_durations,
        "beyond_reason": data.beyond_reason,
    }
    return header, _columns(data)


def _from_cache(p: Path, header: dict[str, Any], columns: dict[str, array]) -> TraceData | None:
    """The TraceData a cache holds; None (a miss) when its columns do not line up."""
    data = _new(p, header["metadata"], f"cache {colcache.cache_path(p).name}", False)
    data.backend += f" (written by {header['backend']})"
    lengths: dict[str, int] = {}
    for t, c, code in fastread.COLUMNS:
        col = columns.get(f"{t}.{c}")
        if col is None or col.typecode != code or lengths.setdefault(t, len(col)) != len(col):
            return None
        setattr(getattr(data, t), c, col)
    for attr, interner in (
        ("names", data.names),
        ("threads", data.threads),
        ("shapes", data.shapes),
        ("memory_threads", data.memory.threads),
    ):
        for v in header[attr]:
            interner(_tuples(v) if attr != "names" else v)
    data.syncs = [tuple(s) for s in header["syncs"]]
    data.profiler_ranges = [(*r[:4], r[4]) for r in header["profiler_ranges"]]
    data.profiler_ranges = [tuple(r) for r in data.profiler_ranges]
    data.events_by_phase = header["events_by_phase"]
    data.window = tuple(header["window"]) if header["window"] is not None else None
    data.bare_list = header["bare_list"]
    for k in ("events_total", "malformed", "negative_durations", "beyond_reason"):
        setattr(data, k, header[k])
    return data


def _fill(
    data: TraceData,
    p: Path,
    backend: Any,
    prefix: str,
    progress: Callable[[int], None] | None,
) -> None:
    """Stream the file's events into `data`."""
    with _open(p) as fh:
        try:
            fill_events(data, backend.items(fh, prefix, use_float=True), progress)
        except (ijson.JSONError, ijson.IncompleteJSONError) as exc:
            raise TraceError(
                f"{p}: not valid JSON after {data.events_total} events ({_short(exc)})"
            ) from None
        except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
            raise TraceError(f"{p}: cannot read: {_short(exc)}") from None


def fill_events(
    data: TraceData,
    events: Iterator[Any],
    progress: Callable[[int], None] | None = None,
) -> None:
    """The reference per-event code: one pass over decoded events (dicts as ijson builds
    them), counting phases and handing each complete event to _CompleteEvents; the counters
    of `data` are set even when `events` raises. Written for speed (local bindings, common
    types first): it runs once per event of traces with millions."""
    p = data.path
    complete = _CompleteEvents(data)
    add = complete.add
    phases: dict[str, int] = {}
    n = bad = 0
    try:
        for ev in events:
            n += 1
            if progress is not None and not n & 0xFFFF:
                progress(n)
            if type(ev) is not dict:
                raise TraceError(f"{p}: field traceEvents[{n - 1}]: expected an object")
            ph = ev.get("ph")
            if type(ph) is not str:
                bad += 1  # a list or object as the phase: not an event we can place
                continue
            phases[ph] = phases.get(ph, 0) + 1
            if ph != "X":
                if ev.get("name") == MEMORY_NAME and ph in MEMORY_PHASES:
                    _memory_event(data, ev)
                continue
            if not add(ev):
                bad += 1
    finally:
        data.events_total = n
        data.malformed = bad
        data.negative_durations = complete.negative
        data.beyond_reason = complete.far
        data.events_by_phase = {str(k): v for k, v in phases.items()}
        lo, hi = complete.lo, complete.hi
        data.window = (lo, hi) if n and lo <= hi else None


# `_CompleteEvents._span`'s answer for an event without a usable timestamp: malformed.
_NO_TIMESTAMP = (float("nan"), float("nan"))


class _CompleteEvents:
    """Where the reference code puts a complete event ("ph": "X"): its time span checked,
    then a row of the device, range or runtime columns, a sync record or a profiler range,
    by its category. Counts what it skips or clamps, and the window of what it keeps."""

    def __init__(self, data: TraceData) -> None:
        self.data = data
        self.shape_keys: dict[str, int] = {}
        self.lo, self.hi = float("inf"), float("-inf")
        self.negative = self.far = 0

    def add(self, ev: dict[str, Any]) -> bool:
        """Place one complete event; False when it cannot be placed (a category that is
        not a string, a list or object as its pid or tid, no usable timestamp)."""
        cat = ev.get("cat")
        pid, tid = ev.get("pid"), ev.get("tid")
        if (
            (cat is not None and type(cat) is not str)
            or isinstance(pid, (list, dict))
            or isinstance(tid, (list, dict))
        ):
            return False
        span = self._span(ev)
        if span is None:
            return True
        if span is _NO_TIMESTAMP:
            return False
        ts, dur = span
        args = ev.get("args") or {}
        if type(args) is not dict:
            args = {}
        name = ev.get("name", "")
        if type(name) is not str:
            name = str(name)
        names = self.data.names
        nid = names.ids.get(name)
        if nid is None:
            nid = names(name)
        code = DEVICE_CATS.get(cat)
        if code is not None:
            self._device(nid, code, args, pid, tid, ts, dur)
        elif cat in RANGE_CATS:
            self._range(nid, RANGE_CATS[cat], args, (pid, tid), ts, dur)
        elif cat in RUNTIME_CATS:
            self._host_call(nid, args, (pid, tid), ts, dur)
        elif cat == SYNC_CAT:
            device, stream = _int(args.get("device", pid), 0), _int(args.get("stream", tid), 0)
            self.data.syncs.append((device, stream, ts, dur))
        elif cat == PROFILER_RANGE_CAT:
            self.data.profiler_ranges.append((name, _int(pid, 0), ts, dur, dict(args)))
        return True

    def _span(self, ev: dict[str, Any]) -> tuple[float, float] | None:
        """(ts, dur) as floats, a NaN or negative duration as zero length; `_NO_TIMESTAMP`
        when there is no usable timestamp (malformed); None when a value is beyond any clock
        (counted in `far`)."""
        ts = ev.get("ts")
        if type(ts) is not float and type(ts) is not int:
            ts = _num(ts, float("nan"))
        dur = ev.get("dur", 0.0)
        if type(dur) is not float and type(dur) is not int:
            dur = _num(dur)
        try:
            ts, dur = float(ts), float(dur)
        except OverflowError:
            ts = float("nan")
        if ts - ts != 0.0:  # no usable timestamp (NaN, infinite)
            return _NO_TIMESTAMP
        if ts > MAX_TS_US or ts < -MAX_TS_US or dur > MAX_DUR_US:
            self.far += 1  # beyond any clock: skipped, and the analysis says how many
            return None
        if not dur >= 0.0 or dur - dur != 0.0:
            if dur < 0.0:
                self.negative += 1  # counted as zero length, and said in the notes
            dur = 0.0
        if ts < self.lo:
            self.lo = ts
        if ts + dur > self.hi:
            self.hi = ts + dur
        return ts, dur

    def _device(
        self, nid: int, code: int, args: dict, pid: Any, tid: Any, ts: float, dur: float
    ) -> None:
        """A kernel, memcpy or memset: its device and stream from args, else pid and tid."""
        # every value first, then the appends: the parallel arrays stay aligned
        v = args.get("device", pid)
        device = v if type(v) is int and -_I64 < v < _I64 else _int(v, 0)
        v = args.get("stream", tid)
        stream = v if type(v) is int and -_I64 < v < _I64 else _int(v, 0)
        v = args.get("correlation", -1)
        corr = v if type(v) is int and -_I64 < v < _I64 else _int(v)
        dev = self.data.device
        dev.name.append(nid)
        dev.cat.append(code)
        dev.device.append(device)
        dev.stream.append(stream)
        dev.ts.append(ts)
        dev.dur.append(dur)
        dev.corr.append(corr)

    def _range(self, nid: int, kind: int, args: dict, thread: tuple, ts: float, dur: float) -> None:
        """An operator or annotation range, with its input shapes interned when recorded."""
        data = self.data
        th = data.threads.ids.get(thread)
        sid = -1
        if "Input Dims" in args:
            vals = [args.get(k) for k in SHAPE_KEYS]
            key = str(vals)
            sid = self.shape_keys.get(key, -1)
            if sid < 0:
                sid = self.shape_keys[key] = data.shapes(_freeze(vals))
        rg = data.ranges
        rg.name.append(nid)
        rg.kind.append(kind)
        rg.thread.append(data.threads(thread) if th is None else th)
        rg.ts.append(ts)
        rg.dur.append(dur)
        rg.shape.append(sid)

    def _host_call(self, nid: int, args: dict, thread: tuple, ts: float, dur: float) -> None:
        """A runtime or driver call, with its correlation id (-1 when absent)."""
        data = self.data
        th = data.threads.ids.get(thread)
        v = args.get("correlation", -1)
        corr = v if type(v) is int and -_I64 < v < _I64 else _int(v)
        rt = data.runtime
        rt.name.append(nid)
        rt.thread.append(data.threads(thread) if th is None else th)
        rt.ts.append(ts)
        rt.dur.append(dur)
        rt.corr.append(corr)
