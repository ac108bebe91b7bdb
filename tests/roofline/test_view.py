"""The roofline said once: `perfsuite roofline` and the report render one presentation model
(perfsuite.views.roofline_view), so their headings are equal; the answer comes first and the
notes are ranked, the most important as one line each unless --explain."""

from __future__ import annotations

import html
import json
import re

import pytest

from perfsuite.__main__ import main
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.analyzers.roofline.utilization import utilization
from perfsuite.cli import build_parser
from perfsuite.views.roofline_view import (
    NOTES_SHOWN,
    OTHER_RANK,
    note_rank,
    ranked_notes,
    roofline_view,
    summary,
)
from tests.helpers import build_record, cpu_record, set_ceilings

SECTIONS = re.compile(r'<section id="(roofline|ops)">(.*?)</section>', re.S)


def _cli_headings(text: str) -> list[str]:
    """Lines that head a table (the next line holds its column headers, the one after dashes)
    or the notes, without their colon."""
    lines = text.splitlines()
    heads = [
        lines[i][:-1]
        for i in range(len(lines) - 2)
        if lines[i].endswith(":") and set(lines[i + 2]) <= {"-", " "} and lines[i + 2].strip()
    ]
    return heads + [line[:-1] for line in lines if line.startswith("Notes (")]


def _report_headings(page: str) -> list[str]:
    """The <h4> headings of the page's roofline and per-op sections."""
    found = [h for _, body in SECTIONS.findall(page) for h in re.findall(r"<h4>(.*?)</h4>", body)]
    return [html.unescape(h) for h in found]


def test_the_command_and_the_report_have_the_same_headings(h100, tmp_path, capsys):
    """--explain prints what the report shows: every table under the same heading, the notes
    under the same heading, each heading once; without --explain the hierarchy's points and
    all but the most important notes stay out of the text."""
    page = tmp_path / "roofline.html"
    assert main(["roofline", h100["_path"], "--explain", "-o", str(page)]) == 0
    cli = _cli_headings(capsys.readouterr().out)
    report = _report_headings(page.read_text())
    assert sorted(cli) == sorted(report) and len(set(cli)) == len(cli)
    view = roofline_view(roofline(h100), utilization(h100), 20)
    assert {t.heading for t in view.tables()} | {view.notes_heading(True)} == set(cli)
    assert any(h.startswith("Points of the hierarchical roofline") for h in cli)
    assert main(["roofline", h100["_path"]]) == 0
    short = _cli_headings(capsys.readouterr().out)
    assert not any(h.startswith("Points of the hierarchical roofline") for h in short)
    assert set(short) - set(cli) == {view.notes_heading(False)}


def test_the_answer_comes_first_and_names_the_largest_loss(h100, capsys):
    """Under the title: the step, its time at the roofs and the fraction, marked as an upper
    bound (ops sit above the memory roof), then the op that loses the most time."""
    assert main(["roofline", h100["_path"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("Answer: one step takes 16 ms")
    assert "6.24 ms: 39.0% of its roofs (an upper bound" in lines[1]
    assert lines[1].endswith("memory-bound overall.")
    assert lines[2].startswith("Most time lost: aten::convolution_backward, 3.67 ms per step")
    assert "(29.9% of its tf32 compute roof)" in lines[2]


def test_notes_are_ranked_and_summed_up_in_one_line_each(h100, capsys):
    """The whole-run doubt outranks the ops above their roofs, which outrank the rest; the
    default text shows the first NOTES_SHOWN as one line each, --explain all in full."""
    res, util = roofline(h100), utilization(h100)
    view = roofline_view(res, util, 20)
    ranks = [n.rank for n in view.notes]
    assert ranks == sorted(ranks) and ranks[0] == 3 and ranks[-1] == OTHER_RANK
    assert view.notes[0].text.startswith("whole-run frac_of_roof 39.0% is in doubt")
    assert [n.text.split(" ")[0] for n in view.notes[1:4]] == [
        "aten::add",
        "aten::relu",
        "aten::threshold_backward",
    ]
    assert f"math: {res.math_source}" not in [n.text for n in view.notes]  # its own line
    assert main(["roofline", h100["_path"]]) == 0
    text = capsys.readouterr().out
    shown = text[text.index("\nNotes (") :].splitlines()[2:]
    assert len(shown) == NOTES_SHOWN == 3
    assert shown[0] == f"  - {view.notes[0].summary}"
    assert shown[0].endswith("and aten::relu (110%) sit above the memory roof")
    assert all(len(line) <= 4 + 150 for line in shown)
    assert f"the 3 most important of {len(view.notes)}; all in full: --explain" in text
    assert main(["roofline", h100["_path"], "--explain"]) == 0
    text = capsys.readouterr().out
    full = text[text.index("\nNotes (") :].splitlines()[2:]
    assert full == [f"  - {n.text}" for n in view.notes]
    assert main(["roofline", h100["_path"], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["view"]["answer"] == view.answer
    assert [(n["rank"], n["text"]) for n in data["view"]["notes"]] == [
        (n.rank, n.text) for n in view.notes
    ]


def test_a_note_ranks_by_what_it_says():
    assert note_rank("WRONG MACHINE: the peaks file's roofs were measured on X") == 0
    assert note_rank("whole run: the step would take 120% of its measured time") == 1
    assert note_rank("ceilings missing: run `perfsuite peaks` or pass --peaks; no roof") == 2
    assert note_rank("no bf16, fp16 roof in the record or --peaks, and ops with 3%") == 2
    assert note_rank("machine contended during the profile window: its roofs' own") == 4
    assert note_rank("fp32 roof: measured on a busy machine (load 3.10 before)") == 5
    assert note_rank("fp32 roof: measured with 1 thread, this run used 2 (peaks are per") == 5
    assert note_rank("fp32, memory roof(s): load at measurement not recorded") == 6
    assert note_rank("aten::mm (fp32 roof, compute-bound): 107% of its roof: not a result") == 7
    assert note_rank("no hardware counters: DRAM bytes are modeled") == OTHER_RANK
    notes = ranked_notes(["b other", "whole run: above", "a other", "whole run: above"])
    assert [n.text for n in notes] == ["whole run: above", "b other", "a other"]


def test_a_summary_is_the_first_clause_cut_at_a_word():
    assert summary("x is 3; because y. And z") == "x is 3"
    assert summary("one. two") == "one"
    long = "word " * 40
    cut = summary(long, 30)
    assert cut.endswith(" ...") and len(cut) <= 30 and cut.startswith("word word")
    assert summary("x" * 40, 30) == "x" * 26 + " ..."  # no word boundary to cut at


def test_a_run_without_a_roof_fraction_says_why_in_its_answer(make_record):
    """No memory roof: no roof time, so no fraction; the answer says so, and the missing
    roof is the first note."""
    rec = build_record(make_record)
    set_ceilings(rec, bandwidth=None)
    view = roofline_view(roofline(rec), utilization(rec), 20)
    assert "no fraction of its roofs (a roof is missing: see notes)" in view.answer[0]
    assert view.notes[0].text.startswith("ceilings missing") and view.notes[0].rank == 2


def test_roofline_has_no_html_option(capsys):
    """`-o/--output` writes the page; the old `--html` spelling is refused, naming itself."""
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["roofline", "r", "--html", "x.html"])
    assert stop.value.code == 2 and "--html" in capsys.readouterr().err
    assert build_parser().parse_args(["roofline", "r", "-o", "x.html"]).output == "x.html"


def test_a_roof_measured_on_a_busy_machine_qualifies_the_answer(make_record):
    """A CPU peak measured under load 15 on 2 CPUs: every fraction depends on it, so the
    answer says to read it with care and names why; a quiet record's answer does not (an
    unknown load is a note, no evidence)."""
    busy = {"threads": 2, "size": 2048, "load_before": 15.2, "load_after": 15.6, "cpus": 2}
    rec = cpu_record(make_record, {**busy, "busy_limit": 0.5, "busy": True})
    view = roofline_view(roofline(rec), utilization(rec), 20)
    (line,) = [a for a in view.answer if a.startswith("Read with care: ")]
    assert "fp32 roof: measured on a busy machine (load 15.20 before" in line
    quiet = cpu_record(make_record, {**busy, "busy_limit": 0.5, "busy": False})
    view = roofline_view(roofline(quiet), utilization(quiet), 20)
    assert not [a for a in view.answer if a.startswith("Read with care")]
