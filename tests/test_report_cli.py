"""`perfsuite report` for scripts and terminals (a user trial): `--json` says what the page
holds (its path, the runs, the sections, the warnings and notes it shows), and a peaks file
from another device is a one-line warning on stderr, not only a note inside the page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfsuite.__main__ import main
from perfsuite.record import write_record
from tests.conftest import extract_h100_run, shared_path
from tests.helpers import build_record

A100 = "NVIDIA A100-SXM4-40GB"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def two_runs(tmp_path, make_record):
    a = build_record(make_record)
    a["flags"] = ["clock throttled"]
    write_record(tmp_path / "a", a)
    b = build_record(make_record)
    b["run_id"] = "roof2"
    write_record(tmp_path / "b", b)
    return tmp_path / "a", tmp_path / "b"


def _page_sections(path: Path) -> list[str]:
    return re.findall(r'<section id="([^"]+)">', path.read_text())


def test_report_json_names_the_page_its_runs_and_sections(two_runs, tmp_path, capsys):
    a, _ = two_runs
    out = tmp_path / "one.html"
    assert main(["report", str(a), "-o", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)  # stdout holds the JSON document and nothing else
    assert data["output"] == str(out) and Path(data["output"]).is_file()
    assert data["title"] == "perfsuite report: roof1"
    assert data["peaks"] is None and data["warnings"] == []
    (run,) = data["runs"]
    assert run["run_id"] == "roof1"
    assert Path(run["dir"]) == a
    assert run["flags"] == ["clock throttled"]
    assert run["warnings"] == [] and run["roofline_error"] is None
    ids = [s["id"] for s in data["sections"]]
    assert ids == _page_sections(out)  # every section of the page, in its order
    assert ids[:3] == ["overview", "summary", "curves"] and "roofline" in ids
    assert {"id": "roofline", "title": "Roofline"} in data["sections"]
    assert "warning" not in captured.err


def test_report_json_of_several_runs_and_a_run_without_roofline(
    two_runs, tmp_path, make_record, capsys
):
    a, b = two_runs
    bare = tmp_path / "bare"
    write_record(bare, make_record([(1, 5.0, 0.4)], run_id="bare"))
    out = tmp_path / "all.html"
    assert main(["report", str(a), str(b), str(bare), "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in data["runs"]] == ["roof1", "roof2", "bare"]
    assert [Path(r["dir"]) for r in data["runs"]] == [a, b, bare]
    ids = [s["id"] for s in data["sections"]]
    assert ids == _page_sections(out) and ids[0] == "compare" and "overview" not in ids
    no_roof = data["runs"][2]
    assert "work.flops_per_step" in no_roof["roofline_error"] and no_roof["notes"] == []


def test_report_without_json_prints_only_the_path(two_runs, tmp_path, capsys):
    a, _ = two_runs
    out = tmp_path / "r.html"
    assert main(["report", str(a), "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"{out}\n"


@pytest.fixture(scope="module")
def h100_run(tmp_path_factory):
    return extract_h100_run(tmp_path_factory.mktemp("h100"))


@pytest.fixture
def a100_peaks(tmp_path):
    """The H100's peaks file relabelled as measured on an A100: the wrong machine."""
    other = json.loads(shared_path("gpu", "h100-peaks.json").read_text())
    other["device_name"] = A100
    path = tmp_path / "a100.json"
    path.write_text(json.dumps(other))
    return path


def test_peaks_of_another_device_warn_on_stderr_in_one_line(h100_run, a100_peaks, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(h100_run), "--peaks", str(a100_peaks), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{out}\n"  # stdout unchanged: the path only
    lines = [line for line in captured.err.splitlines() if "WRONG MACHINE" in line]
    assert len(lines) == 1
    run_id = json.loads((h100_run / "run.json").read_text())["run_id"]
    assert lines[0].startswith(f"warning: {run_id}: WRONG MACHINE:") and "peaks" in lines[0]
    assert f"measured on {A100}, this run ran on {H100}" in lines[0]
    # the wording is `perfsuite roofline --peaks`'s, from the same rule
    assert main(["roofline", str(h100_run), "--peaks", str(a100_peaks)]) == 0
    (roof_line,) = [n for n in capsys.readouterr().out.splitlines() if n.startswith("WRONG")]
    assert lines[0] == f"warning: {run_id}: {roof_line}"


def test_peaks_of_another_device_are_in_the_json(h100_run, a100_peaks, tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", str(h100_run), "--peaks", str(a100_peaks), "-o", str(out), "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    (run,) = data["runs"]
    (note,) = run["warnings"]
    assert note.startswith("WRONG MACHINE") and A100 in note and H100 in note
    assert note in run["notes"]  # the page lists it among the roofline notes too
    assert data["warnings"] == [f"{run['run_id']}: {note}"]
    assert f"warning: {data['warnings'][0]}" in captured.err.splitlines()
    assert data["peaks"] == str(a100_peaks) and Path(data["output"]).is_file()


def test_peaks_of_the_same_device_warn_nowhere(h100_run, tmp_path, capsys):
    peaks = str(shared_path("gpu", "h100-peaks.json"))
    out = tmp_path / "r.html"
    assert main(["report", str(h100_run), "--peaks", peaks, "-o", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["warnings"] == [] and data["runs"][0]["warnings"] == []
    assert "WRONG MACHINE" not in captured.err


def test_docs_list_the_json_fields_the_code_writes(two_runs, tmp_path, capsys):
    a, _ = two_runs
    assert main(["report", str(a), "-o", str(tmp_path / "r.html"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text("utf-8")
    section = doc[doc.index("## For scripts: `--json`") : doc.index("## A single run")]
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", section, re.M))
    assert list(rows) == list(data)  # the top-level fields, in the order written
    run_fields = re.findall(r"`(\w+)`(?: \([^)]*\))?[,:]?", rows["runs"].split(": ", 1)[1])
    assert run_fields == list(data["runs"][0])


def test_the_program_writes_pages_and_the_cli_alone_refuses_them(two_runs, tmp_path, capsys):
    """The report's pages reach the CLI only through the program (`perfsuite.__main__`): the
    CLI's own `main` runs the command up to the page and refuses it in one line, writing
    nothing; the text commands need no report."""
    from perfsuite import cli

    a, _ = two_runs
    out = tmp_path / "page.html"
    assert cli.main(["report", str(a), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perfsuite: error: ") and err.count("\n") == 1
    assert "perfsuite.__main__" in err and not out.exists()
    assert cli.main(["roofline", str(a), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["roofline"]["run"]["run_id"] == "roof1"
    assert main(["report", str(a), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and "roof1" in out.read_text()
