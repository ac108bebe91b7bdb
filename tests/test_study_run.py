"""Studies end to end on `digits` (seconds per run): DNC, resume, the CLI, the executors."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from perfsuite.analyzers.runs.study import analyze_study  # noqa: E402
from perfsuite.hostinfo import usable_cpus  # noqa: E402
from perfsuite.record import load_record, write_record  # noqa: E402
from perfsuite.runner import RunOptions  # noqa: E402
from perfsuite.runner.launch.executor import Job, LocalExecutor, run_in_process  # noqa: E402
from perfsuite.study.execute import open_study, run_study  # noqa: E402
from perfsuite.study.folder import load_study, pending, refresh_runs  # noqa: E402
from perfsuite.study.spec import StudyError, spec_from_dict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DIVERGING = f"{ROOT / 'tests/fixtures/study/diverging.py'}:DivergesWithChannelsLast"
# one thread: the runs are read, not timed, and two threads on two shared cores cost more
FAST = {"epochs": 2, "capture": False, "threads": 1}

pytestmark = pytest.mark.usefixtures("private_cache")


def _runs(path: Path) -> list[Path]:
    return sorted(path.glob("configs/*/*/run.json"))


@pytest.fixture
def runs_in_this_process(monkeypatch):
    """`LocalExecutor` with each child process replaced by the same run in this process, for
    the tests of what comes of the runs rather than of the process they run in (a process
    costs seconds of imports). The processes are checked where they are the point:
    test_one_at_a_time_runs_each_repeat_in_a_fresh_process, and side by side on
    `digits_lesion_study`'s runs. torch's thread count, which a run sets, is put back."""
    from perfsuite.runner.launch import executor as ex

    class Ran:
        def __init__(self, opts: RunOptions) -> None:
            self.reply = run_in_process(opts)

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(ex, "_spawn", lambda opts, live=False: Ran(opts))
    monkeypatch.setattr(ex, "_child_result", lambda job, proc: ex.JobResult(job, *proc.reply))
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("runs_in_this_process")
def test_factor_study_detects_dnc_and_resumes(tmp_path):
    """baseline reaches 90%; +batch=1024 (4 steps in 2 epochs) misses it; adding channels_last
    makes the loss NaN in epoch 2: diverged, epoch 1 kept."""
    spec = spec_from_dict(
        {
            "kind": "factor",
            "workload": DIVERGING,
            "options": ["batch=1024", "channels_last"],
            "threshold": 0.9,
            "run": FAST,
        },
        "test",
    )
    study = open_study(spec, tmp_path / "s")
    results = run_study(study, LocalExecutor(), show_run_progress=False)
    assert [r.ok for r in results] == [True, True, True]
    records = refresh_runs(study)
    statuses = {name: [r["status"] for r in recs] for name, recs in records.items()}
    assert statuses == {
        "baseline": ["reached"],
        "+batch=1024": ["not_reached"],
        "+channels_last": ["diverged"],
    }
    diverged = records["+channels_last"][0]
    assert [e["epoch"] for e in diverged["evaluations"]] == [1]
    assert diverged["config"]["batch_size"] == 1024
    assert diverged["group"]["id"] == f"{study.study_id}:+channels_last"

    result = analyze_study(load_study(study.path).manifest, records)
    assert [c.status for c in result.configs] == ["converged", "DNC", "DNC"]
    assert result.configs[2].n_diverged == 1
    assert result.configs[0].tta_speedup == pytest.approx(1.0)
    assert [c.tta_speedup for c in result.configs[1:]] == [None, None]
    manifest = json.loads((study.path / "study.json").read_text())
    assert [r["status"] for c in manifest["configurations"] for r in c["runs"]] == [
        "reached",
        "not_reached",
        "diverged",
    ]

    # resume: nothing left to do, no new run folder
    before = _runs(study.path)
    again = open_study(spec, tmp_path / "s")
    assert again.study_id == study.study_id and pending(again) == []
    assert run_study(again, LocalExecutor(), show_run_progress=False) == []
    assert _runs(study.path) == before

    # a crashed run is run again, and only that one
    crashed_file = next(p for p in before if "01-plus-batch" in str(p))
    rec = load_record(crashed_file)
    rec["status"] = "crashed"
    for key in ("_path", "_dir"):
        rec.pop(key, None)
    write_record(crashed_file.parent, rec)
    assert [(c.name, seed) for c, _, seed in pending(again)] == [("+batch=1024", 0)]
    assert len(run_study(again, LocalExecutor(), show_run_progress=False)) == 1
    assert len(_runs(study.path)) == len(before) + 1
    assert [r["status"] for r in refresh_runs(again)["+batch=1024"]] == ["not_reached"]

    # the same folder for another study is refused
    other = spec_from_dict({**spec.to_dict(), "options": ["channels_last"]}, "test")
    with pytest.raises(StudyError, match="holds a different study"):
        open_study(other, tmp_path / "s")


def _perfsuite(capsys, *args: str) -> tuple[int, str, str]:
    """`perfsuite ARGS` in this process, through the program's entry (HTML pages included):
    (exit status, stdout, stderr). The process itself is `digits_lesion_study`'s."""
    from perfsuite.__main__ import main

    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_study_file_json_and_resume(tmp_path, digits_lesion_study, capsys):
    # `perfsuite study run lesion.toml --out OUT --json --quiet --parallel 2`, the file a
    # lesion study of channels_last on digits (threshold 0.5, 1 epoch, capture off): made once
    # per session (tests/conftest.py LESION_STUDY_FILE); tests/test_api_study.py reads a copy
    out, proc = digits_lesion_study
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)["study"]
    assert [c["name"] for c in result["configs"]] == ["full", "-channels_last"]
    assert all(c["n_runs"] == 1 for c in result["configs"])
    assert result["configs"][0]["switches"] == ["channels_last"]
    # --parallel 2: two processes of their own, side by side, each with half the cores
    recs = [load_record(p) for p in _runs(out)]
    pids = {(r.get("owner") or {}).get("pid") for r in recs}
    assert None not in pids and len(pids) == 2 and os.getpid() not in pids
    assert [r["config"]["threads"] for r in recs] == [max(1, usable_cpus() // 2)] * 2
    code, stdout, stderr = _perfsuite(capsys, "study", "run", str(out))
    assert code == 0, stderr[-2000:]
    assert "2 of 2 runs already finished" in stderr
    assert "TTA speed-up" in stdout and "-channels_last" in stdout
    assert len(_runs(out)) == 2
    html = tmp_path / "s.html"
    code, _, stderr = _perfsuite(capsys, "study", "show", str(out), "-o", str(html))
    assert code == 0 and "fig-study-speedups" in html.read_text(), stderr[-2000:]


def test_cli_unsupported_switch_is_one_line_and_runs_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    code, _, err = _perfsuite(
        capsys, "study", "lesion", "digits", "--opts", "bf16,tta", "--out", str(out)
    )
    assert code == 2
    err = err.strip()
    assert err.startswith("perfsuite: error: configuration 'full': ") and "\n" not in err
    assert "switch 'tta'" in err and "(bf16, channels_last, compile," in err
    assert not out.exists()


def _jobs(tmp_path, n: int, threads: int | None = None) -> list[Job]:
    return [
        Job(
            RunOptions(
                workload="digits",
                out=str(tmp_path / "runs"),
                epochs=1,
                seed=s,
                capture=False,
                progress=False,
                threads=threads,
            ),
            key="digits",
            label=f"seed {s}",
        )
        for s in range(n)
    ]


@pytest.mark.usefixtures("runs_in_this_process")
def test_local_executor_side_by_side_splits_the_cores(tmp_path):
    # real processes side by side: `digits_lesion_study` (test_cli_study_file_json_and_resume)
    started, finished = [], []
    results = LocalExecutor(parallel=2).run(
        _jobs(tmp_path, 2), on_start=started.append, on_result=finished.append
    )
    assert [r.ok for r in results] == [True, True] and len(started) == len(finished) == 2
    recs = [load_record(r.run_dir) for r in results]
    assert [r["config"]["seed"] for r in recs] == [0, 1]
    assert [r["config"]["threads"] for r in recs] == [max(1, usable_cpus() // 2)] * 2
    assert all(r["status"] in ("reached", "not_reached") for r in recs)


def test_local_executor_stops_at_a_wrong_option(tmp_path):
    jobs = _jobs(tmp_path, 2)
    bad = Job(RunOptions(workload="digits", out=str(tmp_path), switches=["tta"]), key="bad")
    results = LocalExecutor().run([bad, *jobs])
    assert len(results) == 1 and results[0].fatal
    assert "does not support switch 'tta'" in str(results[0].error)


def test_ray_executor_on_a_local_instance(tmp_path):
    ray = pytest.importorskip("ray", reason="ray not installed (pip install 'perfsuite[ray]')")
    from perfsuite.runner.launch.ray_executor import RayExecutor

    # ray.init installs a SIGTERM handler that ray.shutdown leaves in place; a pool forked
    # later in this process (HTA's parser) would inherit it and its terminate() can hang.
    sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        results = RayExecutor(cpus_per_run=1).run(_jobs(tmp_path, 2))
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, sigterm)
    assert [r.ok for r in results] == [True, True], [r.error for r in results]
    for r, seed in zip(results, (0, 1), strict=True):
        assert r.run_dir.parent == tmp_path / "runs"  # unpacked into the job's out folder
        rec = load_record(r.run_dir)
        assert rec["config"]["seed"] == seed and rec["config"]["threads"] == 1
        assert rec["evaluations"] and rec["status"] in ("reached", "not_reached")


def test_side_by_side_runs_get_a_device_each(tmp_path, monkeypatch):
    """Three jobs, two GPUs: the first two run on different devices, the third on the one
    that was freed first."""
    from perfsuite.runner.launch import executor as ex

    class Done:
        def poll(self):
            return 0

    spawned = []
    monkeypatch.setattr(ex, "_spawn", lambda opts, live: spawned.append(opts) or Done())
    monkeypatch.setattr(ex, "_child_result", lambda job, proc: ex.JobResult(job, None))
    results = ex.LocalExecutor(2, ["cuda:0", "cuda:1"], poll_s=0).run(_jobs(tmp_path, 3))
    assert [o.device for o in spawned] == ["cuda:0", "cuda:1", "cuda:0"]
    assert [o.seed for o in spawned] == [0, 1, 2] and len(results) == 3
    assert all(o.threads >= 1 and not o.progress for o in spawned)


def test_sigterm_stops_every_run_to_come(tmp_path, monkeypatch):
    """A terminated run ends the study (or the repeats), not only itself: the child says so
    in its reply and no further child starts."""
    from perfsuite.runner.launch import executor as ex
    from perfsuite.runner.routes.run import Terminated

    class Done:
        def poll(self):
            return 0

    seeds = []
    monkeypatch.setattr(ex, "_spawn", lambda opts, live=False: seeds.append(opts.seed) or Done())
    monkeypatch.setattr(
        ex,
        "_child_result",
        lambda job, proc: ex.JobResult(job, None, "terminated by SIGTERM", terminated=True),
    )
    with pytest.raises(Terminated, match="SIGTERM"):
        LocalExecutor(poll_s=0).run(_jobs(tmp_path, 3))
    assert seeds == [0]


def test_child_reports_a_terminated_run(tmp_path, monkeypatch):
    """The child's side of it: Terminated inside the run becomes `terminated` in its reply."""
    import io

    from perfsuite.runner.launch import child
    from perfsuite.runner.routes.run import Terminated

    def stopped(options):
        raise Terminated("terminated by SIGTERM")

    monkeypatch.setattr(child, "run_in_process", stopped)
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"workload": "digits"})))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert child.main() == 0
    reply = json.loads(out.getvalue().splitlines()[-1])
    assert reply["terminated"] is True and reply["error"] == "terminated by SIGTERM"


def test_one_at_a_time_runs_each_repeat_in_a_fresh_process(tmp_path):
    """Repeats are independent samples: every run has its own process (the pid in its record's
    owner), as separate invocations would; one at a time, each keeps its own thread count."""
    results = LocalExecutor().run(_jobs(tmp_path, 2, threads=1))
    assert [r.ok for r in results] == [True, True], [r.error for r in results]
    recs = [load_record(r.run_dir) for r in results]
    pids = [(r.get("owner") or {}).get("pid") for r in recs]
    assert None not in pids and len(set(pids)) == 2 and os.getpid() not in pids
    assert [r["config"]["threads"] for r in recs] == [1, 1]


@pytest.mark.usefixtures("runs_in_this_process")
def test_study_with_corruptions_evaluates_each_threshold_model_once(tmp_path):
    """`eval.corruptions`: every run that reached gets the corruption suite on its threshold
    model after the runs (same images for every configuration); resume does not repeat it."""
    spec = spec_from_dict(
        {
            "kind": "lesion",
            "workload": "digits",
            "options": ["channels_last"],
            "threshold": 0.5,
            "run": {"epochs": 1, "capture": False, "threads": 1},
            "eval": {"corruptions": True, "limit": 40, "families": ["gaussian_noise", "contrast"]},
        },
        "test",
    )
    study = open_study(spec, tmp_path / "s")
    said: list[str] = []
    run_study(study, LocalExecutor(), progress=said.append, show_run_progress=False)
    records = refresh_runs(study)
    for recs in records.values():
        c = recs[0]["generalization"]["corruptions"]
        assert c["limit"] == 40 and sorted(c["families"]) == ["contrast", "gaussian_noise"]
        assert 0.0 <= c["mean"] <= 1.0
    assert sum("mean corruption accuracy" in s for s in said) == 2
    result = analyze_study(load_study(study.path).manifest, records)
    means = [r["generalization"]["corruptions"]["mean"] for r in records["-channels_last"]]
    assert result.configs[1].corruption_accuracy.mean == pytest.approx(means[0])
    assert result.configs[0].corruption_delta == pytest.approx(0.0)

    said.clear()
    run_study(open_study(spec, tmp_path / "s"), LocalExecutor(), progress=said.append)
    assert sum("corruptions already measured" in s for s in said) == 2


def test_cli_corruption_limit_needs_corruptions(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a study without --out would make runs/
    code, _, err = _perfsuite(
        capsys, "study", "lesion", "digits", "--opts", "channels_last", "--corruption-limit", "5"
    )
    assert code != 0 and "--corruption-limit needs --corruptions" in err
    assert not (tmp_path / "runs").exists()
