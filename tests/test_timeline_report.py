"""The report's timeline section: what it says about a trace without device timings, the idle
rows it shows, and that an analysis failure stays inside the section."""

from __future__ import annotations

import shutil

import pytest

from perfsuite.record import load_record, write_record
from perfsuite.report.timeline_section import timeline_section
from tests.conftest import shared_path
from tests.test_timeline_synthetic import scenario, write_trace

CUPTI = "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz"
CPU = "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def _record_with(tmp_path, make_record, trace, **timeline) -> dict:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(trace, run_dir / "trace.json.gz")
    timeline = {"trace": "trace.json.gz", "tool": "torch.profiler", "steps": 1, **timeline}
    rec = make_record(timeline=timeline)
    write_record(run_dir, rec)
    return load_record(run_dir)


@pytest.mark.shared
def test_cupti_trace_is_not_called_cpu_only(tmp_path, make_record):
    html = timeline_section(_record_with(tmp_path, make_record, shared_path("traces", CUPTI)))
    assert "CPU-only" not in html
    assert "(77 counter ranges, 9 metrics)" in html


@pytest.mark.shared
def test_cpu_only_trace_still_says_so(tmp_path, make_record):
    html = timeline_section(_record_with(tmp_path, make_record, shared_path("traces", CPU)))
    assert "CPU-only trace" in html and "CUPTI" not in html


def test_idle_rows_split_launch_call_from_queued(tmp_path, make_record):
    trace = write_trace(tmp_path / "t.json.gz", scenario(), gz=True)
    html = timeline_section(_record_with(tmp_path, make_record, trace))
    # scenario: 33 µs host wait, 3 µs inside launch calls, 11 µs queued after them
    assert '<td>  host inside the launch call</td><td class="num">3 µs</td>' in html
    queued = "<td>  launched, waiting to start (queue, dependency)</td>"
    assert queued + '<td class="num">11 µs</td>' in html
    assert "work queued (launch latency)" not in html


def test_the_records_own_trace_notes_are_shown(tmp_path, make_record):
    """A converted TensorFlow trace says in `timeline.notes` which kernels it renamed."""
    trace = write_trace(tmp_path / "t.json.gz", scenario(), gz=True)
    note = "rewritten kernels named by the graph op they run (oneDNN or Grappler): x as y"
    html = timeline_section(_record_with(tmp_path, make_record, trace, notes=[note]))
    assert f"<li>{note}</li>" in html


def test_arithmetic_error_in_analysis_is_a_note(tmp_path, make_record, monkeypatch):
    import perfsuite.report.timeline_section as section

    trace = write_trace(tmp_path / "t.json.gz", scenario(), gz=True)
    rec = _record_with(tmp_path, make_record, trace)

    def boom(*_a, **_k):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(section, "analyze_trace", boom)
    html = timeline_section(rec)
    assert "Trace analysis failed:" in html and "OverflowError" in html
    assert "trace.json.gz" in html and "ui.perfetto.dev" in html
