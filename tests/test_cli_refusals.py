"""Inputs that would be accepted silently are refused in one line: a price table that is
missing, binary or garbage whatever the ranking, and an instance type that is a path."""

from __future__ import annotations

import pytest

from perfsuite.cli import main
from perfsuite.record import write_record


@pytest.fixture
def runs(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.5), (2, 2.0, 0.95)])
    rec["status"] = "reached"
    write_record(tmp_path / "runs" / "r1", rec)
    return tmp_path / "runs"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "file not found"),
        (b"\x00\x01\xff", "binary data"),
        (b"garbage{", "not valid JSON"),
        (b'{"instances": {"x": {"usd_per_hour": ' + b"9" * 400 + b"}}}", "is out of range"),
    ],
)
@pytest.mark.parametrize("by", ["training-cost", "training-time"])
def test_a_bad_price_file_is_refused(runs, tmp_path, capsys, content, words, by):
    prices = tmp_path / "prices.json"
    if content is not None:
        prices.write_bytes(content)
    assert main(["leaderboard", str(runs), "--by", by, "--prices", str(prices)]) == 2
    err = capsys.readouterr().err.strip()
    expected = words if by == "training-cost" else "--prices prices the cost rankings"
    assert expected in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", [["cost"], ["leaderboard", "--by", "training-cost"]])
@pytest.mark.parametrize("bad", ["../../etc/passwd", "a b", "x\x1b[2J", "/abs"])
def test_an_instance_type_that_is_not_one_is_refused(runs, capsys, command, bad):
    with pytest.raises(SystemExit) as exc:
        main([*command, str(runs), "--instance-type", bad])
    assert exc.value.code == 2
    assert "is not an instance type" in capsys.readouterr().err
