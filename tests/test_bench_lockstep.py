"""`python -m bench`: an unknown benchmark name is refused in one line; bench/lockstep.py's
barrier starts both runs' epochs together, and a failed run stops its partner
(which would otherwise wait at the barrier for 15 minutes)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from bench import lockstep
from tests.helpers import ROOT


def test_the_barrier_releases_both_sides_only_once_both_arrived(tmp_path):
    released: dict[str, float] = {}

    def side(me: str, other: str, delay: float) -> None:
        time.sleep(delay)
        lockstep._barrier(tmp_path, "start1", me, other)
        released[me] = time.monotonic()

    late_arrival = time.monotonic() + 0.3
    threads = [
        threading.Thread(target=side, args=("a", "b", 0.0)),
        threading.Thread(target=side, args=("b", "a", 0.3)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=5)
    assert set(released) == {"a", "b"}
    assert released["a"] >= late_arrival - 0.01  # a waited for b
    assert abs(released["a"] - released["b"]) < 0.1


def test_the_barrier_gives_up_when_the_other_run_never_comes(tmp_path, monkeypatch):
    monkeypatch.setattr(lockstep, "BARRIER_TIMEOUT_S", 0.05)
    with pytest.raises(TimeoutError, match="end2"):
        lockstep._barrier(tmp_path, "end2", "a", "b")


def test_a_failed_run_stops_its_partner_and_its_error_is_reported(tmp_path):
    errs = [tmp_path / "a.err", tmp_path / "b.err"]
    errs[0].write_text("")
    errs[1].write_text("Traceback ...\nValueError: no such workload\n")
    procs = [  # the partner first: its kill must not hide the real failure
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE
        ),
        subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], stdout=subprocess.PIPE),
    ]
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"rc 3\): ValueError: no such workload"):
        lockstep._wait_both(procs, errs)
    assert time.monotonic() - t0 < 30
    assert procs[0].returncode is not None  # the partner was stopped, not left waiting


# -----------------------------------------------------------------------------------------------
# `python -m bench` with an unknown name: exit 2 in one line.


def test_bench_with_an_unknown_name_exits_2_in_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "no-such-benchmark"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-benchmark" in lines[0]
