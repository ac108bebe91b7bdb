"""Launch statistics and queue length as `perfsuite timeline` prints them (text and --json),
as the report's timeline section shows them, and as the API's frames give them: the same
numbers as the analysis (whose agreement with HTA is test_timeline_launch_queue_hta.py)."""

from __future__ import annotations

import json

import pytest

import perfsuite
from perfsuite.cli import main
from perfsuite.record import load_record
from perfsuite.report.timeline_section import timeline_section
from tests.conftest import extract_h100_run, shared_path

pytestmark = pytest.mark.shared
RANK0 = "trace_filter__sampled_rank-0.json.gz"


def test_cli_text(capsys):
    assert main(["timeline", str(shared_path("traces", RANK0)), "--top", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()

    def line(start: str) -> str:
        return next(x for x in lines if x.lstrip().startswith(start))

    assert "1204 launch calls" in line("kernel launches:")
    assert "): 280," in line("short (")
    outliers = line("outliers:")
    assert "50 µs: 2;" in outliers and outliers.endswith("100 µs: 937")
    assert line("queue length per stream")
    # stream 7: 1052 launches, at most 80 queued, 526 µs at that maximum
    assert any(
        line.split()[:4] == ["0", "7", "1052", "80"] and "526 µs" in line
        for line in out.splitlines()
    )
    assert "memory (allocator" not in out  # no [memory] events in this trace


def test_cli_json_equals_the_api_frames(capsys):
    path = shared_path("traces", RANK0)
    assert main(["timeline", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["traces"][0]
    t = perfsuite.trace(path)
    launches = doc["launches"]
    assert launches["launches"] == len(t.launches) == 1204
    assert launches["short"] == int(t.launches.short.sum())
    overall = t.launch_streams.iloc[-1]
    assert (overall.device, overall.stream) == (-1, -1)
    assert overall.delay_p99_s == launches["overall"]["delay"]["p99_s"]
    assert len(launches["kernels"]) == len(t.launch_kernels)  # --json lists every kernel
    queues = {q["stream"]: q for q in doc["queues"]}
    frame = t.queues.set_index("stream")
    for stream, q in queues.items():
        assert q["max_length"] == frame.loc[stream, "max_length"]
        assert q["mean_length"] == frame.loc[stream, "mean_length"]
        series = t.queue_length[t.queue_length.stream == stream]
        assert series.length.max() == q["max_length"]
    assert doc["memory"] == [] and t.memory.empty and t.memory_timeline.empty


def test_device_filter_keeps_its_launches(capsys):
    t = perfsuite.trace(shared_path("traces", RANK0), device=1)  # rank 0 ran on device 0
    assert t.analysis.launches is None and t.launches.empty and t.queues.empty


def test_report_section_on_the_h100_run(tmp_path):
    run = extract_h100_run(tmp_path)
    html = timeline_section(load_record(run))
    assert "<h4>Kernel launches</h4>" in html
    assert "<p>654 launch calls joined" in html
    assert "<h4>Queue length per stream</h4>" in html
    assert 'id="fig-timeline-queues"' in html
    # stream 7 of device 0: 654 launches, up to 45 queued
    assert '<td class="num">654</td><td class="num">45</td>' in html
    # the kernel with most outliers: 120 launches, 94 of them delayed over 100 µs
    launches = html.split("<h4>Kernel launches</h4>")[1]
    row = launches.split('title="void cudnn::engines_precompiled::nchwToNhwcKernel')[1].split(
        "</tr>"
    )[0]
    assert '<td class="num">120</td>' in row and row.endswith('<td class="num">94</td>')


def test_report_section_memory_timeline(tmp_path, make_record):
    from tests.test_timeline_memory_timeline import FIXTURE
    from tests.test_timeline_report import _record_with

    html = timeline_section(_record_with(tmp_path, make_record, FIXTURE))
    assert "<h4>Memory timeline</h4>" in html and 'id="fig-timeline-memory"' in html
    assert "<th>held at the cpu peak by</th>" in html
    assert '<td>aten::mm</td><td class="num">1</td><td class="num">512 B</td>' in html
    assert "Kernel launches" not in html  # a CPU trace: no launches, no queues


def test_the_terminal_and_the_page_show_the_same_stream_and_queue_rows():
    """One row builder (`perfsuite.views.timeline_rows`) for `perfsuite timeline` and the
    report: every per-stream launch row and queue row is in both, cell by cell."""
    import re

    from perfsuite.analyzers.timeline.analysis import analyze_file
    from perfsuite.cli.timeline.analyses import launch_lines, queue_lines
    from perfsuite.report.timeline_analyses import launch_html, queue_html
    from perfsuite.views.timeline_rows import queue_rows, stream_rows

    a = analyze_file(shared_path("traces", RANK0))
    text = "\n".join([*launch_lines(a.launches), *queue_lines(a.queues)])
    html = launch_html(a.launches, 3, str) + queue_html(a.queues, [])
    rows = [*stream_rows(a.launches.streams), *queue_rows(a.queues)]
    assert len(rows) >= 2 and ["0", "7", "1052", "80"] in [list(map(str, r[:4])) for r in rows]
    for row in rows:
        assert re.search(r"\s+".join(re.escape(str(c)) for c in row), text), row
        assert "".join(f'<td class="num">{c}</td>' for c in row) in html, row
