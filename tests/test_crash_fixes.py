"""Inputs that crashed or hung a command: wrong types refused by field, terminal output never
carrying a control character taken from a record, `python -m bench` with an unknown name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analyzers.runs.stability import stability
from perfsuite.cli import main
from perfsuite.devices.maths import record_device
from perfsuite.record import RecordError, validate_record, write_record
from perfsuite.record.tta import planned_epochs
from tests.test_roofline import build_record

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("section", "key", "field"),
    [
        ("config", "recipe_values", "config.recipe_values"),
        ("environment", "device", "environment.device"),
        ("config", "threshold", "config.threshold"),
    ],
)
def test_wrong_types_are_refused_by_field(make_record, section, key, field):
    rec = make_record([(1, 1.0, 0.95)])
    rec[section][key] = ["a", "list"] if key != "threshold" else "abc"
    with pytest.raises(RecordError, match=f"field {field}: "):
        validate_record(rec)


def test_analyzers_do_not_crash_on_a_list_where_a_mapping_or_string_belongs(make_record):
    rec = make_record([(1, 1.0, 0.5), (2, 2.0, 0.95)])
    rec["config"]["recipe_values"] = [1, 2]
    rec["environment"]["device"] = ["cuda"]
    assert planned_epochs(rec) is None
    assert record_device(rec) is None
    (group,) = stability([rec])
    assert group.n_reached == 1


NASTY = "r\x1b[2J\rX\u202eevil"


def test_no_control_character_from_a_record_reaches_the_terminal(tmp_path, make_record, capsys):
    rec = build_record(make_record)
    rec["run_id"] = NASTY
    rec["model"] = "m\x1b]0;title\x07"
    write_record(tmp_path / "run", rec)
    for argv in (
        ["roofline", str(tmp_path / "run")],
        ["cost", str(tmp_path / "run")],
        ["validate", str(tmp_path / "run")],
        ["leaderboard", str(tmp_path)],
    ):
        main(argv)
        out = capsys.readouterr()
        text = out.out + out.err
        assert "\x1b" not in text and "\r" not in text and "\u202e" not in text, argv
    main(["cost", str(tmp_path / "run")])
    assert "r\\x1b[2J\\rX\\u202eevil" in capsys.readouterr().out


def test_bench_with_an_unknown_name_exits_2_in_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "no-such-benchmark"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-benchmark" in lines[0]
