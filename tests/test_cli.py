"""The CLI as a whole: every command is registered, errors are one line, validate works."""

from __future__ import annotations

import importlib
import json

import pytest

from perfsuite.__main__ import main
from perfsuite.cli import COMMANDS, build_parser
from perfsuite.record import quantity, write_record


def test_every_listed_command_exists_and_registers():
    for modname in COMMANDS:
        importlib.import_module(modname)  # a missing module would be silently skipped
    choices = build_parser()._subparsers._group_actions[0].choices
    assert {
        "run",
        "peaks",
        "roofline",
        "report",
        "flops",
        "timeline",
        "counters",
        "stability",
        "thresholds",
        "cost",
        "import",
        "leaderboard",
        "validate",
    } <= set(choices)


def test_validate_reports_good_and_bad_records(tmp_path, make_record, capsys):
    write_record(tmp_path / "good", make_record([(1, 1.0, 0.5)]))
    bad = tmp_path / "bad" / "run.json"
    bad.parent.mkdir()
    rec = make_record([(1, 1.0, 0.5)])
    rec["evaluations"][0]["train_time_s"] = "soon"
    bad.write_text(json.dumps(rec))
    assert main(["validate", str(tmp_path), "--json"]) == 1
    out = {r["path"].split("/")[-2]: r for r in json.loads(capsys.readouterr().out)}
    assert out["good"]["ok"] and out["good"]["status"] == "running"
    assert not out["bad"]["ok"]
    error = out["bad"]["error"]
    assert error.startswith(f"{bad}: field evaluations[0].train_time_s: ") and "'soon'" in error


def test_validate_nothing_found_is_an_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfsuite: error: no run.json") and err.endswith(str(tmp_path))


@pytest.mark.parametrize("cmd", ["roofline", "report", "stability", "cost", "timeline", "compare"])
def test_missing_input_is_one_line_error(tmp_path, capsys, cmd):
    code = main([cmd, str(tmp_path / "nowhere")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("perfsuite: error: ")
    assert "nowhere" in err


def test_validate_refuses_a_zero_roof_and_warns_of_a_cut_trace(tmp_path, make_record, capsys):
    """A roof of 0 FLOP/s is no measurement; a trace cut short loaded as "ok" until the
    report. Both passed `validate` in a user trial."""
    import gzip

    rec = make_record([(1, 1.0, 0.5)])
    rec["ceilings"] = {"device": "cpu", "peak_flops": quantity(0.0, "FLOP/s", "measured")}
    (tmp_path / "zero").mkdir()  # written by hand: write_record would refuse it
    (tmp_path / "zero" / "run.json").write_text(json.dumps(rec))
    rec = make_record([(1, 1.0, 0.5)])
    rec["sidecars"] = {"trace": "trace.json.gz", "telemetry": "telemetry.csv"}
    write_record(tmp_path / "cut", rec)
    whole = gzip.compress(json.dumps({"traceEvents": [{"ph": "X"}] * 500}).encode())
    (tmp_path / "cut" / "trace.json.gz").write_bytes(whole[: len(whole) // 2])
    assert main(["validate", str(tmp_path), "--json"]) == 1
    out = {r["path"].split("/")[-2]: r for r in json.loads(capsys.readouterr().out)}
    assert "field ceilings.peak_flops.value: 0.0 " in out["zero"]["error"]
    assert out["cut"]["ok"]
    telemetry, trace = out["cut"]["warnings"]
    assert telemetry.startswith("sidecars.telemetry: telemetry.csv") and "missing" in telemetry
    assert trace.startswith("sidecars.trace: trace.json.gz") and "truncated" in trace
