"""Bad traces and ncu CSVs: one-line errors or skipped events, never a traceback, a hang or a
memory blow-up."""

from __future__ import annotations

import gzip
import json
import os
import resource
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from perfsuite.analyzers.timeline import TraceError, analyze_trace, read_trace
from perfsuite.analyzers.timeline.roofline import _concrete
from perfsuite.counters import CountersError, load_counters
from perfsuite.counters.ncu_csv import read_ncu_csv


def _trace(tmp_path: Path, events: list[Any], name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _kernel(**over: Any) -> dict[str, Any]:
    ev = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10.0, "dur": 5.0}
    ev["args"] = {"device": 0, "stream": 7, "correlation": 1}
    ev.update(over)
    return ev


@pytest.mark.parametrize("gz", [False, True])
def test_nested_array_trace_fails_fast_with_bounded_memory(tmp_path, gz):
    body = b'{"traceEvents": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}"
    path = tmp_path / "nested.json"
    path.write_bytes(gzip.compress(body) if gz else body)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    with pytest.raises(TraceError, match="64-level limit") as info:
        read_trace(path)
    assert time.monotonic() - start < 5
    assert str(path) in str(info.value)
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 200_000  # the unguarded reader needed ~24 GB for this file


def test_fifo_trace_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "trace.json")
    got: list[str] = []

    def read() -> None:
        try:
            read_trace(tmp_path / "trace.json")
        except TraceError as exc:
            got.append(str(exc))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(10)
    assert got and "FIFO" in got[0]


def test_events_with_wrong_types_are_skipped_and_counted(tmp_path):
    events = [
        _kernel(),
        _kernel(ph=["X"]),
        _kernel(cat={"k": 1}),
        _kernel(pid=[0]),
        _kernel(tid={"a": 1}),
        _kernel(args=[1, 2]),  # non-dict args: read as no args
        _kernel(args={"device": 2**63 - 1, "stream": [1], "correlation": 1e300}),
        _kernel(ts="inf"),
        _kernel(dur="nan"),
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "pid": 1,
            "tid": 1,
            "ts": 1.0,
            "dur": 20.0,
            "args": {
                "Input Dims": [{"a": 1}, [2, 3]],
                "Input type": [[1], "float"],
                "Concrete Inputs": ["[" * 5000, "1e999999"],
            },
        },
        "not an event",
    ]
    path = _trace(tmp_path, events[:-1])
    data = read_trace(path)
    assert data.malformed == 5  # ph, cat, pid and tid of other types; ts "inf" (no timestamp)
    assert len(data.device.name) == 4  # the good kernel, args=list, huge ids, dur nan
    assert list(data.device.device) == [0, 0, 0, 0]  # 2**63 - 1 is no device id
    analysis = analyze_trace(data)
    assert any("malformed event(s) skipped" in n for n in analysis.notes)
    with pytest.raises(TraceError, match=r"traceEvents\[10\]: expected an object"):
        read_trace(_trace(tmp_path, events, "u.json"))


@pytest.mark.parametrize("number", ["1" + "0" * 30, "1e400"])
def test_numbers_beyond_range_are_one_line_errors(tmp_path, number):
    path = tmp_path / "big.json"
    path.write_text('{"traceEvents": [{"ph": "X", "ts": ' + number + "}]}")
    with pytest.raises(TraceError, match="not valid JSON"):
        read_trace(path)


def test_concrete_inputs_are_parsed_without_evaluation():
    assert _concrete("False") is False
    assert _concrete("2") == 2
    assert _concrete("[1, 1]") == [1, 1]
    assert _concrete("(1,)") == [1]
    assert _concrete("") is None
    assert _concrete("0.5") == 0.5
    deep = "[" * 100_000 + "]" * 100_000
    assert _concrete(deep) == deep  # kept as text, never parsed
    assert _concrete("[[1, 2], [3]]") == "[[1, 2], [3]]"
    assert _concrete("__import__('os')") == "__import__('os')"


def _mm_trace(tmp_path: Path, dims: Any, name: str = "mm.json") -> Path:
    """aten::mm with the given Input Dims launching one 20 µs kernel."""
    shapes = {"Input Dims": dims, "Input type": ["float", "float"], "Concrete Inputs": ["", ""]}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0.0,
         "dur": 100.0, "args": shapes},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10.0, "dur": 5.0, "args": {"correlation": 7}},
        _kernel(ts=50.0, dur=20.0, args={"device": 0, "stream": 7, "correlation": 7}),
    ]  # fmt: skip
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.mark.parametrize(
    "dims",
    [
        [[-5, 3], [3, 4]],  # modeled as -120 FLOP before
        [[-5, 3], [3, -4]],  # positive FLOP from nonsense shapes
        [[1e300, 1e300], [1e300, 1e300]],  # float dims: OverflowError traceback before
        [[2.5, 3], [3, 4]],
    ],
)
def test_roofline_drops_points_from_impossible_shapes(tmp_path, dims):
    a = analyze_trace(read_trace(_mm_trace(tmp_path, dims)))
    assert a.roofline == []
    assert sum("1 roofline point(s) dropped" in n for n in a.notes) == 1
    assert a.ops[0].device_time_s == pytest.approx(20e-6)  # the op itself is still there


def test_roofline_keeps_valid_shapes_and_notes_nothing(tmp_path):
    (pt,) = analyze_trace(read_trace(_mm_trace(tmp_path, [[5, 3], [3, 4]]))).roofline
    assert pt.flops == 2 * 5 * 3 * 4 and pt.bytes > 0


def test_roofline_int_overflow_is_dropped_not_raised(tmp_path, monkeypatch):
    """The pure-Python ijson backend reads 10**200 as an int; float(FLOP) then overflows."""
    import ijson

    import perfsuite.traces.reader as reader
    from perfsuite.analyzers.timeline.roofline import INVALID, op_work

    big = 10**200
    shape = (((big, big), (big, big)), ("float", "float"), ("", ""))
    assert op_work("aten::mm", shape) is INVALID  # OverflowError before
    monkeypatch.setattr(reader, "_ijson_backend", lambda: ijson.get_backend("python"))
    a = analyze_trace(read_trace(_mm_trace(tmp_path, [[big, big], [big, big]])))
    assert a.roofline == [] and any("roofline point(s) dropped" in n for n in a.notes)


RAW_HEADER = '"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum"\n'


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            '"Kernel Name","Metric Name","Metric Value"\n"k","m","1"\n',
            "column ID: missing",
        ),
        (
            '"ID","Kernel Name","Metric Name","Metric Value"\n"0","k","m","1"\n',
            "column Metric Unit: missing",
        ),
        (RAW_HEADER + '"0","' + "k" * 200_000 + '","1","2"\n', "longer than 131,072"),
        (RAW_HEADER + '"0","k","1e999","2"\n', "not a finite number"),
        (RAW_HEADER + '"0","k","1","2","3"\n', "5 fields, header has 4"),
        ('"x","Kernel Name2"\n"1","2"\n', "no ncu CSV header"),
        ('"ID","Kernel Name","a"\n"', "line 2: 1 fields, header has 3"),
    ],
)
def test_bad_ncu_csv_is_one_line_error(tmp_path, text, fragment):
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(CountersError) as info:
        read_ncu_csv(path)
    msg = str(info.value)
    assert fragment in msg and str(path) in msg and "\n" not in msg


def test_counters_source_that_is_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "c.csv")
    with pytest.raises(CountersError, match="FIFO"):
        load_counters(tmp_path / "c.csv")


def test_counters_on_a_nested_array_trace_fails_fast(tmp_path):
    path = tmp_path / "cupti.json"
    path.write_bytes(b'{"traceEvents": [' + b"[" * 200_000 + b"]" * 200_000 + b"]}")
    start = time.monotonic()
    with pytest.raises(CountersError, match="64-level limit"):
        load_counters(path)
    assert time.monotonic() - start < 5


def test_prices_file_that_is_a_fifo_or_nested_is_refused(tmp_path):
    from perfsuite.pricing import PriceError, load_prices

    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(PriceError, match="FIFO"):
        load_prices(tmp_path / "fifo.json")
    (tmp_path / "deep.json").write_text("[" * 10_000)
    with pytest.raises(PriceError, match="16-level limit"):
        load_prices(tmp_path / "deep.json")


@pytest.mark.parametrize(
    "text",
    ["[" * 50_000, '{"version": 1, "devices": []}', '{"version": 1, "devices": {"a": 5}}'],
)
def test_misshapen_peaks_cache_reads_as_empty(tmp_path, text):
    from perfsuite.ceilings.cache import CACHE_VERSION, device_entry, load_cache

    path = tmp_path / "peaks.json"
    path.write_text(text.replace('"version": 1', f'"version": {CACHE_VERSION}'))
    data = load_cache(path)
    assert data["devices"] == {}
    device_entry(data, "host", "cpu")  # usable afterwards


@pytest.mark.parametrize(
    ("rows", "fragment"),
    [
        ('[{"quantity": "peak float32", "measured": 1e999}]', "not a positive number"),
        ('[{"quantity": "peak float32", "measured": -1}]', "not a positive number"),
        ("[[1]]", r"rows\[0\]: expected an object"),
        ("[" * 100 + "]" * 100, "16-level limit"),
    ],
)
def test_bad_peaks_file_is_one_line_error(tmp_path, rows, fragment):
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs

    path = tmp_path / "peaks.json"
    path.write_text('{"rows": ' + rows + "}")
    with pytest.raises(PeaksFileError, match=fragment):
        peaks_file_roofs(path)


def test_counters_into_a_running_record_is_attached(tmp_path, make_record, capsys):
    """A run still training takes counters: record writers hold the folder's lock and keep
    attached sections (docs/record.md), so neither side loses the other's."""
    from perfsuite.cli import main
    from perfsuite.record import load_record, write_record

    write_record(tmp_path / "run", make_record([(1, 10.0, 0.5)]))  # status "running"
    csv = Path(__file__).parent / "fixtures" / "ncu" / "raw_page.csv"
    assert main(["counters", str(csv), "--into", str(tmp_path / "run"), "--steps", "1"]) == 0
    rec = load_record(tmp_path / "run")
    assert rec["counters"]["kernels"] and rec["evaluations"][0]["metrics"]["top1"] == 0.5


# -- binary and non-UTF-8 input: named as such, not as deep nesting ---------------------------

# A PNG-like header (0x89 is not UTF-8) before bracket-rich noise: the bracket count alone
# reads this as nesting far over 64 levels, as it did for a user's 20 KB of random bytes.
_BINARY = b"\x89PNG\r\n\x1a\n" + b"[{" * 100 + bytes(range(256)) * 40


@pytest.mark.parametrize("gz", [False, True])
def test_binary_trace_is_not_reported_as_deep_json(tmp_path, gz, capsys):
    from perfsuite.cli import main

    path = tmp_path / ("rnd.bin.gz" if gz else "rnd.bin")
    path.write_bytes(gzip.compress(_BINARY) if gz else _BINARY)
    want = f"{path}: not a JSON text (binary or not UTF-8: invalid byte at offset 0)"
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert str(info.value) == want
    assert main(["timeline", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"perfsuite: error: {want}"


@pytest.mark.parametrize(("bad", "what"), [(b"\xe9", "invalid byte"), (b"\x00", "NUL byte")])
def test_bad_byte_inside_a_trace_is_named_with_its_offset(tmp_path, bad, what):
    body = b'{"traceEvents": [{"ph": "X", "name": "caf' + bad + b'", "ts": 1}]}'
    path = tmp_path / "t.json"
    path.write_bytes(body)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    offset = body.index(bad)
    assert str(info.value) == (
        f"{path}: not a JSON text (binary or not UTF-8: {what} at offset {offset})"
    )


def test_utf8_split_across_reads_is_text_and_offsets_count_across_reads():
    import io

    from perfsuite.safeio import DepthGuard

    good = '{"traceEvents": [{"name": "café 中 🙂"}]}'.encode()
    guard = DepthGuard(io.BytesIO(good), "g.json", TraceError)
    assert b"".join(iter(lambda: guard.read(1), b"")) == good  # every character cut apart
    bad = good.replace("中".encode(), b"\xe4\xb8")  # a character missing its last byte
    guard = DepthGuard(io.BytesIO(bad), "b.json", TraceError)
    at = bad.index(b"\xe4")
    with pytest.raises(TraceError, match=rf"invalid byte at offset {at}\)$"):
        while guard.read(3):
            pass


def test_deep_nesting_in_real_json_text_is_still_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": [{"name": "é"}, ' + "[" * 65 + "]" * 65 + "]}")
    with pytest.raises(TraceError, match="JSON nested deeper than the 64-level limit"):
        read_trace(path)


def test_negative_durations_and_far_timestamps_are_said_not_dropped_silently(tmp_path):
    events = [
        _kernel(),
        _kernel(ts=20.0, dur=-3.0),
        _kernel(ts=1e279 / 1e6, dur=1.0),  # 1e279 ps
        _kernel(ts=30.0, dur=1e300),
    ]
    data = read_trace(_trace(tmp_path, events))
    assert (data.negative_durations, data.beyond_reason) == (1, 2)
    assert data.window == (10.0, 20.0)  # the far events do not stretch the window
    notes = analyze_trace(data).notes
    assert any(n.startswith("1 event(s) with a negative duration") for n in notes)
    assert any(n.startswith("2 event(s) skipped:") and "beyond 1e17 us" in n for n in notes)


def test_events_without_a_timestamp_are_counted_in_a_note(tmp_path):
    """The reference reader; every other path is held to it in test_trace_reader_paths."""
    events = [_kernel(), _kernel(ts=None), _kernel(ts="x"), _kernel(ts=20.0)]
    events.append({k: v for k, v in _kernel().items() if k != "ts"})
    data = read_trace(_trace(tmp_path, events), fast=False, cache=False)
    assert len(data.device.name) == 2 and data.malformed == 3
    (note,) = [n for n in analyze_trace(data).notes if "malformed event(s) skipped" in n]
    assert note.startswith("3 malformed") and "without a usable timestamp" in note
