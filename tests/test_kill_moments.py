"""kill -9 at any moment of a run's writing leaves a visible valid record or nothing: no hidden
staging folder once the next run has looked, no stale temp file once the record is opened,
the record matching its MLPerf log, and a run killed after its last epoch read as finished."""

from __future__ import annotations

import multiprocessing
import os
import random
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from perfsuite.record import load_record, write_record
from perfsuite.record.consistency import problems
from perfsuite.record.io import STAGING_GRACE_S, clean_stale_staging
from perfsuite.record.mllog_check import mllog_problems

# Each run is a process forked from a server that imported what the run imports (the recorder
# reads the framework versions on start), so a kill lands in the run's own work, not in seconds
# of imports.
FORKS = multiprocessing.get_context("forkserver")
FORKS.set_forkserver_preload(
    [__name__, "perfsuite.runner.record.recorder", "torch", "numpy", "sklearn", "psutil"]
)


def _child(out: str, say: Connection) -> None:
    """A run as the loop drives the recorder: evaluations, run_stop when training ends, then
    the work after training (inference, profile window) before the final write. It says
    (sends) a line at each step, so that the parent can kill it at chosen moments."""
    from perfsuite.runner.record.recorder import Recorder

    epochs = 4
    task = {"name": "toy", "metric": "top1", "threshold": 0.9}
    rec = Recorder(
        out, "toy", task, "cpu", {"epochs": epochs}, framework="x", mllog_benchmark="toy"
    )
    rec.start_mllog(32, 0, 0.1)
    say.send("started")
    for epoch in range(1, epochs + 1):
        rec.epoch_times.append(0.01)
        reached = rec.add_evaluation(epoch, 0.5 * epoch, {"top1": 0.3 + 0.2 * epoch})
        say.send(f"epoch {epoch}")
        if reached or epoch == epochs:
            rec.stop_mllog()
            say.send("stopped")
            break
    time.sleep(30)  # the work after training
    rec.record["status"] = "reached"
    rec.close()


def _start(out: Path) -> tuple[BaseProcess, Connection]:
    """The run, started, and the end of the pipe its lines arrive on."""
    lines, say = FORKS.Pipe(duplex=False)
    proc = FORKS.Process(target=_child, args=(str(out), say), daemon=True)
    proc.start()
    say.close()  # the child holds the only writing end: its death ends the lines
    return proc, lines


def _wait_for(lines: Connection, wanted: str) -> None:
    while lines.recv() != wanted:  # EOFError: the run ended without saying it
        pass


def _check_survivor(out: Path) -> dict | None:
    """The visible record under `out` (valid, consistent, matching its log), or None."""
    clean_stale_staging(out)  # what the next run into `out` does first
    left = sorted(p.name for p in out.iterdir()) if out.exists() else []
    hidden = [n for n in left if n.startswith(".")]
    assert not hidden, f"hidden staging left: {hidden}"
    if not left:
        return None
    (name,) = left
    rec = load_record(out / name)
    assert problems(rec) == [], problems(rec)
    assert mllog_problems(rec) == []
    assert not list((out / name).glob(".run.json.*.tmp"))
    return rec


@pytest.mark.parametrize(
    ("after", "delay"),
    [("", 0.0), ("", 0.03), ("", 0.1)]  # during start-up, the staging and the first record
    + [(line, d) for line in ("started", "epoch 1", "epoch 2") for d in (0.0, 0.005)],
)
def test_sigkill_at_random_moments_leaves_a_valid_record_or_nothing(tmp_path, after, delay):
    out = tmp_path / "out"
    proc, lines = _start(out)
    if after:
        _wait_for(lines, after)
    time.sleep(delay + random.uniform(0, delay))
    proc.kill()  # SIGKILL
    proc.join()
    # a staging folder the kill left without a record is removed once older than the grace
    for p in out.glob(".*") if out.exists() else []:
        os.utime(p, (time.time() - STAGING_GRACE_S - 1,) * 2)
    rec = _check_survivor(out)
    if rec is not None:
        assert rec["status"] in ("interrupted", "reached")


def test_kill_after_the_last_epoch_reads_as_finished_then_interrupted(tmp_path):
    out = tmp_path / "out"
    proc, lines = _start(out)
    _wait_for(lines, "stopped")
    proc.kill()  # SIGKILL
    proc.join()
    rec = _check_survivor(out)
    assert rec is not None
    assert rec["status"] == "reached"  # 0.9 met at epoch 3: training's own outcome
    assert rec["error"].startswith("interrupted after training ended (")
    assert "inference latency) did not finish" in rec["error"]
    assert [e["epoch"] for e in rec["evaluations"]] == [1, 2, 3]


def test_a_stale_temp_file_is_removed_when_the_record_is_opened(tmp_path, make_record):
    write_record(tmp_path / "r", make_record([(1, 1.0, 0.5)]))
    stale = tmp_path / "r" / ".run.json.abc123.tmp"
    stale.write_text('{"half": ')
    load_record(tmp_path / "r")
    assert not stale.exists()


def test_a_staging_folder_of_a_live_writer_is_kept(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.5)])
    rec["status"] = "running"
    rec["owner"] = {"host": os.uname().nodename, "pid": os.getpid(), "started": 0.0}
    staging = tmp_path / ".toy-1.abcd"
    write_record(staging, rec)
    assert clean_stale_staging(tmp_path) == [] and staging.is_dir()
    rec["owner"]["pid"] = 2**22 + 12345  # no such process
    write_record(staging, rec)
    assert clean_stale_staging(tmp_path) == [staging] and not staging.exists()
