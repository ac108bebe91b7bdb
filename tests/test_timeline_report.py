"""The report's timeline section: what it says about a trace without device timings, the idle
rows it shows, and that an analysis failure stays inside the section."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser

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


class _Tables(HTMLParser):
    """Each `<table>` of a page as (headers, rows of cell texts)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[list[str], list[list[str]]]] = []
        self._cell: list[str] | None = None
        self._row: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(([], []))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self.tables:
            headers, rows = self.tables[-1]
            (rows if headers else headers).extend([self._row] if headers else self._row)


def _text_table(text: str, headers: list[str]) -> list[list[str]]:
    """The rows under the header line of a fixed-width table of the CLI (cells split at two
    or more spaces, so an empty last cell is left out)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.split(r"\s{2,}", ln.strip()) == headers)
    indent = len(lines[start]) - len(lines[start].lstrip())
    rows = []
    for line in lines[start + 2 :]:  # to a line indented otherwise, or of one cell (text)
        cells = re.split(r"\s{2,}", line.strip())
        if len(line) - len(line.lstrip()) != indent or len(cells) < 2:
            break
        rows.append(cells)
    return rows


def test_the_reports_category_and_operator_tables_are_the_terminals(h100_dir, capsys):
    """The shared H100 record: the report's kernel-category and CPU-operator tables hold the
    rows `perfsuite timeline` prints (the terminal shortens long names), built once in
    perfsuite.views.timeline_rows."""
    from perfsuite.cli import main
    from perfsuite.cli.timeline_cmd import NAME_WIDTH
    from perfsuite.fmt import truncate
    from perfsuite.views.timeline_rows import CATEGORY_HEADERS, OP_HEADERS

    parser = _Tables()
    parser.feed(timeline_section(load_record(h100_dir), top=10))
    page = {tuple(headers): rows for headers, rows in parser.tables}
    assert main(["timeline", str(h100_dir), "--top", "10"]) == 0
    text = capsys.readouterr().out

    categories = page[tuple(CATEGORY_HEADERS)]
    assert [r[0] for r in categories] == ["compute", "memcpy", "memset"]
    assert categories[0][1:] == ["618", "44.2 ms", "44.2 ms", "76.3%"]
    assert _text_table(text, CATEGORY_HEADERS) == categories

    ops = page[tuple(OP_HEADERS)]
    assert len(ops) == 10 and ops[0][:5] == ["aten::convolution_backward", "24", "5.7 ms",
                                            "5.95 ms", "216"]  # fmt: skip
    shown = [[truncate(r[0], NAME_WIDTH), *r[1:]] for r in ops]
    assert _text_table(text, OP_HEADERS) == [[c for c in r if c] for r in shown]
