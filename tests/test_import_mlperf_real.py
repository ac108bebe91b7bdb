"""`perfsuite import mlperf` on real MLCommons result folders (tests/fixtures/mlperf/real),
scored against mlperf-logging's own result summarizer run on the same folders, and the bad
inputs a whole round brings: truncated and unreadable files, empty folders, inference, HPC and
non-MLPerf files, targets per benchmark, mixed folders, placeholders."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.importers import ImportFailure, mlperf_rules
from perfsuite.importers.base import run_import
from perfsuite.importers.mlperf import MLPerfImporter, Options, load_result
from perfsuite.record import validate_record

REAL = Path(__file__).parent / "fixtures" / "mlperf" / "real"
V51, V40 = "training_results_v5.1", "training_results_v4.0"
FOLDERS = {  # benchmark -> (round folder, submitter, system), ruleset, required runs
    "llama31_8b": ((V51, "AMD", "MI350X_EPYC_9575F_pytorch"), "5.1.0", 10),
    "llama31_405b": ((V51, "NVIDIA", "tyche_ngpu512_ngc25.09_nemo"), "5.1.0", 3),
    "flux1": ((V51, "University-of-Florida", "hpg.dgxb200x8.n9"), "5.1.0", 10),
    "stable_diffusion": ((V40, "Quanta_Cloud_Technology", "D74H-7U"), "4.0.0", 10),
    "gpt3": ((V40, "Google", "cloud-tpu-v5p-1024-maxtext"), "4.0.0", 3),
}


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    """The fixtures unpacked: result_*.txt.gz -> result_*.txt, the rest copied as is."""
    root = tmp_path_factory.mktemp("real")
    for src in REAL.rglob("*"):
        if not src.is_file() or src.name == "PROVENANCE.md":
            continue
        dst = root / src.relative_to(REAL)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.suffix == ".gz":
            dst.with_suffix("").write_bytes(gzip.decompress(src.read_bytes()))
        else:
            shutil.copyfile(src, dst)
    return root


def folder(root: Path, bench: str) -> Path:
    (rnd, submitter, system), _, _ = FOLDERS[bench]
    return root / rnd / submitter / "results" / system / bench


def official_score(path: Path, bench: str, ruleset: str) -> float | None:
    """mlperf-logging's result summarizer on the folder (its own scoring code, not a copy)."""
    rs = pytest.importorskip("mlperf_logging.result_summarizer.result_summarizer")
    with contextlib.redirect_stdout(io.StringIO()):
        out = rs._compute_strong_score_standalone(
            bench, None, False, str(path), "training", ruleset, return_full_scores=True
        )
    return out[2]


def ours(paths: list[Path], out: Path, options: Options | None = None, keep_going=False):
    return run_import(MLPerfImporter(options or Options()), paths, out, keep_going)


@pytest.mark.parametrize("bench", sorted(FOLDERS))
def test_scores_equal_the_official_summarizer(real, tmp_path, bench):
    pytest.importorskip("mlperf_logging")
    _, ruleset, required = FOLDERS[bench]
    path = folder(real, bench)
    result = ours([path], tmp_path / "out")
    (score,) = result.extra["scores"]
    expected = official_score(path, bench, ruleset)
    assert expected is not None and score["score_min"] is not None
    assert score["score_min"] == pytest.approx(expected, rel=1e-12, abs=0)
    assert score["required_runs"] == required
    assert score["round"] == ruleset[:3]
    assert not result.failed
    for it in result.items:
        validate_record(it.record)
        assert it.record["extra"]["mlperf"]["rules"].startswith(f"MLPerf Training {ruleset} ")


def test_stable_diffusion_offline_evaluations_count(real):
    path = folder(real, "stable_diffusion") / "result_0.txt"
    rec = load_result(path).record
    assert rec["status"] == "reached"
    assert any("timed after it (offline evaluation" in f for f in rec["flags"])
    assert rec["task"]["targets"] == [
        {"metric": "fid", "target": 90.0, "direction": "lower"},
        {"metric": "clip", "target": 0.15, "direction": "higher"},
    ]


def test_ids_name_round_submitter_and_system_and_hardware_comes_from_systems_json(real):
    rec = load_result(folder(real, "llama31_405b") / "result_0.txt").record
    assert rec["run_id"] == "mlperf-v5.1-NVIDIA-tyche_ngpu512_ngc25.09_nemo-llama31_405b-result_0"
    hw = rec["hardware"]
    assert hw["name"] == "NVIDIA Blackwell GPU (GB200)" and hw["count"] == 512  # 128 x 4
    assert hw["system"] == "Tyche (8x NVIDIA GB200 NVL72)" and hw["nodes"] == 128
    assert rec["framework"] == "NVIDIA NeMo Framework Release 25.09"
    assert rec["extra"]["mlperf"]["submitter"] == "NVIDIA"


def test_placeholder_is_never_a_hardware_name(real, tmp_path):
    with_desc = load_result(folder(real, "flux1") / "result_0.txt").record
    assert with_desc["hardware"]["name"] == "NVIDIA Blackwell GPU (B200-SXM-180GB)"
    assert with_desc["hardware"]["count"] == 72
    alone = tmp_path / "result_0.txt"  # out of the layout: no systems/<system>.json
    shutil.copyfile(folder(real, "flux1") / "result_0.txt", alone)
    rec = load_result(alone, Options(round="5.1.0")).record
    assert rec["hardware"]["name"] is None
    assert any("'9xSUBMISSION_PLATFORM_PLACEHOLDER'" in f and "placeholder" in f
               for f in rec["flags"])  # fmt: skip
    assert "PLACEHOLDER" not in json.dumps(rec["hardware"])


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_truncated_before_run_start_counts_as_a_dropped_run(real, tmp_path):
    """--keep-going: the file is listed as failed, and the folder's score counts it as a run
    that did not converge (drops only the fastest), as the official summarizer does."""
    sub = tmp_path / V51 / "AMD"
    path = _copy(folder(real, "llama31_8b"), sub / "results" / "MI350X_EPYC_9575F_pytorch" / "x")
    shutil.copytree(folder(real, "llama31_8b").parents[2] / "systems", sub / "systems")
    bad = path / "result_3.txt"
    lines = bad.read_text().splitlines(keepends=True)
    cut = next(i for i, x in enumerate(lines) if '"key": "run_start"' in x)
    bad.write_text("".join(lines[:cut]))
    with pytest.raises(ImportFailure, match=r"result_3\.txt: field run_start: missing"):
        ours([path], tmp_path / "strict")
    result = ours([path], tmp_path / "out", keep_going=True)
    assert [f["file"] for f in result.failed] == [str(bad)]
    (score,) = result.extra["scores"]
    assert score["runs"] == 10 and score["converged"] == 9
    assert score["unreadable"] == [str(bad)]
    expected = official_score(path, "llama31_8b", "5.1.0")
    assert score["score_min"] == pytest.approx(expected, rel=1e-12, abs=0)


def test_empty_folder_is_listed_and_the_rest_imported(real, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    args = ["import", "mlperf", str(folder(real, "llama31_405b")), str(empty)]
    assert main([*args, "--out", str(out), "--keep-going", "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    (failed,) = got["failed"]
    assert failed["file"] == str(empty)
    assert failed["error"].startswith(f"{empty}: no MLPerf log")
    assert len(got["imported"]) == 3 and got["scores"][0]["score_min"] is not None
    assert main([*args, "--out", str(tmp_path / "o2")]) == 2  # without --keep-going: stops
    assert not (tmp_path / "o2").exists()


INFERENCE = (
    ':::MLLOG {"key": "loadgen_version", "value": "4.1", "time_ms": 1.0, '
    '"namespace": "mlperf::logging", "event_type": "POINT_IN_TIME", "metadata": {}}\n'
    ':::MLLOG {"key": "effective_scenario", "value": "Offline", "time_ms": 2.0, '
    '"namespace": "mlperf::logging", "event_type": "POINT_IN_TIME", "metadata": {}}\n'
)


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        (
            "mlperf_log_detail.log",
            INFERENCE,
            "an MLPerf Inference log (LoadGen keys), not a training log",
        ),
        (
            "summary.log",
            "================================================\nMLPerf Results Summary\n",
            "an MLPerf Inference result summary (LoadGen), not a training log",
        ),
        ("train.log", "epoch,loss\n1,0.5\n", "not an MLPerf log (no :::MLLOG lines)"),
    ],
)
def test_other_files_are_said_what_they_are_in_one_line(tmp_path, capsys, name, text, says):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ImportFailure) as err:
        load_result(path)
    assert str(err.value) == f"{path}: {says}"
    assert main(["import", "mlperf", str(path), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def _log(path: Path, bench: str, evals: list[tuple[str, float]], platform="x") -> Path:
    """A minimal MLPerf log: benchmark, run_start at 0 s, evaluations, run_stop at 600 s."""
    ms = 1_700_000_000_000
    lines = [("submission_benchmark", bench, {}, 0), ("submission_platform", platform, {}, 0)]
    lines.append(("run_start", None, {}, 1))
    lines += [
        (key, v, {"epoch_num": i + 1, "samples_count": i + 1}, 2 + i)
        for i, (key, v) in enumerate(evals)
    ]
    lines.append(("run_stop", None, {"status": "success"}, 600_000))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            ":::MLLOG "
            + json.dumps({"key": k, "value": v, "time_ms": ms + t, "metadata": meta})
            + "\n"
            for k, v, meta, t in lines
        )
    )
    return path


def test_hpc_log_is_recognised_and_scored_by_hpc_rules(tmp_path):
    pytest.importorskip("mlperf_logging")
    path = _log(tmp_path / "hpc_results_v3.0" / "r.log", "cosmoflow", [("eval_error", 0.12)])
    rec = load_result(path).record
    assert rec["status"] == "reached"
    assert rec["task"]["metric"] == "mae" and rec["task"]["threshold"] == 0.124
    assert rec["extra"]["mlperf"]["rules"].startswith("MLPerf Hpc 3.0.0")
    assert any(f.startswith("MLPerf HPC log (cosmoflow)") for f in rec["flags"])


def test_target_is_per_benchmark(tmp_path):
    pytest.importorskip("mlperf_logging")
    r = tmp_path / V51 / "S" / "results" / "sys"
    llama = _log(r / "llama31_8b" / "result_0.txt", "llama31_8b", [("eval_accuracy", 3.2)])
    retina = _log(r / "retinanet" / "result_0.txt", "retinanet", [("eval_accuracy", 0.35)])
    opts = Options(targets={"llama31_8b": 3.1}, higher_is_better=False)
    a, b = load_result(llama, opts).record, load_result(retina, opts).record
    assert (a["task"]["threshold"], a["status"]) == (3.1, "not_reached")  # 3.2 > 3.1
    assert (b["task"]["threshold"], b["task"]["direction"], b["status"]) == (
        0.34,
        "higher",
        "reached",
    )
    assert b["extra"]["mlperf"]["rules"].startswith("MLPerf Training 5.1.0")


def test_cli_target_needs_a_benchmark_name(tmp_path, capsys):
    path = _log(tmp_path / "r.log", "llama31_8b", [("eval_accuracy", 3.2)])
    assert main(["import", "mlperf", str(path), "--target", "3.3"]) == 2
    assert "--target 3.3: give it as BENCH=VALUE" in capsys.readouterr().err


def test_mixed_folder_states_no_run_count_of_another_benchmark(tmp_path):
    pytest.importorskip("mlperf_logging")
    r = tmp_path / V51 / "S" / "results" / "sys" / "mixed"
    _log(r / "result_0.txt", "llama31_8b", [("eval_accuracy", 3.2)])
    _log(r / "result_1.txt", "retinanet", [("eval_accuracy", 0.35)])
    (score,) = ours([r], tmp_path / "out").extra["scores"]
    (flag,) = score["flags"]
    assert "['llama31_8b', 'retinanet']" in flag and flag.endswith("no score")
    assert score["required_runs"] is None


def test_required_runs_and_targets_come_from_the_installed_rules():
    pytest.importorskip("mlperf_logging")
    got = {b: mlperf_rules.official(b, "training", "5.1.0") for b in ("llama31_8b", "flux1")}
    assert got["llama31_8b"].describe() == "log_perplexity <= 3.3"
    assert got["flux1"].describe() == "eval_loss <= 0.586"
    assert [got[b].required_runs for b in ("llama31_8b", "flux1")] == [10, 10]
    assert mlperf_rules.official("llama31_405b", "training", "5.1.0").required_runs == 3
    assert mlperf_rules.official("retinanet", "training", "5.1.0").required_runs == 5
    sd = mlperf_rules.official("stable_diffusion", "training", "4.0.0")
    assert sd.describe() == "fid <= 90 and clip >= 0.15"
    assert [(c.component, c.op(), c.target) for c in sd.limits] == [
        ("FID", ">=", 0.0),
        ("CLIP", "<=", 1.0),
    ]


def test_without_mlperf_logging_a_one_line_error_or_target(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlperf_logging", None)  # import fails
    for cached in (mlperf_rules.rulesets, mlperf_rules.official):
        cached.cache_clear()
    try:
        path = _log(tmp_path / "r.log", "llama31_8b", [("eval_accuracy", 3.2)])
        with pytest.raises(ImportFailure) as err:
            load_result(path)
        msg = str(err.value)
        assert "mlperf-logging package is not installed" in msg and "\n" not in msg
        assert "pip install 'perfsuite[mlperf]'" in msg and "--target BENCH=VALUE" in msg
        opts = Options(targets={"llama31_8b": 3.3}, higher_is_better=False)
        rec = load_result(path, opts).record
        assert rec["status"] == "reached" and rec["extra"]["mlperf"]["rules"].startswith("user")
    finally:
        for cached in (mlperf_rules.rulesets, mlperf_rules.official):
            cached.cache_clear()


def test_leaderboard_and_compare_per_benchmark_and_round_with_accelerator_time(real, tmp_path):
    """Imported MLPerf folders: one board per benchmark and round; time x accelerators beside
    time; compare says another round is not comparable."""
    from perfsuite.analyzers.runs.compare import compare
    from perfsuite.analyzers.runs.leaderboard import leaderboard

    pytest.importorskip("mlperf_logging")
    result = ours([folder(real, "llama31_405b"), folder(real, "flux1")], tmp_path / "out")
    records = [it.record for it in result.items]
    boards = leaderboard(records, "training-time")
    assert [(b.task, b.round) for b in boards] == [("flux1", "5.1"), ("llama31_405b", "5.1")]
    row = boards[1].rows[0]
    rec = next(r for r in records if r["run_id"] == row.run_id)
    assert row.accelerator_s == rec["time_to_accuracy"]["time_s"] * 512
    # the same benchmark in another round gets a board of its own
    old = json.loads(json.dumps(rec))
    old["run_id"] += "-old"
    old["extra"]["mlperf"]["round"] = "5.0"
    assert [b.round for b in leaderboard([*records, old], task="llama31_405b")] == ["5.0", "5.1"]
    flux = [r for r in records if r["task"]["name"] == "flux1"]
    c = compare([("a", flux[:5]), ("b", flux[5:])])
    base = c.items[0]
    assert base.accelerator_time_s == pytest.approx(base.time_to_accuracy_s * 72)
    other = [dict(r, extra={"mlperf": {**r["extra"]["mlperf"], "round": "5.0"}}) for r in flux]
    c2 = compare([("v5.1", flux), ("v5.0", other)])
    (tta,) = [v for v in c2.verdicts if v.quantity == "time_to_accuracy"]
    assert "different MLPerf rounds (5.0 vs 5.1)" in tta.reason


def test_cli_round_and_targets_per_benchmark_in_one_command(tmp_path, capsys):
    pytest.importorskip("mlperf_logging")
    a = _log(tmp_path / "a" / "result_0.txt", "llama31_8b", [("eval_accuracy", 3.2)])
    b = _log(tmp_path / "b" / "result_0.txt", "resnet", [("eval_accuracy", 0.76)])
    args = ["import", "mlperf", str(a), str(b), "--out", str(tmp_path / "o"), "--json"]
    assert main([*args, "--round", "v5.1", "--target", "resnet=0.8"]) == 0
    got = {i["benchmark"]: i for i in json.loads(capsys.readouterr().out)["imported"]}
    assert got["llama31_8b"]["rules"].startswith("MLPerf Training 5.1.0")
    assert got["llama31_8b"]["round"] == "5.1" and got["llama31_8b"]["status"] == "reached"
    assert got["resnet"]["target"] == 0.8 and got["resnet"]["status"] == "not_reached"
    assert main([*args, "--round", "five"]) == 2
    assert "--round five: expected a round like 5.1" in capsys.readouterr().err
    # resnet is no benchmark of round 5.1: said in one line, naming what the round has
    assert main([*args, "--round", "5.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no benchmark 'resnet' (that round has: " in err and "\n" not in err


def test_a_negative_epoch_is_refused_by_field(tmp_path):
    pytest.importorskip("mlperf_logging")
    path = _log(tmp_path / "r.log", "llama31_8b", [("eval_accuracy", 3.2)])
    path.write_text(path.read_text().replace('"epoch_num": 1', '"epoch_num": -5'))
    with pytest.raises(ImportFailure) as err:
        load_result(path)
    assert "eval_accuracy.metadata.epoch_num: -5" in str(err.value)


def test_an_offline_evaluation_is_marked_and_its_record_is_consistent(tmp_path):
    """Written before run_stop, timed after it: counted, marked `offline`, and the stored time
    to train (run_stop - run_start) is not held to the evaluation's later clock."""
    pytest.importorskip("mlperf_logging")
    from perfsuite.record.consistency import problems

    path = _log(tmp_path / "r.log", "llama31_8b", [("eval_accuracy", 3.2)])
    text = path.read_text().replace('"time_ms": 1700000000002', '"time_ms": 1700000900000')
    path.write_text(text)
    rec = load_result(path).record
    assert rec["evaluations"][0]["offline"] is True
    assert rec["evaluations"][0]["train_time_s"] > rec["time_to_accuracy"]["time_s"] == 599.999
    assert problems(rec) == []
    rec["evaluations"][0].pop("offline")
    assert [p.field for p in problems(rec)] == ["time_to_accuracy.time_s"]


def test_gpt3_counts_tokens_not_epochs(real):
    """GPT-3 logs count tokens in epoch_num (MLPerf's rules): read as tokens, never as an
    epoch, so the real log imports, consistent, with its evaluations' samples and tokens."""
    from perfsuite.record.consistency import problems

    rec = load_result(folder(real, "gpt3") / "result_0.txt").record
    assert rec["status"] == "reached" and problems(rec) == []
    first, crossed = (
        rec["evaluations"][0],
        rec["evaluations"][rec["time_to_accuracy"]["evaluation_index"]],
    )
    assert first["tokens"] == 50_331_648 and first["samples"] == 50_331_648 // 2048
    # the log's train_samples is the token count trained, logged at the end: no dataset size
    assert rec["config"]["train_samples"] == rec["evaluations"][-1]["tokens"]
    assert [e["epoch"] for e in rec["evaluations"]] == list(range(1, 25))
    assert crossed["metrics"]["log_perplexity"] <= 2.69 < first["metrics"]["log_perplexity"]
    assert rec["time_to_accuracy"]["epoch"] == 24 and crossed["tokens"] == 1_207_959_552
    (flag,) = [f for f in rec["flags"] if "counts training progress in tokens" in f]
    assert "evaluations[].tokens" in flag


def test_open_division_says_it_was_judged_against_the_closed_target(real, tmp_path):
    src = folder(real, "gpt3") / "result_0.txt"
    text = src.read_text()
    assert '"value": "closed"' in text
    path = tmp_path / V40 / "Google" / "results" / "s" / "gpt3" / "result_0.txt"
    path.parent.mkdir(parents=True)
    path.write_text(text.replace('"value": "closed"', '"value": "open"'))
    rec = load_result(path).record
    (flag,) = [f for f in rec["flags"] if f.startswith("open division: ")]
    assert "log_perplexity <= 2.69" in flag and "MLPerf Training 4.0.0" in flag
    assert not [f for f in load_result(src).record["flags"] if f.startswith("open division")]


def test_a_token_count_out_of_bounds_is_refused_by_field(real, tmp_path):
    path = tmp_path / V40 / "x" / "result_0.txt"
    path.parent.mkdir(parents=True)
    text = (folder(real, "gpt3") / "result_0.txt").read_text()
    path.write_text(text.replace('"epoch_num": 100663296', '"epoch_num": -100663296'))
    with pytest.raises(ImportFailure) as err:
        load_result(path)
    assert "eval_accuracy.metadata.epoch_num: -1.00663e+08 is not a count of tokens" in str(
        err.value
    )


def test_a_300_character_benchmark_name_is_refused_by_field(tmp_path, capsys):
    path = _log(tmp_path / "r.log", "b" * 300, [("eval_accuracy", 3.2)])
    with pytest.raises(ImportFailure) as err:
        load_result(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}: field submission_benchmark: 'bbbb")
    assert "(300 characters) is not a benchmark name" in msg and len(msg) < 400
    assert main(["import", "mlperf", str(path), "--out", str(tmp_path / "o")]) == 2
    err_line = capsys.readouterr().err.strip()
    assert "field submission_benchmark" in err_line and "\n" not in err_line
    assert "site-packages" not in err_line


def test_long_names_from_the_layout_make_a_bounded_run_id(tmp_path):
    pytest.importorskip("mlperf_logging")
    system = "s" * 250  # a folder name as long as a file system allows
    path = _log(tmp_path / V51 / ("t" * 250) / "results" / system / "llama31_8b" / "result_0.txt",
                "llama31_8b", [("eval_accuracy", 3.2)])  # fmt: skip
    result = ours([path], tmp_path / "out")
    (it,) = result.items
    run_id = it.record["run_id"]
    assert len(run_id) <= 200 and run_id.startswith("mlperf-v5.1-tttt")
    assert (tmp_path / "out" / run_id / "run.json").is_file()
