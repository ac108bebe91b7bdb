"""Nsight Systems SQLite exports read into the timeline's columns (reader.TraceData), so every
timeline analysis and view works on them as on a Kineto trace.

Read through `sqlite3`, read-only: SQL does the joins and sums it can (name lookups, copy
kinds and bytes), and rows come in chunks of CHUNK straight into typed arrays, so no event is
ever a Python object beyond its chunk. Times become microseconds from the capture's start (the
Kineto unit). Kernels tie to launch calls by correlationId within one process: the reader
makes the id unique across processes (process id << 32 | correlationId). NVTX ranges become
host ranges: an emit_nvtx operator marker (nvtx_ops) a `cpu_op` with its input shapes, any
other range an annotation. Schema facts and the versions they were checked on: nsys_schema.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from perfsuite.safeio import open_regular
from perfsuite.traces import nsys_schema as S
from perfsuite.traces.nvtx_ops import ASSUMED_DTYPE, parse_marker, shape_description
from perfsuite.traces.reader import (
    DeviceEvents,
    RangeEvents,
    RuntimeEvents,
    TraceData,
    TraceError,
)

CHUNK = 1 << 16
NS_PER_US = 1000.0


@dataclass
class CopyKindStat:
    """Copies of one kind (HtoD, DtoH, DtoD, PtoP, Unified ...): an SQL sum over the file."""

    kind: str
    count: int
    bytes: int
    total_s: float


@dataclass
class NsysTraceData(TraceData):
    """A TraceData read from an nsys export, with what the export says beyond Kineto's
    columns: product and schema versions, per-kind copy totals, and the reader's notes."""

    nsys_version: str = ""
    schema_version: str = ""
    copies: list[CopyKindStat] = field(default_factory=list)
    reader_notes: list[str] = field(default_factory=list)


def is_sqlite(path: str | os.PathLike[str]) -> bool:
    """True when the file starts with SQLite's header (whatever its name)."""
    try:
        with open_regular(path, TraceError) as fh:
            return fh.read(len(S.SQLITE_MAGIC)) == S.SQLITE_MAGIC
    except TraceError:
        return False


def _check_size(p: Path) -> None:
    """A file shorter than the page count its header states was cut off (a copy that stopped,
    a full disk): refused before SQLite reads garbage or an empty table from it."""
    with open_regular(p, TraceError) as fh:
        head = fh.read(100)
        size = os.fstat(fh.fileno()).st_size
    if len(head) < 100:
        raise TraceError(f"{p}: truncated SQLite file ({size} bytes, shorter than its header)")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96]  # the header's page count is current
    if valid and pages and size < page * pages:
        raise TraceError(
            f"{p}: truncated SQLite file ({size} bytes; its header says {page * pages})"
        )


def _connect(p: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(p.resolve()))}?mode=ro&immutable=1"
    try:
        return sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise TraceError(f"{p}: cannot open as SQLite: {exc}") from None


class _Export:
    """An open export: its tables and columns, queried with errors as one-line TraceErrors."""

    def __init__(self, p: Path, con: sqlite3.Connection) -> None:
        self.p, self.con = p, con
        rows = self.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        self.tables = {r[0] for r in rows}
        self._columns: dict[str, set[str]] = {}

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.con.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise TraceError(f"{self.p}: not a readable SQLite database ({exc})") from None

    def chunks(self, sql: str) -> Iterator[list[tuple]]:
        try:
            cur = self.con.execute(sql)
            while rows := cur.fetchmany(CHUNK):
                yield rows
        except sqlite3.Error as exc:
            raise TraceError(f"{self.p}: not a readable SQLite database ({exc})") from None

    def int_chunks(self, table: str, exprs: list[str]) -> Iterator[np.ndarray]:
        """Integer expressions over `table`, CHUNK rows at a time, as (rows, len(exprs)) int64
        arrays. Each column of a chunk comes as one group_concat text that numpy parses in C,
        about twice as fast as row tuples; the aggregates of one query see the same rows in
        the same order, so the columns stay aligned (NULLs must be COALESCEd: group_concat
        skips them). A value that is not an integer is a TraceError naming the table."""
        count, lo, hi = self.query(f"SELECT COUNT(*), MIN(rowid), MAX(rowid) FROM {table}")[0]
        if not count:
            return
        if hi - lo >= 2 * count + CHUNK:  # sparse rowids: row tuples, not empty ranges
            for rows in self.chunks(f"SELECT {', '.join(exprs)} FROM {table}"):
                yield self._ints(table, rows)
            return
        concat = ", ".join(f"group_concat({e})" for e in exprs)
        sql = f"SELECT COUNT(*), {concat} FROM {table} WHERE rowid >= ? AND rowid < ?"
        for start in range(lo, hi + 1, CHUNK):
            n, *texts = self.query(sql, (start, start + CHUNK))[0]
            if n:
                yield np.column_stack([self._parse(table, t, n) for t in texts])

    def _parse(self, table: str, text: str | None, n: int) -> np.ndarray:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                col = np.fromstring(text or "", dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            col = None
        if col is None or len(col) != n:
            raise TraceError(f"{self.p}: field {table}: a value that is not an integer, or NULL")
        return col

    def _ints(self, table: str, rows: list[tuple]) -> np.ndarray:
        try:
            return np.array(rows, dtype=np.int64)
        except (ValueError, TypeError, OverflowError):
            raise TraceError(
                f"{self.p}: field {table}: a value that is not an integer, or NULL"
            ) from None

    def columns(self, table: str) -> set[str]:
        if table not in self._columns:
            self._columns[table] = {r[1] for r in self.query(f'PRAGMA table_info("{table}")')}
        return self._columns[table]

    def usable(self, table: str) -> bool:
        """The table is there; a table without a column the reader needs is a TraceError."""
        if table not in self.tables:
            return False
        missing = [c for c in S.REQUIRED[table] if c not in self.columns(table)]
        if missing:
            raise TraceError(
                f"{self.p}: field {table}.{missing[0]}: missing (not an nsys export "
                f"this reader knows; checked on {S.CHECKED_ON})"
            )
        return True


def _meta(ex: _Export) -> dict[str, str]:
    """The export's metadata rows; refuses a file that is not an nsys export or whose schema
    is newer than the reader knows."""
    table = next((t for t in S.META_TABLES if t in ex.tables), None)
    if table is None:
        raise TraceError(
            f"{ex.p}: field META_DATA_EXPORT: missing (an SQLite file, but not an Nsight "
            "Systems export: `nsys export --type sqlite REPORT.nsys-rep` writes one)"
        )
    meta = {str(k): str(v) for k, v in ex.query(f"SELECT name, value FROM {table}")}
    version = meta.get("EXPORT_SCHEMA_VERSION", "")
    major = version.split(".")[0]
    if not major.isdigit():
        raise TraceError(
            f"{ex.p}: field {table}.EXPORT_SCHEMA_VERSION: missing or not a version ({version!r})"
        )
    if int(major) not in S.KNOWN_SCHEMA_MAJORS:
        raise TraceError(
            f"{ex.p}: field {table}.EXPORT_SCHEMA_VERSION: {version} is a schema this reader "
            f"does not know (it reads 2.x and 3.x, checked on {S.CHECKED_ON})"
        )
    return meta


class _Ids:
    """StringIds and globalTids mapped to the TraceData's interned ids, a chunk at a time."""

    def __init__(self, ex: _Export, data: TraceData) -> None:
        self.ex, self.data = ex, data
        self.names: dict[int, int] = {}
        self.threads: dict[int, int] = {}

    def _strings(self, ids: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            marks = ",".join("?" * len(part))
            out.update(
                self.ex.query(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", tuple(part))
            )
        return out

    def name_ids(self, string_ids: np.ndarray, rename: Callable[[str], str] = str) -> np.ndarray:
        uniq, inv = np.unique(string_ids, return_inverse=True)
        new = [int(u) for u in uniq.tolist() if int(u) not in self.names]
        if new:
            text = self._strings(new)
            for u in new:
                self.names[u] = self.data.names(rename(text.get(u, f"[string {u}]")))
        return np.array([self.names[int(u)] for u in uniq.tolist()], np.int64)[inv]

    def thread_ids(self, global_tids: np.ndarray) -> np.ndarray:
        uniq, inv = np.unique(global_tids, return_inverse=True)
        out = []
        for u in uniq.tolist():
            th = self.threads.get(u)
            if th is None:
                th = self.threads[u] = self.data.threads((S.pid_of(u), S.tid_of(u)))
            out.append(th)
        return np.array(out, np.int64)[inv]


class _Window:
    lo = float("inf")
    hi = float("-inf")
    negative = 0

    def times(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ts, dur) in microseconds; an end before its start is a zero-length event."""
        ts = start / NS_PER_US
        dur = (end - start) / NS_PER_US
        bad = dur < 0
        if bad.any():
            self.negative += int(bad.sum())
            dur[bad] = 0.0
        if len(ts):
            self.lo = min(self.lo, float(ts.min()))
            self.hi = max(self.hi, float((ts + dur).max()))
        return ts, dur


def _append(arr: Any, values: np.ndarray) -> None:
    arr.frombytes(np.ascontiguousarray(values, dtype=np.dtype(arr.typecode)).tobytes())


def _corr(global_id: np.ndarray, corr: np.ndarray) -> np.ndarray:
    """correlationId made unique across processes; -1 where there is none."""
    out = ((global_id >> 24) & 0xFFFFFF) << 32 | (corr & 0xFFFFFFFF)
    return np.where(corr >= 0, out, -1)


def _device_exprs(ex: _Export, table: str) -> list[str]:
    """start, end, device, stream, correlation, globalPid, then the name: a string id (kernels)
    or the copy kind, source and destination memory kinds (copies; memsets: memory kind)."""
    cols = ex.columns(table)
    if table == S.KERNEL:
        extra = ["demangledName", "-1", "-1"]
    elif table == S.MEMCPY:
        src = "srcKind" if "srcKind" in cols else "-1"
        dst = "dstKind" if "dstKind" in cols else "-1"
        extra = ["copyKind", f"COALESCE({src}, -1)", f"COALESCE({dst}, -1)"]
    else:
        extra = [f"COALESCE({'memKind' if 'memKind' in cols else '-1'}, -1)", "-1", "-1"]
    return [
        "start",
        "end",
        "deviceId",
        "streamId",
        "COALESCE(correlationId, -1)",
        "COALESCE(globalPid, 0)",
        *extra,
    ]


def _synthetic_names(data: TraceData, code: int, kinds: np.ndarray, known: dict) -> np.ndarray:
    """Name ids of copies (`Memcpy HtoD (Pageable -> Device)`) or memsets from their kinds,
    one name per distinct (kind, source, destination)."""
    uniq, inv = np.unique(kinds, axis=0, return_inverse=True)
    ids = []
    for k in map(tuple, uniq.tolist()):
        if k not in known:
            known[k] = data.names(S.copy_name(*k) if code == 1 else S.memset_name(k[0]))
        ids.append(known[k])
    return np.array(ids, np.int64)[inv.reshape(-1)]


def _read_device(ex: _Export, data: TraceData, ids: _Ids, win: _Window, progress: Any) -> int:
    dev: DeviceEvents = data.device
    n = 0
    for code, table in enumerate(S.DEVICE_TABLES):
        if not ex.usable(table):
            continue
        known: dict[tuple[int, ...], int] = {}
        for a in ex.int_chunks(table, _device_exprs(ex, table)):
            ts, dur = win.times(a[:, 0], a[:, 1])
            if code == 0:
                name = ids.name_ids(a[:, 6])
            else:
                name = _synthetic_names(data, code, a[:, 6:9], known)
            _append(dev.name, name)
            _append(dev.cat, np.full(len(a), code))
            _append(dev.device, a[:, 2])
            _append(dev.stream, a[:, 3])
            _append(dev.ts, ts)
            _append(dev.dur, dur)
            _append(dev.corr, _corr(a[:, 5], a[:, 4]))
            n += len(a)
            if progress is not None:
                progress(n)
    return n


def _read_runtime(ex: _Export, data: TraceData, ids: _Ids, win: _Window, progress: Any) -> int:
    if not ex.usable(S.RUNTIME):
        return 0
    rt: RuntimeEvents = data.runtime
    n = 0
    exprs = ["start", "end", "COALESCE(globalTid, 0)", "COALESCE(correlationId, -1)", "nameId"]
    for a in ex.int_chunks(S.RUNTIME, exprs):
        ts, dur = win.times(a[:, 0], a[:, 1])
        _append(rt.name, ids.name_ids(a[:, 4], S.runtime_name))
        _append(rt.thread, ids.thread_ids(a[:, 2]))
        _append(rt.ts, ts)
        _append(rt.dur, dur)
        _append(rt.corr, _corr(a[:, 2], a[:, 3]))
        n += len(a)
        if progress is not None:
            progress(n)
    return n


def _read_syncs(ex: _Export, data: TraceData) -> int:
    if not ex.usable(S.SYNC):
        return 0
    n = 0
    for rows in ex.chunks(f"SELECT deviceId, streamId, start, end FROM {S.SYNC}"):
        for device, stream, start, end in rows:
            data.syncs.append(
                (int(device), int(stream), start / NS_PER_US, max(end - start, 0) / NS_PER_US)
            )
        n += len(rows)
    return n


def _read_nvtx(ex: _Export, data: NsysTraceData, ids: _Ids, win: _Window) -> int:
    """NVTX push/pop and start/end ranges as host ranges; ranges that never closed are counted
    in a note and left out."""
    if not ex.usable(S.NVTX):
        return 0
    types = ",".join(str(t) for t in S.NVTX_RANGE_TYPES)
    join = "LEFT JOIN StringIds s ON s.id = e.textId" if "textId" in ex.columns(S.NVTX) else ""
    text = "COALESCE(e.text, s.value, '')" if join else "COALESCE(e.text, '')"
    sql = (
        f"SELECT e.start, e.end, COALESCE(e.globalTid, 0), {text} FROM {S.NVTX} e {join} "
        f"WHERE e.eventType IN ({types})"
    )
    rg: RangeEvents = data.ranges
    shape_ids: dict[tuple, int] = {}
    n = open_ranges = ops_without_shapes = 0
    for rows in ex.chunks(sql):
        closed = [r for r in rows if r[1] is not None]
        open_ranges += len(rows) - len(closed)
        if not closed:
            continue
        a = np.array([r[:3] for r in closed], dtype=np.int64)
        ts, dur = win.times(a[:, 0], a[:, 1])
        kinds, names, shapes = [], [], []
        for r in closed:
            op = parse_marker(r[3])
            if op is None:
                kinds.append(1)
                names.append(data.names(r[3]))
                shapes.append(-1)
                continue
            kinds.append(0)
            names.append(data.names(op.name))
            if op.sizes is None:
                ops_without_shapes += 1
                shapes.append(-1)
                continue
            desc = shape_description(op.sizes)
            sid = shape_ids.get(desc)
            if sid is None:
                sid = shape_ids[desc] = data.shapes(desc)
            shapes.append(sid)
        _append(rg.name, np.array(names, np.int64))
        _append(rg.kind, np.array(kinds, np.int64))
        _append(rg.thread, ids.thread_ids(a[:, 2]))
        _append(rg.ts, ts)
        _append(rg.dur, dur)
        _append(rg.shape, np.array(shapes, np.int64))
        n += len(closed)
    if open_ranges:
        data.reader_notes.append(
            f"{open_ranges} NVTX range(s) never closed (no end in {S.NVTX}): left out of the "
            "ranges and their GPU projection"
        )
    if shape_ids:
        data.reader_notes.append(
            "emit_nvtx markers give input sizes but no dtypes: modeled bytes assume "
            f"{ASSUMED_DTYPE} (4-byte) tensors; FLOPs do not depend on it"
        )
    if ops_without_shapes:
        data.reader_notes.append(
            f"{ops_without_shapes} emit_nvtx operator range(s) without sizes (record_shapes "
            "off): no FLOPs for them"
        )
    return n + open_ranges


def _copies(ex: _Export) -> list[CopyKindStat]:
    """Copies per kind, summed by SQL."""
    if S.MEMCPY not in ex.tables:
        return []
    rows = ex.query(
        f"SELECT copyKind, COUNT(*), SUM(bytes), SUM(MAX(end - start, 0)) FROM {S.MEMCPY} "
        "GROUP BY copyKind ORDER BY copyKind"
    )
    return [
        CopyKindStat(S.COPY_KINDS.get(k, f"kind {k}"), int(c), int(b or 0), (t or 0) / 1e9)
        for k, c, b, t in rows
    ]


def _gpu_properties(ex: _Export) -> list[dict[str, Any]]:
    """TARGET_INFO_GPU as Kineto's deviceProperties (first row per device id), plus the clock
    and memory bandwidth nsys records."""
    if S.GPU_INFO not in ex.tables:
        return []
    want = (
        "id",
        "name",
        "smCount",
        "clockRate",
        "memoryBandwidth",
        "totalMemory",
        "computeMajor",
        "computeMinor",
    )
    have = [c for c in want if c in ex.columns(S.GPU_INFO)]
    if "id" not in have:
        return []
    out: dict[int, dict[str, Any]] = {}
    for row in ex.query(f"SELECT {', '.join(have)} FROM {S.GPU_INFO}"):
        r = dict(zip(have, row, strict=True))
        out.setdefault(
            int(r["id"]),
            {
                "id": int(r["id"]),
                "name": r.get("name"),
                "numSms": r.get("smCount"),
                "clockRateHz": r.get("clockRate"),
                "memoryBandwidthBytesPerS": r.get("memoryBandwidth"),
                "totalGlobalMem": r.get("totalMemory"),
                "computeMajor": r.get("computeMajor"),
                "computeMinor": r.get("computeMinor"),
            },
        )
    return list(out.values())


def read_nsys(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None
) -> NsysTraceData:
    """Read an `nsys export --type sqlite` file (schema 2.x or 3.x) into timeline columns.
    Files that are not such exports, newer schemas and truncated or corrupt files are
    TraceErrors of one line; an export without kernels reads with a note saying so."""
    p = Path(path)
    _check_size(p)
    con = _connect(p)
    try:
        ex = _Export(p, con)
        meta = _meta(ex)
        if "StringIds" not in ex.tables:
            raise TraceError(
                f"{p}: field StringIds: missing (every nsys export has the table of names)"
            )
        data = NsysTraceData(
            path=str(p),
            metadata={"deviceProperties": _gpu_properties(ex)},
            nsys_version=meta.get("EXPORT_PRODUCT_VERSION", ""),
            schema_version=meta.get("EXPORT_SCHEMA_VERSION", ""),
        )
        data.backend = f"sqlite3 (nsys {data.nsys_version}, export schema {data.schema_version})"
        ids, win = _Ids(ex, data), _Window()
        n_device = _read_device(ex, data, ids, win, progress)
        after = None if progress is None else (lambda n: progress(n_device + n))
        counts = {
            "kernel+memcpy+memset": n_device,
            "runtime": _read_runtime(ex, data, ids, win, after),
            "nvtx": _read_nvtx(ex, data, ids, win),
            "sync": _read_syncs(ex, data),
        }
        data.copies = _copies(ex)
    finally:
        con.close()
    if S.KERNEL not in ex.tables:
        there = ", ".join(f"{v} {k}" for k, v in counts.items() if v) or "no events"
        data.reader_notes.append(
            f"no {S.KERNEL} table: the capture traced no CUDA kernels (CPU only, or "
            f"`--trace` without cuda); what is there: {there}"
        )
    if not any(counts.values()):
        raise TraceError(f"{p}: no events (no kernel, copy, runtime call or NVTX range rows)")
    data.events_by_phase = {k: v for k, v in counts.items() if v}
    data.events_total = sum(counts.values())
    data.negative_durations = win.negative
    data.window = (win.lo, win.hi) if win.lo <= win.hi else None
    return data
