"""One reading of a record: the crossing in the task's direction and "reached and time", the
same in the recorder, stability, thresholds, cost and leaderboard."""

from __future__ import annotations

import pytest

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.results.record_view import crossing, reached_time
from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.analyzers.runs.stability import run_crossing, stability
from perfsuite.analyzers.runs.thresholds import analyze_thresholds
from tests.conftest import settle

LOWER_CURVE = [(1, 10.0, 0.30), (2, 20.0, 0.12), (3, 30.0, 0.05)]


def _lower(make_record, run_id="w"):
    rec = make_record(LOWER_CURVE, metric="wer", threshold=0.10, run_id=run_id)
    rec["task"]["direction"] = "lower"
    return settle(rec)


def test_overrides_recompute_in_the_tasks_direction(make_record):
    rec = _lower(make_record)
    assert crossing(rec, threshold=0.2).time_s == 20.0
    assert run_crossing(rec, threshold=0.2).time_s == 20.0
    assert crossing(rec, threshold=0.01).reached is False


def test_thresholds_use_the_tasks_direction(make_record):
    ana = analyze_thresholds([_lower(make_record)], [0.2, 0.1])
    times = {r.threshold: r.placings[0].time_s for r in ana.rankings}
    assert times == {0.1: 30.0, 0.2: 20.0}


@pytest.mark.parametrize("time_s", [None, float("nan"), float("inf"), -1.0, "10"])
def test_reached_without_a_usable_time_is_not_reached(make_record, time_s):
    rec = make_record([(1, 10.0, 0.95)], threshold=0.9)
    rec["time_to_accuracy"].update({"reached": True, "time_s": time_s})
    rec["status"] = "reached"
    assert reached_time(rec) == (False, None)
    assert cost_of(rec, {}).reached is False
    # the claim disagrees with the evaluation (10 s): not ranked, not DNC, and the reason said
    (board,) = leaderboard([rec])
    assert board.rows[0].status == "n/a"
    note = board.rows[0].note
    assert "inconsistent record:" in note and "field time_to_accuracy.time_s" in note
    (group,) = stability([rec])
    assert group.n_reached == 0


def test_every_wrapper_agrees_on_a_reached_record(make_record):
    rec = make_record([(1, 10.0, 0.5), (2, 20.0, 0.95)], threshold=0.9)
    rec["time_to_accuracy"].update({"reached": True, "time_s": 20.0, "epoch": 2})
    rec["status"] = "reached"
    assert reached_time(rec) == (True, 20.0)
    assert crossing(rec).time_s == run_crossing(rec).time_s == 20.0
    assert cost_of(rec, {}).training_time_s == 20.0
    assert leaderboard([rec])[0].rows[0].value == 20.0
    assert stability([rec])[0].runs[0].time_s == 20.0


def test_recorder_stops_on_a_lower_is_better_target(tmp_path):
    from perfsuite.runner.record.recorder import Recorder

    task = {"name": "asr", "metric": "wer", "threshold": 0.1, "direction": "lower"}
    rec = Recorder(tmp_path, "asr", task, "cpu", {}, framework="test", write_files=False)
    assert rec.add_evaluation(1, 10.0, {"wer": 0.3}) is False
    assert rec.add_evaluation(2, 20.0, {"wer": 0.08}) is True
    assert rec.record["time_to_accuracy"]["time_s"] == 20.0


def _run_with_log(tmp_path, make_record, logged, status="reached", success=True):
    from perfsuite.mllog import MLLogWriter
    from perfsuite.record import load_record, write_record

    rec = make_record([(1, 10.0, 0.5), (2, 20.0, 0.95)], threshold=0.9)
    rec["status"] = status
    rec["sidecars"]["mllog"] = "mllog.txt"
    run = tmp_path / "run"
    write_record(run, rec)
    log = MLLogWriter(run / "mllog.txt", benchmark="toy")
    log.start({})
    for i, acc in enumerate(logged, start=1):
        log.eval(i, acc)
    log.stop(success=success)
    return load_record(run)


def test_mllog_sidecar_is_read_back_and_checked(tmp_path, make_record, capsys):
    from perfsuite.cli import main
    from perfsuite.record.mllog_check import mllog_problems

    assert mllog_problems(_run_with_log(tmp_path / "a", make_record, [0.5, 0.95])) == []
    wrong = _run_with_log(tmp_path / "b", make_record, [0.5, 0.9], success=False)
    problems = mllog_problems(wrong)
    assert any("eval_accuracy 2 is 0.9" in p for p in problems)
    assert any("run_stop status 'aborted'" in p for p in problems)
    short = mllog_problems(_run_with_log(tmp_path / "c", make_record, [0.5]))
    assert any("1 eval_accuracy line(s)" in p and "the record has 2" in p for p in short)
    assert main(["validate", str(tmp_path / "b")]) == 0  # warnings, not errors
    assert "warning: sidecars.mllog" in capsys.readouterr().out


def test_an_absent_section_says_why_from_the_records_writer(make_record):
    from perfsuite.analyzers.results.record_view import why_absent
    from perfsuite.report.inference_section import energy_rows
    from perfsuite.report.setup_section import data_rows, switch_rows

    imported = make_record([(1, 10.0, 0.95)], source={"kind": "dawnbench", "files": []})
    for section in ("data", "switches", "energy"):
        assert why_absent(imported, section).endswith("(imported from dawnbench)")
    track = make_record([(1, 10.0, 0.95)], config={"source": "perfsuite.track (user loop)"})
    assert why_absent(track, "switches").startswith("none: perfsuite.track")
    assert why_absent(track, "data").startswith("not recorded: no timed epoch ended")
    off = make_record([(1, 10.0, 0.95)], config={"capture": False})
    assert why_absent(off, "energy") == "not measured: capture was off"
    older = make_record([(1, 10.0, 0.95)], environment={"perfsuite": "0.1.0"})
    older["throughput"] = {"epoch_times_s": [10.0]}
    for section in ("data", "switches", "energy"):
        assert why_absent(older, section).startswith("not recorded by perfsuite 0.1.0")
    # the report's rows carry the same words, and no record is called "older"
    assert data_rows(imported) == [["data", why_absent(imported, "data")]]
    assert switch_rows(track) == [["switches", why_absent(track, "switches")]]
    assert energy_rows(off) == [["energy", "not measured: capture was off"]]


def test_the_real_h100_record_says_which_perfsuite_left_its_sections_out(h100):
    from perfsuite.analyzers.results.record_view import why_absent

    assert (h100["_migrated_from"], h100["environment"]["perfsuite"]) == (1, "0.1.0")
    for section in ("data", "switches", "energy"):
        assert section not in h100
        assert why_absent(h100, section) == (
            "not recorded: written by perfsuite 0.1.0 on 2026-11-22 at record schema version 1, "
            "before this section was written"
        )
