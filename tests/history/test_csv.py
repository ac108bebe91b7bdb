"""A history in Otava's CSV layout: read without a store, and each bad input refused in one
line naming the file, the line and the field."""

from __future__ import annotations

import json

import pytest

from perfsuite.__main__ import main
from perfsuite.history_store.csvfile import read_csv
from perfsuite.history_store.store import HistoryError

HEADER = "time,commit,time_to_accuracy_s,samples_per_s\n"


def _csv(tmp_path, body: str, name: str = "nightly.csv"):
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def _rows(n: int, step_at: int = 20) -> str:
    return "".join(
        f"2026-10-{1 + i:02d}T02:00:00Z,c{i:03d},{40 + (4 if i >= step_at else 0) + (i % 3) * 0.1},"
        f"{1000 + (i % 4)}\n"
        for i in range(n)
    )


def test_columns_time_attributes_metrics(tmp_path) -> None:
    path = _csv(tmp_path, _rows(25))
    tta, sps = read_csv(path)
    assert (tta.name, tta.metric, tta.direction) == ("nightly", "time_to_accuracy_s", "lower")
    assert (sps.metric, sps.direction) == ("samples_per_s", "higher")
    assert len(tta.points) == 25
    assert tta.points[3].attributes == {"commit": "c003"}
    assert tta.points[3].time == "2026-10-04T02:00:00.000000Z"
    assert tta.values[21] == pytest.approx(44.0)


def test_history_reads_a_csv_without_a_store(tmp_path, capsys) -> None:
    path = _csv(tmp_path, _rows(30))
    assert main(["history", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["metric"] for s in doc["series"]] == ["time_to_accuracy_s", "samples_per_s"]
    assert [c["index"] for c in doc["series"][0]["change_points"]] == [20]
    assert main(["history", "check", str(path)]) == 3


def test_empty_cells_are_missing_points(tmp_path) -> None:
    path = _csv(tmp_path, "2026-10-01,a,40,\n2026-10-02,b,41,1000\n")
    tta, sps = read_csv(path)
    assert (len(tta.points), len(sps.points)) == (2, 1)


@pytest.mark.parametrize(
    ("body", "line", "field", "says"),
    [
        ("2026-10-01,a,40,1000\n2026-10-02,b,41\n", 3, "row", "3 fields where the header has 4"),
        ("2026-10-01,a,40,1000\n2026-10-02,b,nan,1000\n", 3, "time_to_accuracy_s", "not finite"),
        ("2026-10-01,a,40,1000\n2026-10-02,b,inf,1000\n", 3, "time_to_accuracy_s", "not finite"),
        ("2026-10-01,a,40,-5\n", 2, "samples_per_s", "-5 is negative"),
        ("2026-10-01,a,40,1000\n2026-10-01T00:00:00Z,b,41,1000\n", 3, "time", "repeats"),
        ("yesterday,a,40,1000\n", 2, "time", "is not an ISO 8601 time"),
        ("2026-10-01,a,40,1000\n2026-10-02,b,fast,1000\n", 3, "time_to_accuracy_s", "not a number"),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_field(
    tmp_path, capsys, body, line, field, says
):
    path = _csv(tmp_path, body)
    with pytest.raises(HistoryError) as err:
        read_csv(path)
    assert str(err.value).startswith(f"{path}: line {line}: field {field}: ")
    assert says in str(err.value)
    assert main(["history", str(path)]) == 2
    (message,) = capsys.readouterr().err.strip().splitlines()
    assert message.startswith(f"perfsuite: error: {path}: line {line}: field {field}: ")
