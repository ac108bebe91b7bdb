"""MLPerf importer rules that real logs exercise: Stable Diffusion's one line per metric,
joint targets and --target, unet3d's scoring (4 dropped at each end), evaluations after
run_stop, and perfsuite's own mllog.txt read back with the target of the run beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.importers import ImportFailure
from perfsuite.importers.base import run_import
from perfsuite.importers.mlperf import MLPerfImporter, Options, discover, load_result
from perfsuite.importers.mlperf_score import score_folders
from perfsuite.record import new_record, validate_record, write_record
from perfsuite.stats import olympic_mean
from tests.conftest import extract_h100_run
from tests.test_mllog import FakeClock, write_run


def line(key: str, value=None, ms: float = 0, **meta) -> str:
    body = {"time_ms": ms, "event_type": "POINT_IN_TIME", "key": key, "value": value}
    return ":::MLLOG " + json.dumps({**body, "metadata": meta})


def write_log(path: Path, benchmark: str, evals: list[str], stop="success", stop_ms=9000):
    """A minimal log: benchmark, run_start at 1000 ms, the given lines, run_stop."""
    lines = [line("submission_benchmark", benchmark), line("run_start", ms=1000), *evals]
    if stop is not None:
        lines.append(line("run_stop", ms=stop_ms, status=stop))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def sd(value, metric, samples, ms):
    return line("eval_accuracy", value, ms, metric=metric, samples_count=samples)


# ------------------------------------------------------------------ Stable Diffusion
def test_stable_diffusion_merges_fid_and_clip_lines_per_samples_count(tmp_path):
    # the offline evaluator logs every FID first, then every CLIP: pairing is by samples_count
    path = write_log(
        tmp_path / "result_0.txt",
        "stable_diffusion",
        [
            sd(120.0, "FID", 512000, 2000),
            sd(85.0, "FID", 1024000, 3000),
            sd(0.12, "CLIP", 512000, 3500),
            sd(0.17, "CLIP", 1024000, 4000),
        ],
    )
    rec = load_result(path).record
    validate_record(rec)
    assert [e["metrics"] for e in rec["evaluations"]] == [
        {"fid": 120.0, "clip": 0.12},
        {"fid": 85.0, "clip": 0.17},
    ]
    # each merged evaluation is timed at its latest line
    assert [e["train_time_s"] for e in rec["evaluations"]] == [2.5, 3.0]
    assert [e["samples"] for e in rec["evaluations"]] == [512000, 1024000]
    assert rec["status"] == "reached"
    tta = rec["time_to_accuracy"]
    assert (tta["time_s"], tta["evaluation_index"]) == (8.0, 1)
    assert rec["extra"]["mlperf"]["first_target_eval_s"] == 3.0


def test_stable_diffusion_needs_both_metrics_of_one_step(tmp_path):
    # FID passes at the second step, CLIP only at the first: no step meets both
    path = write_log(
        tmp_path / "r.log",
        "stable_diffusion",
        [
            sd(120.0, "FID", 1, 2000),
            sd(0.2, "CLIP", 1, 2001),
            sd(80.0, "FID", 2, 3000),
            sd(0.1, "CLIP", 2, 3001),
        ],
    )
    assert load_result(path).record["status"] == "not_reached"


def test_stable_diffusion_v31_pairs_by_step_num(tmp_path):
    evals = [
        line("eval_accuracy", 80.0, 2000, metric="FID", step_num=1000),
        line("eval_accuracy", 0.2, 2500, metric="CLIP", step_num=1000),
    ]
    rec = load_result(write_log(tmp_path / "r.log", "stable_diffusion", evals)).record
    assert rec["evaluations"][0]["metrics"] == {"fid": 80.0, "clip": 0.2}
    assert rec["status"] == "reached"


def test_stable_diffusion_line_without_metric_name_is_an_error(tmp_path):
    path = write_log(tmp_path / "r.log", "stable_diffusion", [line("eval_accuracy", 80.0, 2000)])
    with pytest.raises(ImportFailure) as err:
        load_result(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: line 3: field eval_accuracy.metadata.metric: missing")
    assert "fid <= 90 and clip >= 0.15" in msg and "\n" not in msg


# ------------------------------------------------------------------ joint targets, --target
def test_target_is_refused_for_benchmarks_judged_on_several_conditions(tmp_path):
    evals = [line("eval_accuracy", {"BBOX": 0.38, "SEGM": 0.35}, 2000, epoch_num=1)]
    path = write_log(tmp_path / "result_0.txt", "maskrcnn", evals)
    assert load_result(path).record["status"] == "reached"  # the built-in joint target
    with pytest.raises(ImportFailure) as err:
        load_result(path, Options(targets={"maskrcnn": 0.37}))
    msg = str(err.value)  # one line naming the file, the field and the benchmark
    assert msg.startswith(f"{path}: field submission_benchmark: 'maskrcnn' ")
    assert "--target" in msg and "\n" not in msg
    sd_log = write_log(tmp_path / "sd.log", "stable_diffusion", [sd(80.0, "FID", 1, 2000)])
    with pytest.raises(ImportFailure, match="'stable_diffusion' is judged on several"):
        load_result(sd_log, Options(targets={"stable_diffusion": 90.0}, higher_is_better=False))


def test_cli_target_on_maskrcnn_is_a_one_line_error(tmp_path, capsys):
    evals = [line("eval_accuracy", {"BBOX": 0.38, "SEGM": 0.35}, 2000, epoch_num=1)]
    path = write_log(tmp_path / "mrc" / "result_0.txt", "maskrcnn", evals)
    out = tmp_path / "out"
    assert (
        main(["import", "mlperf", str(path), "--target", "maskrcnn=0.37", "--out", str(out)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "--target sets one scalar target" in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("benchmark", "kw"),
    [("resnet", {}), ("newbench", {"targets": {"newbench": 0.5}})],
)
def test_dict_valued_accuracy_for_a_scalar_target_is_an_error(tmp_path, benchmark, kw):
    evals = [line("eval_accuracy", {"BBOX": 0.38, "SEGM": 0.35}, 2000, epoch_num=1)]
    path = write_log(tmp_path / "r.log", benchmark, evals)
    with pytest.raises(ImportFailure, match=r"line 3: field eval_accuracy: a dict of components"):
        load_result(path, Options(**kw))


def test_scalar_benchmark_lines_naming_several_metrics_is_an_error(tmp_path):
    evals = [
        line("eval_accuracy", 0.5, 2000, metric="top1", epoch_num=1),
        line("eval_accuracy", 0.8, 2001, metric="top5", epoch_num=1),
    ]
    with pytest.raises(ImportFailure, match=r"metadata.metric: lines name several metrics"):
        load_result(write_log(tmp_path / "r.log", "resnet", evals))


# ------------------------------------------------------------------ after run_stop
def test_evaluation_after_run_stop_does_not_count(tmp_path):
    evals = [
        line("eval_accuracy", 0.70, 2000, epoch_num=1),
        line("run_stop", ms=3000, status="success"),
        line("eval_accuracy", 0.80, 4000, epoch_num=2),
    ]
    path = write_log(tmp_path / "r.log", "resnet", evals, stop=None)
    rec = load_result(path).record
    assert rec["status"] == "not_reached"
    assert rec["time_to_accuracy"]["reached"] is False
    assert [e["metrics"]["top1"] for e in rec["evaluations"]] == [0.70]
    assert [f for f in rec["flags"] if f.startswith("1 evaluation(s) ") and "line 5" in f]


def test_evaluation_timed_after_run_stop_counts_as_offline(tmp_path):
    # file order says before, its clock says after: an offline evaluation, which MLCommons'
    # checker accepts (v4.0 stable_diffusion)
    evals = [line("eval_accuracy", 0.80, 9500, epoch_num=1)]
    rec = load_result(write_log(tmp_path / "r.log", "resnet", evals, stop_ms=9000)).record
    assert rec["status"] == "reached" and len(rec["evaluations"]) == 1
    assert any("offline evaluation" in f for f in rec["flags"])


def test_stable_diffusion_step_completed_after_run_stop_does_not_count(tmp_path):
    evals = [
        sd(80.0, "FID", 1, 2000),
        line("run_stop", ms=3000, status="success"),
        sd(0.2, "CLIP", 1, 3500),
    ]
    rec = load_result(write_log(tmp_path / "r.log", "stable_diffusion", evals, stop=None)).record
    assert rec["status"] == "not_reached" and rec["evaluations"] == []


# ------------------------------------------------------------------ folder scores
def _folder(tmp_path: Path, benchmark: str, target: float, minutes: list[float | None]) -> Path:
    """result_i.txt per run: converged in `m` minutes, or aborted (None) after 100 minutes."""
    folder = tmp_path / benchmark
    for i, m in enumerate(minutes):
        stop_ms = 1000 + (100 if m is None else m) * 60_000
        value = target if m is not None else target / 2
        evals = [line("eval_accuracy", value, stop_ms - 1, epoch_num=1)]
        status = "success" if m is not None else "aborted"
        write_log(folder / f"result_{i}.txt", benchmark, evals, stop=status, stop_ms=stop_ms)
    return folder


def _score(folder: Path) -> dict:
    (score,) = score_folders([load_result(p) for p in discover([folder])])
    return score


def test_unet3d_drops_four_at_each_end_and_tolerates_four_failures(tmp_path):
    minutes: list[float | None] = [float(10 + i) for i in range(38)] + [None, None]
    score = _score(_folder(tmp_path, "unet3d", 0.908, minutes))
    # sorted 10..47 with 2 failed: drop 10-13 and the 2 slowest converged (46, 47)
    assert score["kept_min"] == [float(m) for m in range(14, 46)]
    assert score["score_min"] == pytest.approx(29.5)
    assert score["dropped_each_end"] == 4 and score["flags"] == []


def test_unet3d_five_failures_give_no_score(tmp_path):
    minutes: list[float | None] = [float(10 + i) for i in range(35)] + [None] * 5
    score = _score(_folder(tmp_path, "unet3d", 0.908, minutes))
    assert score["score_min"] is None
    assert score["reason"].startswith("5 runs did not reach") and "at most 4" in score["reason"]


def test_unet3d_with_too_few_runs_gives_no_score(tmp_path):
    score = _score(_folder(tmp_path, "unet3d", 0.908, [10.0, 11.0, 12.0, 13.0, 14.0]))
    assert score["score_min"] is None and score["reason"] == "needs at least 9 runs, got 5"
    (flag,) = score["flags"]
    assert flag.startswith("5 runs; ") and "40 for unet3d" in flag


def test_more_runs_than_a_submission_has_is_flagged(tmp_path):
    score = _score(_folder(tmp_path, "resnet", 0.759, [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]))
    assert score["score_min"] == pytest.approx(12.5)
    (flag,) = score["flags"]
    assert flag.startswith("6 runs; ") and "5 for resnet" in flag


@pytest.mark.parametrize(
    ("minutes", "value"),
    [
        ([1.0, 2.0, 3.0], 2.0),
        ([5.0, None, 1.0, 2.0], 3.5),  # the failed run is the slowest dropped: mean(2, 5)
        ([3.0, 1.0, 2.0, 4.0, 9.0], 3.0),
        ([None, None, 1.0, 2.0], None),  # two failed, one may be dropped: no score
    ],
)
def test_one_dropped_is_the_projects_olympic_mean(minutes, value):
    assert olympic_mean(minutes, 1) == olympic_mean(minutes)
    assert olympic_mean(minutes, 1).value == value


def test_unet3d_rule_matches_mlperf_logging_summarizer():
    summarizer = pytest.importorskip("mlperf_logging.result_summarizer.result_summarizer")
    minutes: list[float | None] = [float((7 * i) % 41 + 3) for i in range(37)] + [None] * 3
    converged = [m for m in minutes if m is not None]
    expected = summarizer._compute_olympic_average(list(converged), 3, 4)
    assert olympic_mean(minutes, 4).value == pytest.approx(expected)


# ------------------------------------------------------------------ perfsuite's own log
def _perfsuite_run(runs: Path, accs=(0.5, 0.8, 0.95), success=True, **task) -> Path:
    """A run folder as the runner leaves it: run.json naming mllog.txt, and other logs."""
    run_id = "cifar10-20260101T000000-abcd"
    folder = runs / run_id
    folder.mkdir(parents=True)
    clock = FakeClock(start=1_700_000_000.0, step=0.25)
    write_run(folder / "mllog.txt", accs, success, clock, benchmark="cifar10")
    (folder / "perfsuite.log").write_text("USDT: profiler_start\n")  # not an MLPerf log
    rec = new_record(
        run_id=run_id, task={"name": "cifar10", "metric": "top1", "threshold": 0.94, **task}
    )
    rec["sidecars"]["mllog"] = "mllog.txt"
    write_record(folder, rec)
    return folder


def test_perfsuite_run_folder_imports_its_mllog_with_the_runs_target(tmp_path):
    run = _perfsuite_run(tmp_path / "runs")
    assert list(discover([tmp_path / "runs"])) == [run / "mllog.txt"]
    rec = load_result(run / "mllog.txt").record
    validate_record(rec)
    assert (rec["task"]["name"], rec["task"]["metric"], rec["task"]["threshold"]) == (
        "cifar10",
        "top1",
        0.94,
    )
    assert rec["status"] == "reached"
    assert rec["time_to_accuracy"]["evaluation_index"] == 2
    assert [e["metrics"]["top1"] for e in rec["evaluations"]] == [0.5, 0.8, 0.95]
    assert rec["source"]["files"] == [str(run / "mllog.txt"), str(run / "run.json")]
    assert rec["extra"]["mlperf"]["perfsuite_run"]["run_id"] == run.name


def test_perfsuite_lower_is_better_task_keeps_its_direction(tmp_path):
    # 0.99 and 0.95 meet ">= 0.94" but not "<= 0.94"
    run = _perfsuite_run(tmp_path / "runs", accs=(0.99, 0.95), direction="lower")
    rec = load_result(run / "mllog.txt").record
    assert rec["task"]["direction"] == "lower" and rec["status"] == "not_reached"


def test_import_beside_the_original_run_never_touches_it(tmp_path):
    runs = tmp_path / "runs"
    run = _perfsuite_run(runs)
    before = (run / "run.json").read_bytes()
    first = run_import(MLPerfImporter(), [runs], runs, keep_going=False)
    again = run_import(MLPerfImporter(), [runs], runs, keep_going=False)
    assert (run / "run.json").read_bytes() == before
    (it,) = first.items
    assert it.record["run_id"] == f"mlperf-cifar10-{run.name}-mllog" != run.name
    assert any("second view of that run" in f for f in it.record["flags"])
    assert [i.record["run_id"] for i in again.items] == [it.record["run_id"]]  # replaced
    assert sorted(p.name for p in runs.iterdir()) == sorted([run.name, it.record["run_id"]])


def test_mllog_without_a_run_beside_it_still_needs_target(tmp_path):
    path = write_run(tmp_path / "mllog.txt", benchmark="cifar10")
    assert list(discover([tmp_path])) == [path]
    with pytest.raises(ImportFailure, match=r"'cifar10' is in no training ruleset.*--target"):
        load_result(path)


def test_run_json_of_another_task_is_an_error(tmp_path):
    run = _perfsuite_run(tmp_path / "runs")
    rec = json.loads((run / "run.json").read_text())
    rec["task"]["name"] = "digits"
    (run / "run.json").write_text(json.dumps(rec))
    with pytest.raises(ImportFailure, match=r"run.json: field task.name: 'digits'"):
        load_result(run / "mllog.txt")


def test_target_option_still_records_the_run_beside_the_log(tmp_path):
    """--target sets the target, but the run.json beside the log still names the run: the
    import records it (`perfsuite_run`), so the leaderboard can tell it is that run."""
    run = _perfsuite_run(tmp_path / "runs")
    rec = load_result(run / "mllog.txt", Options(targets={"cifar10": 0.9})).record
    assert rec["task"]["threshold"] == 0.9  # --target, not the run's 0.94
    assert rec["extra"]["mlperf"]["perfsuite_run"] == {
        "run_id": run.name,
        "run_json": str(run / "run.json"),
    }
    # the run.json did not set the result: the log alone is the source (digest unchanged)
    assert rec["source"]["files"] == [str(run / "mllog.txt")]
    assert any(f.startswith(f"log of perfsuite run {run.name!r}") for f in rec["flags"])
    assert not any(f.startswith("target from perfsuite run") for f in rec["flags"])


def test_benchmark_with_an_mlperf_target_records_the_run_beside_the_log(tmp_path):
    """A log whose benchmark MLPerf knows (resnet) takes MLPerf's target, and still the run."""
    run = _perfsuite_run(tmp_path / "runs")
    rec = load_result(run / "mllog.txt", Options(benchmark="resnet")).record
    assert rec["task"]["name"] == "resnet" and rec["task"]["threshold"] == 0.759
    assert rec["extra"]["mlperf"]["perfsuite_run"]["run_id"] == run.name


def _digits(rec):
    rec["task"]["name"] = "digits"
    return json.dumps(rec)


def _no_task(rec):
    del rec["task"]
    return json.dumps(rec)


def _other_log(rec):
    rec["sidecars"]["mllog"] = "other.txt"
    return json.dumps(rec)


@pytest.mark.parametrize(
    "run_json, origin",
    [
        (_digits, True),  # it names this log: the same run, whatever its task is called
        (_no_task, True),  # no target in it, and none was asked of it
        (_other_log, False),  # it names another log
        (lambda rec: "not json {", False),  # unreadable: it names no run
        (lambda rec: json.dumps([rec]), False),  # not a record
    ],
    ids=["other-task", "no-task", "other-log", "not-json", "not-a-record"],
)
def test_with_target_the_run_json_beside_the_log_is_never_an_error(tmp_path, run_json, origin):
    """Only a target taken from the run.json can make it an error (as in
    `test_run_json_of_another_task_is_an_error`); with --target, or with a benchmark MLPerf
    has a target for, the run.json names the run or none."""
    run = _perfsuite_run(tmp_path / "runs")
    (run / "run.json").write_text(run_json(json.loads((run / "run.json").read_text())))
    for kwargs in ({"targets": {"cifar10": 0.9}}, {"benchmark": "resnet"}):
        got = load_result(run / "mllog.txt", Options(**kwargs)).record["extra"]["mlperf"][
            "perfsuite_run"
        ]
        assert (got or {}).get("run_id") == (run.name if origin else None), kwargs
    with pytest.raises(ImportFailure):  # the target from the run.json: an error, as before
        load_result(run / "mllog.txt")


def test_real_h100_run_reads_back_with_its_own_target(tmp_path):
    run = extract_h100_run(tmp_path)
    original = json.loads((run / "run.json").read_text())
    (path,) = discover([run])
    assert path.name == "mllog.txt"
    rec = load_result(path).record
    assert rec["task"]["threshold"] == original["task"]["threshold"] == 0.94
    assert rec["status"] == original["status"] == "not_reached"
    top1 = [e["metrics"]["top1"] for e in original["evaluations"]]
    assert [e["metrics"]["top1"] for e in rec["evaluations"]] == top1
    events = [json.loads(x.split(":::MLLOG ", 1)[1]) for x in path.read_text().splitlines()]
    t = {e["key"]: e["time_ms"] for e in events}
    assert rec["extra"]["mlperf"]["time_to_train"]["value"] == (
        (t["run_stop"] - t["run_start"]) / 1000.0
    )
