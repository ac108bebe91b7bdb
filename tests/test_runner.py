"""The instrumented runner end to end on `digits`: records, stopping rules, failures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perfsuite.__main__ import main

torch = pytest.importorskip("torch")

from perfsuite.record import load_record, load_records  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.workloads import register_workload  # noqa: E402
from perfsuite.workloads.digits.workload import DigitsWorkload  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("private_cache")


def _opts(tmp_path, **kw):
    base = dict(
        workload="digits",
        out=str(tmp_path / "runs"),
        progress=False,
        measure_peaks=False,
        inference_repeats=5,
        overrides=["width=8"],  # a third of the default's time per epoch: rules, not accuracy
    )
    base.update(kw)
    return RunOptions(**base)


def test_cli_run_digits_end_to_end(tmp_path, capsys, digits_cli_run):
    # `python -m perfsuite run digits --out DIR --quiet --no-peaks --threshold 0.9` (exit
    # status 0 asserted), made once per session (tests/conftest.py): tests/test_api.py reads
    # the same record
    run_dir = digits_cli_run
    rec = load_record(run_dir)
    assert rec["status"] == "reached"
    tta = rec["time_to_accuracy"]
    assert tta["reached"] and tta["threshold"] == 0.9
    ev = rec["evaluations"]
    # stops at the first evaluation >= threshold, and that one is the time to accuracy
    assert len(ev) >= 2  # an earlier evaluation below the target
    assert ev[-1]["metrics"]["top1"] >= 0.9
    assert all(e["metrics"]["top1"] < 0.9 for e in ev[:-1])
    assert tta["time_s"] == ev[-1]["train_time_s"] and tta["epoch"] == len(ev)
    assert [e["epoch"] for e in ev] == list(range(1, len(ev) + 1))
    times = [e["train_time_s"] for e in ev]
    assert times == sorted(times)
    assert rec["throughput"]["epoch_times_s"] == pytest.approx(
        [b - a for a, b in zip([0.0, *times[:-1]], times, strict=True)]
    )
    # process CPU time on the same edges: one per epoch, > 0, at most all cores for the wall
    cpu = rec["throughput"]["epoch_cpu_times_s"]
    walls = rec["throughput"]["epoch_times_s"]
    assert len(cpu) == len(walls)
    cores = os.cpu_count() or 1
    assert all(0 < c <= w * cores + 0.05 for c, w in zip(cpu, walls, strict=True))
    # minor page faults on the same edges: one count per epoch (Linux has getrusage)
    faults = rec["throughput"]["epoch_minor_faults"]
    assert len(faults) == len(walls) and all(isinstance(f, int) and f >= 0 for f in faults)
    # the samples each epoch delivered (its last batch is partial), not 64 x steps
    per_epoch = ev[0]["samples"]
    steps = rec["extra"]["steps_per_epoch"]
    assert per_epoch < 64 * steps
    step = rec["throughput"]["step_time"]["value"]
    assert rec["throughput"]["samples_per_s"]["value"] == pytest.approx(per_epoch / (step * steps))
    # capture: counted FLOPs, modeled bytes, a profiler trace, telemetry, inference latency
    work = rec["work"]
    assert work["flops_per_step"]["provenance"] == "counted" and work["flops_per_step"]["value"] > 0
    assert work["bytes_per_step"]["provenance"] == "modeled"
    assert work["batch_size"] == 64
    assert (run_dir / rec["timeline"]["trace"]).is_file()
    assert any(o["op"] == "aten::convolution" for o in rec["timeline"]["ops"])
    assert (run_dir / "telemetry.csv").read_text().startswith("t_s,cpu_util_pct,rss_bytes")
    assert rec["telemetry"]["gpu"] is None and rec["telemetry"]["notes"]
    assert rec["inference"]["latency"]["provenance"] == "measured"
    assert rec["environment"]["frameworks"]["torch"] == torch.__version__
    assert rec["config"]["seed"] == 0 and rec["config"]["recipe_values"]["batch_size"] == 64

    # the same real record through the analysis half: roofline (JSON) and the HTML report
    capsys.readouterr()
    assert main(["roofline", str(run_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["roofline"]
    whole = doc["run"]
    step = rec["throughput"]["step_time"]["value"]
    achieved = whole["achieved_flops"]
    achieved = achieved["value"] if isinstance(achieved, dict) else achieved
    assert achieved == pytest.approx(work["flops_per_step"]["value"] / step)
    assert any(op["op"] == "aten::convolution" for op in doc["ops"])
    html_path = tmp_path / "report.html"
    assert main(["report", str(run_dir), "-o", str(html_path)]) == 0
    page = html_path.read_text()
    for sid in ("summary", "curves", "roofline", "ops", "telemetry", "environment"):
        assert f'<section id="{sid}">' in page
    assert rec["run_id"] in page


def test_the_default_target_of_digits_is_98_percent(tmp_path):
    """`perfsuite run digits` without --threshold aims at the workload's 98% (the session's
    CLI run sets its own, lower, target)."""
    from perfsuite.cli import build_parser
    from perfsuite.cli.run_flags import options_from_args
    from perfsuite.runner.routes.run import _Run

    args = build_parser().parse_args(["run", "digits", "--out", str(tmp_path)])
    task = _Run(options_from_args(args, seed=0)).record["task"]  # as the run starts
    assert task["threshold"] == 0.98 and task["metric"] == "top1"


def test_keep_going_and_never_reached(tmp_path):
    run_dir = run_workload(_opts(tmp_path, epochs=2, threshold=0.999, capture=False))
    rec = load_record(run_dir)
    assert rec["status"] == "not_reached"
    assert not rec["time_to_accuracy"]["reached"]
    assert len(rec["evaluations"]) == 2
    assert rec["work"] is None if "work" in rec else True
    kept = load_record(
        run_workload(_opts(tmp_path, epochs=2, threshold=0.1, keep_going=True, capture=False))
    )
    assert len(kept["evaluations"]) == 2
    assert kept["time_to_accuracy"]["epoch"] == 1


class _NanDigits(DigitsWorkload):
    """Digits whose loss turns NaN in the second epoch."""

    name = "nan-digits"
    steps = 0

    def loss(self, logits, target, recipe):
        self.steps += 1
        loss = super().loss(logits, target, recipe)
        return loss * float("nan") if self.steps > 30 else loss


def test_nan_loss_ends_run_as_did_not_converge(tmp_path):
    register_workload("nan-digits", _NanDigits)
    rec = load_record(run_workload(_opts(tmp_path, workload="nan-digits", capture=False)))
    assert rec["status"] == "diverged"
    assert rec["error"].startswith("did not converge: non-finite loss by step ")
    assert len(rec["evaluations"]) == 1  # the finished epoch is kept


class _Boom(DigitsWorkload):
    name = "boom"

    def evaluate(self, model, data, batch_size=1024):
        if getattr(self, "_called", False):
            raise RuntimeError("evaluation exploded")
        self._called = True
        return super().evaluate(model, data, batch_size)


def test_crash_leaves_valid_record_with_finished_epochs(tmp_path):
    register_workload("boom", _Boom)
    with pytest.raises(RuntimeError, match="exploded"):
        run_workload(_opts(tmp_path, workload="boom", capture=False, threshold=0.999))
    (rec,) = load_records([tmp_path / "runs"])
    assert rec["status"] == "crashed"
    assert rec["error"] == "RuntimeError: evaluation exploded"
    assert len(rec["evaluations"]) == 1


def _long_run_signalled(
    tmp_path, sig, evaluations: int, *extra: str, to_group: bool = False
) -> dict:
    """Start a long `digits` run, wait until its record holds `evaluations` evaluations, send
    `sig` (`to_group`: to its whole process group, as a terminal's Ctrl-C does), and return
    the record left behind (validated by the loader)."""
    env = {**os.environ, "PERFSUITE_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "perfsuite", "run", "digits", "--out", str(out), "--quiet",
           "--no-capture", "--all-epochs", "--epochs", "500", "--set", "width=8",
           *extra]  # fmt: skip
    err = tmp_path / "stderr.txt"
    with err.open("w") as err_file:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=err_file,
            env=env,
            cwd=ROOT,
            start_new_session=to_group,
            # a shell without job control starts background jobs with SIGINT ignored, and an
            # ignored signal stays ignored across exec: give the run the default disposition
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            paths = list(out.glob("*/run.json"))
            seen = json.loads(paths[0].read_text() or "{}").get("evaluations", []) if paths else []
            if len(seen) >= evaluations:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"run never wrote {evaluations} evaluations")
    finally:
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        proc.wait(timeout=60)
    (rec,) = load_records([out])
    rec["_returncode"], rec["_stderr"] = proc.returncode, err.read_text()
    return rec


def test_killed_run_leaves_valid_partial_record(tmp_path):
    rec = _long_run_signalled(tmp_path, signal.SIGKILL, 2)
    # killed without writing its end: its owner process is gone, so it reads as interrupted
    assert rec["status"] == "interrupted" and "ended without writing" in rec["error"]
    assert len(rec["evaluations"]) >= 2
    assert rec["evaluations"][0]["epoch"] == 1


def test_sigterm_marks_run_interrupted(tmp_path):
    rec = _long_run_signalled(tmp_path, signal.SIGTERM, 1)
    assert rec["status"] == "interrupted"
    assert "SIGTERM" in rec["error"]


def test_ctrl_c_during_repeats_keeps_the_finished_epochs_and_starts_no_more_runs(tmp_path):
    """Each repeat runs in a child process: Ctrl-C reaches both, the child records its own
    SIGINT (not a SIGTERM from the parent cutting in), no traceback, no next repeat."""
    rec = _long_run_signalled(tmp_path, signal.SIGINT, 1, "--repeats", "2", to_group=True)
    assert rec["status"] == "interrupted" and rec["error"] == "interrupted by SIGINT"
    assert len(rec["evaluations"]) >= 1 and rec["group"]["index"] == 0
    assert rec["_returncode"] == 130
    assert "Traceback" not in rec["_stderr"]
    assert rec["_stderr"].strip().splitlines()[-1] == "perfsuite: interrupted"


def test_repeats_are_grouped_with_distinct_seeds(digits_cli_group):
    # `python -m perfsuite run digits --repeats 3 --seed 7 ...` (exit status 0 asserted), made
    # once per session (tests/conftest.py): tests/test_api.py reads the same group
    _, stdout = digits_cli_group
    recs = [load_record(p) for p in stdout.split()]  # in the order they finished (--parallel 2)
    recs.sort(key=lambda r: r["group"]["index"])
    assert [r["config"]["seed"] for r in recs] == [7, 8, 9]
    assert len({r["group"]["id"] for r in recs}) == 1
    assert [r["group"]["index"] for r in recs] == [0, 1, 2]
    assert all(r["group"]["size"] == 3 for r in recs)


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["run", "cifar10", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("perfsuite: error: cifar10 needs --data-dir") and "\n" not in err


def test_the_outcome_of_a_run_that_missed_its_target_is_a_sentence(tmp_path, make_record):
    """A run that missed says by how much, as a reached one says when (it printed only
    `status not_reached`)."""
    from perfsuite.record import write_record
    from perfsuite.runner.launch.executor import outcome

    rec = make_record([(1, 2.0, 0.41), (2, 4.0, 0.62), (3, 6.0, 0.58)], status="not_reached")
    write_record(tmp_path / "missed", rec)
    said = outcome(tmp_path / "missed")
    assert said.startswith("not reached: top-1 >= ")
    assert "in 3 epochs (6.00 s of training)" in said and said.endswith("best top-1 62%")
