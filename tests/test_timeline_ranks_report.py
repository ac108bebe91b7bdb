"""Report pieces of per-rank traces and trace diffs: the tables and figures carry the
analyzers' numbers; `timeline DIR --html`, `--diff --html` and a multi-run report show them."""

from __future__ import annotations

import json
import re

import pytest

from perfsuite.__main__ import main
from perfsuite.analyzers.timeline.diff import diff_paths
from perfsuite.analyzers.timeline.ranks import scan_folder
from perfsuite.record import load_record, write_record
from perfsuite.report.ranks_section import (
    diff_figure,
    diff_section,
    ranks_figure,
    ranks_section,
    runs_diff_sections,
)
from tests.test_timeline_diff import small
from tests.test_timeline_ranks import small_rank


@pytest.fixture
def folder(tmp_path):
    dest = tmp_path / "job"
    dest.mkdir()
    for r, k in enumerate([10, 10, 40]):
        small_rank(dest / f"r{r}.json", r, kernel_us=k)
    return dest


def test_ranks_section_and_figure(folder):
    scan = scan_folder(folder)
    fig = ranks_figure(scan)
    compute, non_compute, idle = fig.data
    assert list(compute.x) == ["0", "1", "2"]
    assert list(compute.y) == pytest.approx([10e-6, 10e-6, 40e-6])
    assert list(non_compute.y) == [r.busy_non_compute_s for r in scan.ranks]
    assert list(idle.y) == [r.idle_s for r in scan.ranks]
    assert list(compute.marker.line.width) == [0, 0, 3]  # the straggler outlined
    html = ranks_section(scan)
    (straggler,) = [li for li in html.split("<li>")[1:] if li.startswith("rank 2:")]
    assert "busy_compute_s 40 µs" in straggler and "10 µs" in straggler
    assert "(+300.0%)" in straggler
    assert '<td class="num">2</td><td>r2.json</td><td>distributedInfo.rank</td>' in html


def test_ranks_section_carries_launches_queues_and_their_highest_rank(folder):
    """Each rank launches its gemm (delay 6 µs) and its NCCL kernel (3 µs + the gemm's
    length): the median launch delay is 9.5 µs on ranks 0 and 1, 24.5 µs on rank 2."""
    scan = scan_folder(folder)
    assert [r.launch_delay_p50_s for r in scan.ranks] == pytest.approx([9.5e-6, 9.5e-6, 24.5e-6])
    html = ranks_section(scan)
    row2 = "".join(f'<td class="num">{x}</td>' for x in [2, 2, "24.5 µs", "42.6 µs", 0, "0.0%"])
    assert f"<tr>{row2}" in html
    items = {li.split(":")[0]: li for li in html.split("<li>")[1:]}
    delay = items["highest median launch delay"]
    assert "rank 2, 24.5 µs" in delay and "3 ranks 9.5 µs" in delay
    # every rank queues one launch at most per stream: the lowest rank on the tie
    queue = items["deepest stream queue"]
    assert "rank 0, 1 on device 0 stream 7" in queue and "3 ranks 1)" in queue
    assert "memory peak" not in " ".join(x.label for x in scan.extremes)


def test_the_terminal_and_the_page_say_the_same_about_the_ranks(folder):
    """One row builder (`perfsuite.views.rank_rows`) for `timeline DIR` and the page: every
    straggler and extreme line, and every rank's step and compute cells, show in both."""
    from perfsuite.cli.timeline.ranks import render_folder
    from perfsuite.views.rank_rows import extreme_lines, rank_rows, straggler_lines

    scan = scan_folder(folder)
    text, html = render_folder(scan), ranks_section(scan)
    lines = [*straggler_lines(scan), *extreme_lines(scan)]
    assert len(lines) == 1 + len(scan.extremes) >= 2
    for line in lines:
        assert f"  {line}" in text.splitlines()
        assert f"<li>{line}</li>" in html
    rows = rank_rows(scan, "n/a")
    assert [row[6] for row in rows] == ["10 µs", "10 µs", "40 µs"]  # compute per rank
    for row in rows:  # steps to host wait, in order, in the rank's text line and table row
        line = next(x for x in text.splitlines() if x.split()[:1] == [str(row[0])])
        assert re.search(r"\s+".join(re.escape(str(c)) for c in row[3:]), line), line
        assert "".join(f'<td class="num">{c}</td>' for c in row[3:]) in html


def test_diff_section_and_figure(tmp_path):
    a = small(tmp_path / "a.json", [("aten::mm", 10), ("aten::relu", 4)], [("gemm", 20)])
    b = small(tmp_path / "b.json", [("aten::mm", 10)], [("gemm", 50)])
    d = diff_paths(a, b)
    fig = diff_figure(d)
    (bar,) = fig.data
    # largest change last (drawn at the top): gemm +30 µs, then aten::relu removed (-4 µs)
    assert list(bar.y) == ["cpu_op: aten::relu", "kernel: gemm"]
    assert list(bar.x) == pytest.approx([-4e-6, 30e-6])
    assert list(bar.marker.color) == ["#d62728", "#1f77b4"]
    html = diff_section(d)
    assert "0 added, 1 removed, 1 changed, 1 unchanged" in html
    assert '<td>kernel</td><td title="gemm">gemm</td><td>changed</td>' in html


def test_cli_html_pages(folder, tmp_path, capsys):
    page = tmp_path / "ranks.html"
    assert main(["timeline", str(folder), "--html", str(page), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ranks"][2]["rank"] == 2
    text = page.read_text()
    assert "Device time per rank" in text and "rank 2: busy_compute_s 40 µs" in text
    page2 = tmp_path / "diff.html"
    a, b = folder / "r0.json", folder / "r2.json"
    assert main(["timeline", "--diff", str(a), str(b), "--html", str(page2)]) == 0
    assert "Largest changes in total time" in page2.read_text()
    capsys.readouterr()
    assert main(["timeline", str(a), "--html", str(page2)]) == 2
    err = capsys.readouterr().err
    assert "--html" in err and "--diff A B" in err
    before = (folder / "r0.json").read_bytes()
    assert main(["timeline", str(folder), "--html", str(folder / "r0.json")]) == 2
    assert main(["timeline", "--diff", str(a), str(b), "--html", str(a)]) == 2
    assert (folder / "r0.json").read_bytes() == before  # an input is never overwritten


def test_multi_run_report_gets_the_trace_diff(tmp_path, make_record):
    records = []
    for name, k in (("ra", 20), ("rb", 60), ("rc", 0)):
        d = tmp_path / name
        d.mkdir()
        timeline = {}
        if k:
            small(d / "trace.json.gz", [("aten::mm", 10)], [("gemm", k)])
            timeline = {"timeline": {"trace": "trace.json.gz"}}
        write_record(d, make_record(run_id=name, **timeline))
        records.append(load_record(d))
    sections = runs_diff_sections(records)
    ((sid, _title, body),) = sections
    assert sid == "trace-diff" and body.count("<h3>") == 1 and "<h3>ra -&gt; rb</h3>" in body
    assert '<td class="num">+40 µs</td>' in body
    assert runs_diff_sections(records[:1] + records[2:]) == []
