"""Bad record files: each is one RecordError line naming the file and the field, never a
traceback or a hang, and `perfsuite validate` reports every bad file."""

from __future__ import annotations

import gzip
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from perfsuite.__main__ import main
from perfsuite.analyzers.runs.stability import stability
from perfsuite.devices.maths import record_device
from perfsuite.record import RecordError, load_record, quantity, validate_record, write_record
from perfsuite.record.checks import resolve_sidecar
from perfsuite.record.tta import planned_epochs
from tests.helpers import build_record


def _full(make_record: Any) -> dict[str, Any]:
    rec = make_record([(1, 10.0, 0.5), (2, 20.0, 0.95)], threshold=0.9)
    rec["throughput"] = {
        "step_time": quantity(0.25, "s", "measured", "t"),
        "epoch_times_s": [10.0, 10.0],
    }
    rec["work"] = {"flops_per_step": quantity(1e9, "FLOP", "counted", "t"), "per_op": []}
    rec["ceilings"] = {
        "device": "cpu",
        "dtype": "float32",
        "peak_flops": quantity(1e11, "FLOP/s", "measured", "t"),
        "memory_bandwidth": quantity(1e10, "byte/s", "measured", "t"),
        "spec": None,
    }
    rec["telemetry"] = {"file": "telemetry.csv", "cpu": {"util_pct_mean": 50.0}, "gpu": None}
    rec["cost"] = {"usd_per_hour": quantity(3.0, "USD/h", "spec", "t")}
    return rec


def _write_raw(tmp_path: Path, data: bytes | str) -> Path:
    path = tmp_path / "run.json"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _one_line_error(path: Path, *fragments: str) -> str:
    with pytest.raises(RecordError) as info:
        load_record(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert str(path) in msg
    for f in fragments:
        assert f in msg, msg
    return msg


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\xff\xfe{\x00}\x00", "UTF-16"),
        ("{}".encode("utf-16-be"), "binary"),
        (gzip.compress(b"{}", mtime=0), "gzip"),  # mtime 0: the same id in every process
        (b'{"run_id": "caf\xe9"}', "not UTF-8"),
        (b"\x00\x01\x02binary", "binary"),
        ('{"schema_version": ' + "9" * 5000 + "}", "not usable JSON"),
        ("[" * 100_000, "64-level limit"),
        ('{"a": ' * 70 + "1" + "}" * 70, "64-level limit"),
        ("{", "not valid JSON"),
    ],
)
def test_unreadable_files_are_one_line_errors(tmp_path, data, fragment):
    _one_line_error(_write_raw(tmp_path, data), fragment)


def test_fifo_named_run_json_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "run.json")
    outcome: list[str] = []

    def load() -> None:
        try:
            load_record(tmp_path)
        except RecordError as exc:
            outcome.append(str(exc))

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(10)
    assert outcome and "not a regular file (a FIFO)" in outcome[0]


def _with(rec: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    node = rec
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    node[parts[-1]] = value
    return rec


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("schema_version", 2.0, "not an integer"),
        ("schema_version", "1", "not an integer"),
        ("schema_version", True, "not an integer"),
        ("schema_version", 0, "schema_version"),
        ("evaluations.0.train_time_s", -1.0, "negative"),
        ("work.flops_per_step.value", -5.0, "negative"),
        ("ceilings.peak_flops.value", -1e9, "negative"),
        ("cost.usd_per_hour.value", -3.0, "negative"),
        ("throughput.step_time.unit", "ms", "'ms' is not 's'"),
        ("ceilings.memory_bandwidth.unit", "GB/s", "is not 'byte/s'"),
        ("telemetry.cpu", [1, 2], "telemetry.cpu"),
        ("telemetry.cpu.util_pct_mean", "high", "telemetry.cpu.util_pct_mean"),
        ("counters", {"kernels": [{"name": "k", "flops": "many"}]}, "counters.kernels[0].flops"),
        ("counters", {"kernels": "k"}, "counters.kernels"),
        ("ceilings.spec", {"flops": [1, 2]}, "ceilings.spec.flops"),
        ("ceilings.spec", {"memory_bandwidth": "fast"}, "ceilings.spec.memory_bandwidth"),
        ("timeline", {"trace": "../../etc/passwd"}, "timeline.trace"),
        ("telemetry.file", "/etc/passwd", "telemetry.file"),
        ("sidecars", {"mllog": "..\\x.txt"}, "sidecars.mllog"),
    ],
)
def test_wrong_fields_are_refused_naming_the_field(tmp_path, make_record, field, value, fragment):
    rec = _with(_full(make_record), field, value)
    path = _write_raw(tmp_path, json.dumps(rec))
    _one_line_error(path, fragment)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1" + "0" * 309])
def test_non_finite_numbers_are_refused(tmp_path, make_record, literal):
    text = json.dumps(_full(make_record)).replace('"value": 1000000000.0', f'"value": {literal}')
    assert literal in text
    _one_line_error(_write_raw(tmp_path, text), "work.flops_per_step.value", "not a finite")


def test_the_full_record_itself_loads(tmp_path, make_record):
    load_record(write_record(tmp_path, _full(make_record)))


def test_sidecar_symlink_out_of_the_run_folder_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "secret").write_text("x")
    (run / "trace.json.gz").symlink_to(tmp_path / "secret")
    with pytest.raises(ValueError, match="outside the run folder"):
        resolve_sidecar(run, "trace.json.gz")
    (run / "ok.csv").write_text("t_s\n")
    assert resolve_sidecar(run, "ok.csv") == (run / "ok.csv").resolve()


def test_validate_reports_every_bad_file_and_fails(tmp_path, make_record, capsys):
    write_record(tmp_path / "good", _full(make_record))
    (tmp_path / "gz").mkdir()
    (tmp_path / "gz" / "run.json").write_bytes(gzip.compress(b"{}"))
    (tmp_path / "neg").mkdir()
    bad = _with(_full(make_record), "cost.usd_per_hour.value", -1.0)
    (tmp_path / "neg" / "run.json").write_text(json.dumps(bad))
    os.mkfifo(tmp_path / "fifo")
    assert main(["validate", str(tmp_path), str(tmp_path / "fifo"), str(tmp_path / "nope")]) == 1
    out = capsys.readouterr().out
    assert out.count("error") == 4, out
    assert "ok     " in out
    assert "gzip" in out and "cost.usd_per_hour.value" in out and "nope" in out


def test_control_characters_in_run_ids_are_escaped_in_tables(tmp_path, make_record, capsys):
    rec = _full(make_record)
    rec["run_id"] = "evil\x1b[2J\x07"
    write_record(tmp_path / "e", rec)
    assert main(["stability", str(tmp_path)]) in (0, 1)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out


def test_report_output_is_atomic_and_never_follows_a_planted_symlink(tmp_path, make_record):
    write_record(tmp_path / "r", _full(make_record))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    (out.parent / ".report.html.tmp").symlink_to(victim)  # the old predictable temp name
    assert main(["report", str(tmp_path / "r"), "-o", str(out)]) == 0
    assert victim.read_text() == "keep me"
    assert out.read_text().startswith("<!DOCTYPE html") or "<html" in out.read_text()
    leftovers = {p.name for p in out.parent.iterdir()} - {"report.html", ".report.html.tmp"}
    assert not leftovers


# -----------------------------------------------------------------------------------------------
# Values of the wrong type are refused by field, and terminal output never carries a control
# character taken from a record.


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
