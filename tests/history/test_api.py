"""`perfsuite.history(...)`: DataFrames holding the numbers `perfsuite history --json` prints."""

from __future__ import annotations

import json

import pytest

import perfsuite
from perfsuite.__main__ import main
from perfsuite.analyzers.history.verdict import Settings
from tests.history.records import write_nightly
from tests.history.test_cli import STEP


def test_history_frames_hold_the_cli_numbers(tmp_path, capsys) -> None:
    nights = write_nightly(tmp_path / "runs", STEP)
    db = str(tmp_path / "h.sqlite")
    assert main(["history", "add", *map(str, nights), "--db", db]) == 0
    assert main(["history", "--db", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)

    h = perfsuite.history(db)
    assert h.where == db
    assert list(h.series["metric"]) == [s["metric"] for s in doc["series"]]
    assert list(h.series["points"]) == [30, 30]
    assert list(h.series["label"]) == ["no change", "regression"]
    assert len(h.points) == 60
    tta = h.points[h.points["metric"] == "time_to_accuracy_s"]
    assert list(tta["value"]) == pytest.approx(STEP)
    assert tta["commit"].iloc[3] == f"{3:040x}"
    (change,) = h.change_points.to_dict("records")
    (expected,) = [c for s in doc["series"] for c in s["change_points"]]
    assert change["index"] == expected["index"] == 20
    for field in ("mean_before", "mean_after", "change_pct", "pvalue"):
        assert change[field] == expected[field]
    assert change["kind"] == "regression"
    assert change["time"].isoformat() == "2026-10-01T20:00:00+00:00"


def test_history_settings_and_selection(tmp_path) -> None:
    csv = tmp_path / "n.csv"
    csv.write_text(
        "time,commit,step_time_s\n"
        + "".join(f"2026-10-{1 + i:02d},c{i},{0.1 if i < 12 else 0.102}\n" for i in range(24))
    )
    strict = perfsuite.history(str(csv), settings=Settings(min_magnitude=0.05))
    assert strict.change_points.empty
    loose = perfsuite.history(str(csv), metrics=["step_time_s"])
    assert list(loose.change_points["index"]) == [12]
    assert list(loose.change_points["kind"]) == ["regression"]
