"""The trace reader's fast path (msgspec, chunks, worker processes) and its column cache give
exactly what the reference path (ijson, event by event) gives: every column, interner and
counter, and every figure of `perfsuite timeline --json`."""

from __future__ import annotations

import gzip
import io
import json
import re
from array import array
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfsuite.cli import main
from perfsuite.traces import fastread, reader
from perfsuite.traces.reader import TraceData, TraceError, read_trace
from tests.conftest import extract_h100_run, shared_path
from tests.test_fuzz import FUZZ, events

pytestmark = pytest.mark.skipif(not fastread.available(), reason="msgspec not installed")

MEMORY_FIXTURE = Path(__file__).parent / "fixtures" / "timeline" / "cpu_profile_memory.json.gz"


def _value(v: Any) -> Any:
    """Comparable form: arrays by typecode and bytes (NaN and -0.0 compare exactly)."""
    if isinstance(v, array):
        return (v.typecode, v.tobytes())
    if isinstance(v, reader.Interner):
        return (v.values, v.ids)
    if hasattr(v, "__dataclass_fields__"):
        return {f.name: _value(getattr(v, f.name)) for f in fields(v)}
    return v


def assert_same(got: TraceData, ref: TraceData) -> None:
    for f in fields(TraceData):
        if f.name in ("backend", "path"):
            continue
        a, b = _value(getattr(got, f.name)), _value(getattr(ref, f.name))
        assert repr(a) == repr(b), f"TraceData.{f.name} differs"


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few KB, so that small traces have many, each decoded on its own."""
    monkeypatch.setattr(fastread, "CHUNK_BYTES", 2048)
    monkeypatch.setattr(fastread, "MAX_PENDING_BYTES", 1 << 20)


def _outcome(path: Path, **kw: Any) -> TraceData | str:
    try:
        return read_trace(path, **kw)
    except TraceError as exc:
        return str(exc)


def read_every_way(path: Path, monkeypatch, tmp_path: Path) -> TraceData | None:
    """Reference, fast in-process, fast with 2 workers, cache write and cache hit: all equal
    (or all the same one-line error; then None)."""
    ref = _outcome(path, fast=False, cache=False)
    fast = _outcome(path, fast=True, cache=False)
    with monkeypatch.context() as m:
        m.setattr(reader, "PARALLEL_MIN_BYTES", 0)
        m.setenv("PERFSUITE_TRACE_WORKERS", "2")
        parallel = _outcome(path, fast=True, cache=False)
    if isinstance(ref, str):
        assert fast == ref and parallel == ref
        return None
    assert_same(fast, ref)
    assert_same(parallel, ref)
    copy = tmp_path / ("cached-" + path.name)
    copy.write_bytes(path.read_bytes())
    with monkeypatch.context() as m:
        m.setattr(reader, "CACHE_MIN_BYTES", 0)
        first = read_trace(copy, cache=True)
        assert "columns cached in" in first.backend
        hit = read_trace(copy, cache=True)
        assert hit.backend.startswith("cache ")
    assert_same(hit, ref)
    return fast


def _shared_traces() -> list[str]:
    folder = shared_path("traces")
    return sorted(p.name for p in folder.glob("*.json.gz"))


@pytest.mark.parametrize("name", _shared_traces() if fastread.available() else [])
def test_shared_traces_read_the_same_every_way(name, monkeypatch, tmp_path, small_chunks):
    data = read_every_way(shared_path("traces", name), monkeypatch, tmp_path)
    assert data.backend.startswith("msgspec")  # the fast path did read them
    assert data.events_total > 0


def test_h100_cuda_trace_reads_the_same_every_way(monkeypatch, tmp_path, small_chunks):
    run = extract_h100_run(tmp_path / "h100")
    (trace,) = run.glob("**/trace.json.gz")
    data = read_every_way(trace, monkeypatch, tmp_path)
    assert len(data.device.ts) == 654 and len(data.runtime.ts) > 0


def test_memory_fixture_reads_the_same_every_way(monkeypatch, tmp_path, small_chunks):
    data = read_every_way(MEMORY_FIXTURE, monkeypatch, tmp_path)
    assert len(data.memory.ts) == 11


def _kernel(i: int, **over: Any) -> dict[str, Any]:
    ev = {"ph": "X", "cat": "kernel", "name": f"k{i % 3}", "pid": 0, "tid": 7, "ts": 10 * i,
          "dur": 4, "args": {"device": 0, "stream": 7, "correlation": i}}  # fmt: skip
    return {**ev, **over}


def _op(i: int, **over: Any) -> dict[str, Any]:
    ev = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10 * i,
          "dur": 9, "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "float"],
          "Concrete Inputs": ["", ""]}}  # fmt: skip
    return {**ev, **over}


# Events the strict decoder refuses, or that the reference code counts or converts.
ODD_EVENTS: list[Any] = [
    _kernel(1, ts="12"),  # a number as a string
    _kernel(2, dur=None),
    _kernel(3, args=[1, 2]),  # args not an object
    _kernel(4, args={"device": "0x1", "stream": True, "correlation": 2.5}),
    _kernel(5, pid=[1]),  # malformed
    _kernel(6, cat={"a": 1}),  # malformed
    _kernel(7, ph=None),
    {"cat": "kernel"},  # no phase: malformed
    _kernel(8, dur=-3),  # negative duration
    _kernel(9, ts=1e18),  # beyond any clock
    _kernel(10, dur=1e14),
    _kernel(12, name=None),
    _kernel(15, ts=None),  # no timestamp: malformed, counted
    _kernel(13, name=17),
    _kernel(14, cat="Memcpy", args={}),
    _kernel(16, args={"correlation": 2**62 + 1}),
    _op(17, args={"Input Dims": [[1.0, 2]], "Input type": None}),
    _op(18, args={"Input Dims": [[1, 2]], "Concrete Inputs": [{"x": 1}]}),
    _op(19, args={"Input Dims": [[1, 2.0]]}),
    _op(20, pid="w", tid=None),
    _op(21, cat="user_annotation", name="ProfilerStep#3", args={}),
    {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 3,
        "ts": 5,
        "dur": 2,
        "args": {"correlation": "4"},
    },
    {
        "ph": "X",
        "cat": "cuda_sync",
        "name": "cudaDeviceSynchronize",
        "pid": 1,
        "tid": 3,
        "ts": 6,
        "dur": 2,
        "args": {"device": 0, "stream": -1},
    },
    {
        "ph": "X",
        "cat": "cuda_profiler_range",
        "name": "r",
        "pid": 0,
        "tid": 0,
        "ts": 1,
        "dur": 1,
        "args": {"metric": 1.5},
    },
    {
        "ph": "i",
        "name": "[memory]",
        "pid": 1,
        "tid": 2,
        "ts": 3,
        "args": {"Bytes": "-4", "Addr": True},
    },
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 3, "args": None},
    {"ph": "M", "name": "thread_name", "pid": "Spans", "tid": 1.5, "args": {"name": "x"}},
    {"ph": "s", "id": 3, "pid": 1, "tid": 2, "ts": 3, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "kernel", "name": "dup", "ts": 1, "ts ": 2, "args": {"device": 1}},
]


# Events of every kind a Kineto trace holds, with odd values in fields no path reads.
PHASE_EVENTS: list[Any] = [
    _kernel(1),
    {"ph": "s", "id": 3, "pid": 1, "tid": 2, "ts": "3", "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 3, "pid": 0, "tid": 7, "ts": 4, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "M", "name": "thread_name", "pid": "Spans", "tid": 1.5, "args": {"name": "x"}},
    {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 3, "args": {"Bytes": 4, "Addr": 5}},
    {"ph": "i", "name": "Iteration Start", "pid": 1, "tid": 2, "ts": 3, "s": "t", "dur": "x"},
    {"ph": "C", "name": "mem", "pid": 1, "ts": 5, "args": {"bytes": [1]}},
    _op(2),
]


def test_the_fast_path_decodes_every_phase_itself(tmp_path, monkeypatch):
    """Flow, metadata, instant, counter and memory events are decoded by the strict decoder
    (msgspec picks a class per phase), not handed to the reference code; a phase it does
    not know, or a "ph" that is missing, not a string or given twice differently, is."""
    cols = fastread.decode_chunk(json.dumps(PHASE_EVENTS).encode())
    assert cols is not None
    assert cols["phases"] == {"X": 2, "s": 1, "f": 1, "M": 1, "i": 2, "C": 1}
    assert list(cols["columns"]["memory.bytes"]) == [4]
    assert list(cols["columns"]["memory.addr"]) == [5]
    assert list(cols["columns"]["device.corr"]) == [1]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": PHASE_EVENTS * 40}))
    read_every_way(path, monkeypatch, tmp_path)
    kernel = json.dumps(_kernel(1))
    for odd in ('{"ph": "Q"}', '{"name": "x"}', '{"ph": null}', '{"ph": "X", "ph": "s"}'):
        assert fastread.decode_chunk(f"[{kernel}, {odd}]".encode()) is None, odd


def test_worker_processes_decode_the_chunks_themselves(small_chunks):
    """Each chunk is decoded in a worker from the shared slot it was copied to: every chunk
    comes back decoded (not refused, which the reference code would hide), with the columns
    a decode in this process gives."""
    text = json.dumps({"traceEvents": PHASE_EVENTS * 60}).encode()
    got: list[tuple[bytes, Any]] = []
    fastread.decoded(
        fastread.chunks(io.BytesIO(text), {}), 2, lambda t, cols: got.append((t(), cols))
    )
    assert len(got) > 3
    for chunk, cols in got:
        assert cols is not None
        ref = fastread.decode_chunk(b"[" + chunk + b"]")
        assert ref is not None
        for name, col in ref.pop("columns").items():
            assert bytes(cols["columns"][name]) == bytes(col), name
        assert {k: v for k, v in cols.items() if k != "columns"} == ref


# Events that make the whole file invalid for the reference reader: both paths must fail alike.
INVALID_EVENTS: list[Any] = [
    _kernel(11, ts=float("nan")),  # NaN is not JSON
    _kernel(15, args={"correlation": 10**20}),  # beyond int64: yajl refuses it
    _kernel(16, args={"Unknown": -(10**19)}),  # in a key no path reads
]


def _mixed(odd: Any) -> list[Any]:
    """Plain events around one odd event, so that it shares a chunk with normal ones."""
    return [_kernel(i) for i in range(0, 30)] + [odd] + [_op(i) for i in range(30, 60)]


@pytest.mark.parametrize("odd", ODD_EVENTS + INVALID_EVENTS)
def test_odd_event_reads_the_same(odd, tmp_path, monkeypatch, small_chunks):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": _mixed(odd)}, indent=1))
    read_every_way(path, monkeypatch, tmp_path)


def test_all_odd_events_in_one_file(tmp_path, monkeypatch, small_chunks):
    evs = [e for odd in ODD_EVENTS for e in _mixed(odd)]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump({"deviceProperties": [{"id": 0}], "traceEvents": evs, "traceName": "x"}, fh)
    data = read_every_way(path, monkeypatch, tmp_path)
    assert data.malformed >= 4 and data.negative_durations == 1 and data.beyond_reason == 2
    assert len(data.profiler_ranges) == 1 and len(data.syncs) == 1


LAYOUTS = {
    "bom": b'\xef\xbb\xbf{"traceEvents": [EVENTS]}',
    "bare list": b"[EVENTS]",
    "keys before and after": b'{"a": [1, {"b": "]"}], "traceEvents": [EVENTS], "z": "]x"}',
    "second list after": b'{"traceEvents": [EVENTS], "traceEvents": [EVENTS]}',
    "empty list": b'{"traceEvents": []}',
    "trailing comma": b'{"traceEvents": [EVENTS,]}',
    "trailing garbage": b'{"traceEvents": [EVENTS]} x',
    "truncated": b'{"traceEvents": [EVENTS',
    "string with a boundary": b'{"traceEvents": [EVENTS, {"ph": "X", "name": "a}, {b"}]}',
    "not a list": b'{"traceEvents": {"ph": "X"}}',
    "compact": b'{"traceEvents":[EVENTS]}',
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("gz", [False, True])
def test_file_layouts_read_the_same_or_fail_the_same(layout, gz, tmp_path, monkeypatch):
    monkeypatch.setattr(fastread, "CHUNK_BYTES", 256)
    evs = ",\n".join(json.dumps(e) for e in _mixed(_op(99, ts="3")))
    text = LAYOUTS[layout].replace(b"EVENTS", evs.encode())
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(text) if gz else text)
    outcomes = []
    for fast in (False, True):
        try:
            outcomes.append(read_trace(path, fast=fast, cache=False))
        except TraceError as exc:
            outcomes.append(str(exc))
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[0]
    else:
        assert_same(outcomes[1], outcomes[0])


@FUZZ
@given(evs=events)
def test_fast_path_equals_reference_on_arbitrary_events(tmp_path, evs):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": evs}, allow_nan=True))
    outcomes = []
    for fast in (False, True):
        try:
            outcomes.append(read_trace(path, fast=fast, cache=False))
        except TraceError as exc:
            outcomes.append(str(exc))
    if isinstance(outcomes[0], str):
        assert outcomes[1] == outcomes[0]
    else:
        assert_same(outcomes[1], outcomes[0])


def _timeline_json(path: Path, capsys) -> dict[str, Any]:
    assert main(["timeline", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for t in doc["traces"]:
        t.pop("reader_backend")
    return doc


def test_timeline_json_figures_are_the_same(tmp_path, monkeypatch, capsys, small_chunks):
    run = extract_h100_run(tmp_path / "h100")
    paths = [*sorted(shared_path("traces").glob("*.json.gz")), *run.glob("**/trace.json.gz")]
    monkeypatch.setattr(reader, "CACHE_MIN_BYTES", 0)
    for path in paths:
        copy = tmp_path / path.name
        copy.write_bytes(path.read_bytes())
        monkeypatch.setenv("PERFSUITE_TRACE_FAST", "0")
        monkeypatch.setenv("PERFSUITE_TRACE_CACHE", "0")
        ref = _timeline_json(copy, capsys)
        monkeypatch.setenv("PERFSUITE_TRACE_FAST", "1")
        assert _timeline_json(copy, capsys) == ref, path.name
        monkeypatch.setenv("PERFSUITE_TRACE_CACHE", "1")
        assert _timeline_json(copy, capsys) == ref, path.name  # writes the cache
        assert _timeline_json(copy, capsys) == ref, path.name  # reads it


def test_cache_is_invalidated_by_a_changed_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "CACHE_MIN_BYTES", 0)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _mixed(_kernel(1))}))
    assert read_trace(path).events_total == 61
    assert read_trace(path).backend.startswith("cache ")
    path.write_text(json.dumps({"traceEvents": _mixed(_kernel(1))[:-1]}))
    data = read_trace(path)
    assert not data.backend.startswith("cache ") and data.events_total == 60
    (tmp_path / "t.json.perfsuite-columns").write_bytes(b"PERFSUITE-COLUMNS\n\xff\xff")
    data = read_trace(path)  # a broken cache is a miss, and is rewritten
    assert not data.backend.startswith("cache ") and data.events_total == 60
    assert read_trace(path).backend.startswith("cache ")


def test_deep_nesting_in_an_event_fails_as_the_reference_does(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    text = '{"traceEvents": [{"ph": "X", "args": {"x": ' + deep + "}}]}"
    path = tmp_path / "t.json"
    path.write_text(text)
    errors = []
    for fast in (False, True):
        with pytest.raises(TraceError) as exc:
            read_trace(path, fast=fast, cache=False)
        errors.append(str(exc.value))
    assert errors[0] == errors[1] and "nested deeper" in errors[0]


def test_cache_whose_columns_do_not_line_up_is_a_miss(tmp_path, monkeypatch):
    from perfsuite.traces import colcache

    monkeypatch.setattr(reader, "CACHE_MIN_BYTES", 0)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _mixed(_kernel(1))}))
    ref = read_trace(path, fast=False, cache=False)
    read_trace(path)
    header, columns = colcache.load(path, path.stat())
    columns["device.ts"].pop()  # one column shorter than its table's others
    header = {k: v for k, v in header.items() if k not in ("key", "columns")}
    colcache.save(path, path.stat(), header, columns)
    data = read_trace(path)
    assert not data.backend.startswith("cache ")
    assert_same(data, ref)


def test_a_process_running_threads_reads_without_forking(monkeypatch):
    """The pool is forked; a child forked while another thread holds a lock can wait forever,
    so a process with other threads reads in one process (the same result)."""
    import threading

    monkeypatch.setenv("PERFSUITE_TRACE_WORKERS", "2")
    assert fastread.worker_count() == (2 if threading.active_count() == 1 else 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert fastread.worker_count() == 1
    finally:
        stop.set()
        other.join()


def test_the_worker_pool_reads_every_shared_trace_the_same():
    """The forked pool itself, in a fresh single-threaded process (a test runner's own threads
    make the reader skip the pool): 2 workers, small chunks, equal to the reference path."""
    import subprocess
    import sys

    paths = sorted(shared_path("traces").glob("*.json.gz"))
    code = (
        "import sys, threading\n"
        "from tests.test_trace_reader_paths import assert_same\n"
        "from perfsuite.traces import fastread, reader\n"
        "fastread.CHUNK_BYTES = 2048\n"
        "fastread.MAX_PENDING_BYTES = 1 << 20\n"
        "reader.PARALLEL_MIN_BYTES = 0\n"
        "used = []\n"
        "real = fastread.decoded\n"
        "def spy(pieces, workers, on_chunk):\n"
        "    used.append(workers)\n"
        "    return real(pieces, workers, on_chunk)\n"
        "fastread.decoded = spy\n"
        "for path in sys.argv[1:]:\n"
        "    assert threading.active_count() == 1\n"
        "    ref = reader.read_trace(path, fast=False, cache=False)\n"
        "    assert_same(reader.read_trace(path, fast=True, cache=False), ref)\n"
        "print(used)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=root,
        env={**__import__("os").environ, "PERFSUITE_TRACE_WORKERS": "2"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert set(json.loads(out.stdout)) == {2}, out.stdout


def _gz_text() -> bytes:
    evs = [e for odd in ODD_EVENTS[:6] for e in _mixed(odd)]
    return json.dumps({"schemaVersion": 1, "traceEvents": evs}).encode()


GZ_STREAMS = {
    "one member": lambda t: gzip.compress(t),
    "two members": lambda t: gzip.compress(t[:5000], 1) + gzip.compress(t[5000:], 9),
    "corrupt deflate": lambda t: (lambda z: z[:40] + bytes(64) + z[104:])(gzip.compress(t)),
    "truncated": lambda t: gzip.compress(t)[:-20],
    "bad crc": lambda t: (lambda z: z[:-8] + bytes(4) + z[-4:])(gzip.compress(t)),
}


@pytest.mark.skipif(fastread._igzip is None, reason="python-isal not installed")
@pytest.mark.parametrize("case", list(GZ_STREAMS))
def test_isal_and_zlib_inflate_the_same_bytes(case, tmp_path):
    """ISA-L (the fast path's default) and zlib give the same bytes, and a damaged stream
    raises one of fastread.DECOMPRESS_ERRORS under both (the reader then falls back)."""
    path = tmp_path / "t.json.gz"
    path.write_bytes(GZ_STREAMS[case](_gz_text()))
    got = []
    for fast_gzip in (True, False):
        with open(path, "rb") as raw:
            stream = fastread.open_stream(raw, fast_gzip=fast_gzip)
            try:
                got.append(stream.read())
            except fastread.DECOMPRESS_ERRORS as exc:
                got.append(type(exc).__name__)
    if case in ("one member", "two members"):
        assert got[0] == got[1] == _gz_text()
    else:
        assert all(isinstance(g, str) for g in got)


@pytest.mark.parametrize("case", list(GZ_STREAMS))
def test_gzip_reads_the_same_with_isal_or_zlib(case, tmp_path, monkeypatch, small_chunks):
    path = tmp_path / "t.json.gz"
    path.write_bytes(GZ_STREAMS[case](_gz_text()))
    with_isal = read_every_way(path, monkeypatch, tmp_path)
    monkeypatch.setattr(fastread, "_igzip", None)
    with_zlib = read_every_way(path, monkeypatch, tmp_path)
    if with_isal is None:
        assert with_zlib is None
    else:
        assert_same(with_zlib, with_isal)


_LONG_RUN = re.compile(rb"[0-9]{19}")


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"1" * 18,
        b"1" * 19,
        b"9" * 40,
        b"x" + b"0" * 18 + b"x",
        b"x" + b"0" * 19,
        b"0" * 19 + b"x",
        b"1" * 9 + b"." + b"1" * 9,
        b"1" * 18 + b"/" + b"1" * 18 + b":" + b"1" * 18,  # the bytes either side of 0-9
        b'{"ts": 1695835535123456.789, "id": 1234567890123456789}',
        b'{"ts": 1695835535123456.789, "id": 123456789012345678}',
        b"\xd9\xa1" * 19,  # Arabic-Indic digits are not ASCII digits
    ],
)
def test_digit_run_scan_agrees_with_a_regex(text):
    assert fastread.has_long_digit_run(text) == bool(_LONG_RUN.search(text))


@given(st.binary(max_size=200), st.integers(0, 30), st.integers(0, 200))
def test_digit_run_scan_agrees_with_a_regex_anywhere(noise, run, pos):
    text = noise[:pos] + b"7" * run + noise[pos:]
    assert fastread.has_long_digit_run(text) == bool(_LONG_RUN.search(text))


@given(st.binary(max_size=200), st.integers(0, 30), st.integers(0, 200), st.integers(1, 40))
def test_digit_run_scan_sees_runs_across_its_blocks(noise, run, pos, block):
    """The scan takes the text a block at a time: a run that crosses a cut is still seen."""
    text = noise[:pos] + b"7" * run + noise[pos:]
    assert fastread.has_long_digit_run(text, block) == bool(_LONG_RUN.search(text))
