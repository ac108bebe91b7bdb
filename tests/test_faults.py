"""Faults: interrupted runs, stale owners, run folders that appear with
their record, the writer lock, children that die with their parent, FIFOs given as options,
and the profiler's chatter kept off the terminal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.record import load_record, write_record
from perfsuite.record.io import record_lock, update_record
from perfsuite.record.owner import owner_section, stale_reason

ROOT = Path(__file__).resolve().parents[1]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- stale owners ------------------------------------------------------------------------


def test_running_record_of_a_dead_process_loads_as_interrupted(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.5)])
    rec["owner"] = {"host": socket.gethostname(), "pid": _dead_pid(), "started": 1.0}
    write_record(tmp_path / "r", rec)
    loaded = load_record(tmp_path / "r")
    assert loaded["status"] == "interrupted"
    assert "ended without writing" in loaded["error"]
    assert len(loaded["evaluations"]) == 1  # the finished epochs stay


def test_running_record_of_a_live_owner_stays_running(tmp_path, make_record):
    rec = make_record()
    rec["owner"] = owner_section()  # this very process
    write_record(tmp_path / "r", rec)
    assert load_record(tmp_path / "r")["status"] == "running"


def test_reused_pid_is_detected_by_start_time(make_record):
    rec = make_record()
    rec["owner"] = {**owner_section(), "started": owner_section()["started"] - 3600.0}
    assert "another process" in stale_reason(rec)


def test_other_host_or_finished_record_is_left_alone(make_record):
    rec = make_record()
    rec["owner"] = {"host": "elsewhere.invalid", "pid": _dead_pid(), "started": 1.0}
    assert stale_reason(rec) is None
    rec["owner"]["host"] = socket.gethostname()
    rec["status"] = "reached"
    assert stale_reason(rec) is None


def test_owner_must_be_well_formed(tmp_path, make_record):
    from perfsuite.record import RecordError

    rec = make_record()
    rec["owner"] = {"host": "h", "pid": -4}
    with pytest.raises(RecordError, match=r"owner\.pid"):
        write_record(tmp_path / "r", rec)


# -- a run folder appears with its record in it ------------------------------------------


def test_recorder_folder_never_appears_empty(tmp_path, monkeypatch):
    import perfsuite.runner.record.recorder as recorder_mod

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # a signal while the first record is being written

    monkeypatch.setattr(recorder_mod, "write_record", interrupted)
    task = {"name": "t", "metric": "top1", "threshold": 0.9}
    with pytest.raises(KeyboardInterrupt):
        recorder_mod.Recorder(tmp_path / "out", "t", task, "cpu", {}, framework="x")
    assert list((tmp_path / "out").iterdir()) == []  # neither a run folder nor its temp


def test_recorder_folder_holds_a_valid_record_with_owner(tmp_path):
    from perfsuite.runner.record.recorder import Recorder

    task = {"name": "t", "metric": "top1", "threshold": 0.9}
    rec = Recorder(tmp_path / "out", "t", task, "cpu", {}, framework="x")
    (run_dir,) = (tmp_path / "out").iterdir()
    assert run_dir == rec.run_dir and not run_dir.name.startswith(".")
    loaded = load_record(run_dir)
    assert loaded["status"] == "running" and loaded["owner"]["pid"] == os.getpid()
    umask = os.umask(0)
    os.umask(umask)
    assert run_dir.stat().st_mode & 0o777 == 0o777 & ~umask  # not mkdtemp's private 0700


# -- the writer lock ---------------------------------------------------------------------


def test_attached_section_survives_the_runs_next_write(tmp_path, make_record):
    run_dir = tmp_path / "r"
    run_rec = make_record([(1, 1.0, 0.5)])  # what the running run holds in memory
    write_record(run_dir, run_rec)

    def attach(rec):
        rec["counters"] = {"kernels": []}

    update_record(run_dir, attach)  # `counters --into` while the run trains
    run_rec["evaluations"].append({"epoch": 2, "train_time_s": 2.0, "metrics": {"top1": 0.95}})
    write_record(run_dir, run_rec)  # the run's next write
    on_disk = load_record(run_dir)
    assert on_disk["counters"] == {"kernels": []}
    assert len(on_disk["evaluations"]) == 2


def test_writers_wait_for_the_lock(tmp_path, make_record):
    run_dir = tmp_path / "r"
    write_record(run_dir, make_record())
    order: list[str] = []
    held = threading.Event()
    release = threading.Event()

    def holder():
        with record_lock(run_dir):
            held.set()
            release.wait(30)
            order.append("holder done")

    t = threading.Thread(target=holder)
    t.start()
    held.wait(30)
    writer = threading.Thread(
        target=lambda: (write_record(run_dir, make_record()), order.append("write"))
    )
    writer.start()
    writer.join(0.5)  # gives a lock-ignoring writer time to finish first
    release.set()
    t.join(30)
    writer.join(30)
    assert order == ["holder done", "write"]


# -- FIFOs as options --------------------------------------------------------------------


def _returns_within(fn, seconds: float = 20.0):
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert box, "hung"
    return box[0]


def test_fifo_as_prices_or_into_does_not_hang(tmp_path, make_record, capsys):
    write_record(tmp_path / "r", make_record([(1, 1.0, 0.95)]))
    os.mkfifo(tmp_path / "prices.json")
    code = _returns_within(
        lambda: main(["cost", str(tmp_path / "r"), "--prices", str(tmp_path / "prices.json")])
    )
    assert code == 2 and "FIFO" in capsys.readouterr().err
    os.mkfifo(tmp_path / "into")
    into = ["--into", str(tmp_path / "into"), "--steps", "1"]
    code = _returns_within(lambda: main(["counters", str(tmp_path / "prices.json"), *into]))
    assert code == 2 and "FIFO" in capsys.readouterr().err


# -- children die with their parent ------------------------------------------------------


def test_child_dies_when_its_parent_is_killed(tmp_path):
    """A parent spawning like the executor, then SIGKILLed: the child must not be orphaned."""
    script = (
        "import subprocess, sys, time\n"
        "from perfsuite.runner.launch.executor import _die_with_parent\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
        " preexec_fn=_die_with_parent)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait(30)
    for _ in range(200):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        # a zombie reaped by init also ends here; poll until it is gone
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    pytest.fail("child outlived its SIGKILLed parent")


def test_stop_child_terminates_a_running_child():
    from perfsuite.runner.launch.executor import _stop_child

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    _stop_child(proc, grace_s=20)
    assert proc.returncode == -signal.SIGTERM


# -- profiler chatter --------------------------------------------------------------------


def test_native_stderr_goes_to_the_log_not_the_terminal(tmp_path):
    log = tmp_path / "perfsuite.log"
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from perfsuite.runner.engine.chatter import stderr_to\n"
        "with stderr_to(Path(sys.argv[1])):\n"
        "    os.write(2, b'USDT: profiler_start\\n')\n"
        "os.write(2, b'after\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(log)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.stderr == "after\n"
    assert log.read_text() == "USDT: profiler_start\n"


def test_interrupted_is_a_valid_status(tmp_path, make_record):
    rec = make_record(status="interrupted", error="terminated by SIGTERM")
    write_record(tmp_path / "r", rec)
    assert json.loads((tmp_path / "r" / "run.json").read_text())["status"] == "interrupted"
