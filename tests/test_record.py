"""The run record: round trip, atomic write, and one-line validation errors."""

from __future__ import annotations

import json
import math
import os

import pytest

from perfsuite.record import (
    RecordError,
    load_record,
    load_records,
    quantity,
    validate_record,
    write_record,
)


def test_round_trip_keeps_every_field(tmp_path, make_record):
    rec = make_record([(1, 10.0, 0.5), (2, 20.0, 0.95)], threshold=0.9)
    rec["throughput"] = {"step_time": quantity(0.25, "s", "measured", "test")}
    path = write_record(tmp_path / "r", rec)
    back = load_record(path)
    assert back["_path"] == str(path)
    assert back["_dir"] == str(tmp_path / "r")
    stripped = {k: v for k, v in back.items() if not k.startswith("_")}
    assert stripped["evaluations"] == rec["evaluations"]
    assert stripped["throughput"]["step_time"] == {
        "value": 0.25,
        "unit": "s",
        "provenance": "measured",
        "source": "test",
    }
    # loading a folder finds its run.json; private keys are never written back
    write_record(tmp_path / "r", back)
    assert "_path" not in json.loads(path.read_text())


def test_non_finite_numbers_become_null(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.5)])
    rec["evaluations"][0]["train_loss"] = math.nan
    path = write_record(tmp_path, rec)
    assert json.loads(path.read_text())["evaluations"][0]["train_loss"] is None
    assert quantity(math.inf, "s", "measured")["value"] is None


def test_atomic_write_leaves_no_temp_and_readable_mode(tmp_path, make_record):
    write_record(tmp_path, make_record())
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.json.lock", "run.json"]
    assert (tmp_path / "run.json").stat().st_mode & 0o044  # group/other readable


def test_failed_write_keeps_previous_file(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.5)])
    path = write_record(tmp_path, rec)
    before = path.read_text()
    rec["status"] = "exploded"  # invalid: must be refused before touching the file
    with pytest.raises(RecordError, match="field status"):
        write_record(tmp_path, rec)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".run.json.lock", "run.json"]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("run_id"), "(top level)"),
        (lambda r: r["evaluations"][0].update(train_time_s="ten"), "evaluations[0].train_time_s"),
        (lambda r: r["evaluations"][0].update(epoch=-1), "evaluations[0].epoch"),
        (lambda r: r["task"].update(threshold="high"), "task.threshold"),
        (
            lambda r: r.update(
                throughput={"step_time": {"value": 1.0, "unit": "s", "provenance": "guessed"}}
            ),
            "throughput.step_time.provenance",
        ),
        (lambda r: r.update(schema="other.thing"), "schema"),
    ],
)
def test_validation_error_names_file_and_field(tmp_path, make_record, mutate, field):
    rec = make_record([(1, 1.0, 0.5)])
    mutate(rec)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(rec))
    with pytest.raises(RecordError) as err:
        load_record(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: field {field}")
    assert "\n" not in msg


def test_newer_schema_version_is_refused(make_record):
    rec = make_record()
    rec["schema_version"] = 99
    with pytest.raises(RecordError, match="schema_version: 99 is newer"):
        validate_record(rec, "x.json")


def test_unreadable_inputs(tmp_path):
    bad = tmp_path / "run.json"
    bad.write_text("{not json")
    with pytest.raises(RecordError, match=r"run.json: not valid JSON \(line 1"):
        load_record(bad)
    with pytest.raises(RecordError, match="file not found"):
        load_record(tmp_path / "missing" / "run.json")
    with pytest.raises(RecordError, match="no such file or folder"):
        load_records([tmp_path / "nowhere"])


def test_load_records_walks_folders_in_order(tmp_path, make_record):
    for name in ("b", "a", os.path.join("c", "deep")):
        write_record(tmp_path / name, make_record(run_id=name))
    assert [r["run_id"] for r in load_records([tmp_path])] == ["a", "b", os.path.join("c", "deep")]
