"""The telemetry sampler's first CPU reading measures its first interval.

psutil keeps `cpu_percent(None)`'s previous reading per calling thread; primed in the main
thread and read in the sampler's, the first reading spanned only the microseconds between two
reads inside that call, and every telemetry.csv of a training run started with 0.0.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("psutil")

from perfsuite.runner.measure.telemetry import TelemetrySampler

SPIN = "import time\nprint('go', flush=True)\nend = time.time() + 3\nwhile time.time() < end: pass"


def test_first_cpu_sample_of_a_busy_machine_is_not_zero(tmp_path):
    path = tmp_path / "telemetry.csv"
    # The busy work runs in another process, so this one's GIL never stretches the sampler's
    # own reads apart (a spinning Python thread here would, and hide the bug).
    busy = subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout is not None and busy.stdout.readline().strip() == "go"
        with TelemetrySampler(path, interval_s=0.25) as sampler:
            time.sleep(0.6)
    finally:
        busy.kill()
        busy.wait()
    assert len(sampler.rows) >= 2
    assert sampler.rows[0][1] > 0.0  # one of the machine's cores was busy all along
    with path.open(encoding="utf-8") as fh:
        first = next(csv.DictReader(fh))
    assert float(first["cpu_util_pct"]) == sampler.rows[0][1]


def test_the_sampler_thread_has_started_and_primed_when_enter_returns(tmp_path):
    """The training clock starts right after `__enter__`: the thread's start-up must be done."""
    sampler = TelemetrySampler(tmp_path / "telemetry.csv", interval_s=10.0)
    primed: list[str] = []

    class SlowPsutil:  # the priming call, slowed so that a race would lose it
        def cpu_percent(self, interval: object) -> float:
            time.sleep(0.3)
            primed.append(threading.current_thread().name)
            return 0.0

    sampler.psutil = SlowPsutil()
    with sampler:
        assert primed == ["perfsuite-telemetry"]
    assert sampler.rows == []  # no sample is due within 10 s
