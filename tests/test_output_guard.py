"""`-o` never replaces a run record, a sidecar or an input: refused in one line, exit 2, the
file untouched (report, roofline, study show)."""

from __future__ import annotations

import pytest

from perfsuite.__main__ import main
from perfsuite.record import write_record


@pytest.fixture
def run(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.5), (2, 2.0, 0.95)])
    rec["status"] = "reached"
    rec["sidecars"]["log"] = "perfsuite.log"
    folder = tmp_path / "r1"
    write_record(folder, rec)
    (folder / "perfsuite.log").write_text("log\n")
    return folder


@pytest.mark.parametrize("command", ["report", "roofline"])
@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("run.json", "would replace a run record"),
        ("perfsuite.log", "would replace r1's sidecar (sidecars.log)"),
        (".run.json.lock", "would replace a run record"),
        ("", "is a folder"),
    ],
)
def test_output_onto_a_record_or_sidecar_is_refused(run, capsys, command, target, words):
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert main([command, str(run), "-o", str(run / target)]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_output_onto_another_name_of_the_record_is_refused(run, tmp_path, capsys):
    (tmp_path / "page.html").hardlink_to(run / "run.json")
    assert main(["report", str(run), "-o", str(tmp_path / "page.html")]) == 2
    assert "would replace the run record of r1" in capsys.readouterr().err


def test_output_onto_an_input_is_refused(run, tmp_path, capsys):
    peaks = tmp_path / "peaks.json"
    peaks.write_text('{"peak_flops": 1e12, "memory_bandwidth": 1e11}')
    assert main(["report", str(run), "--peaks", str(peaks), "-o", str(peaks)]) == 2
    assert "would replace an input of this command" in capsys.readouterr().err
