"""Instrumentation overhead: the same run with capture on and off, side by side.

Runs alternate on/off so drift on a shared machine hits both equally. Two ratios:
- training clock per epoch (what time-to-accuracy measures): capture must not perturb it;
- whole command wall time: adds the one-off capture work done outside the clock (FLOP count,
  profiler window, inference latency), which matters for short runs.
Set PERFSUITE_BENCH_PAIRS to change the number of on/off pairs (default 3).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from perfsuite.fmt import table
from perfsuite.record import load_record

CIFAR_DIRS = [Path("../shared/data/cifar10"), Path("/tmp/perfsuite-bench-cifar10")]


def _one(workload: str, capture: bool, out: str, **kw) -> tuple[float, dict]:
    from perfsuite.runner import RunOptions, run_workload

    opts = RunOptions(workload=workload, out=out, capture=capture, progress=False,
                      keep_going=True, seed=0, **kw)
    t0 = time.perf_counter()
    run_dir = run_workload(opts)
    return time.perf_counter() - t0, load_record(run_dir)


def _compare(label: str, workload: str, pairs: int, **kw) -> list[list[str]]:
    on_wall, off_wall, on_epoch, off_epoch, setups = [], [], [], [], []
    with tempfile.TemporaryDirectory() as out:
        _one(workload, True, out, **kw)  # warm caches (peaks, dataset decode) for both arms
        for _ in range(pairs):
            for capture in (True, False):
                wall, rec = _one(workload, capture, out, **kw)
                epochs = rec["throughput"]["epoch_times_s"]
                per_epoch = statistics.median(epochs)
                if capture:
                    on_wall.append(wall)
                    on_epoch.append(per_epoch)
                    setups.append(rec["extra"]["setup_s"])
                else:
                    off_wall.append(wall)
                    off_epoch.append(per_epoch)
    med = statistics.median
    keys = sorted({k for s in setups for k in s})
    setup_txt = ", ".join(f"{k}={med(s.get(k, 0.0) for s in setups):.3f}s" for k in keys)
    print(f"{label}: capture-on setup (median): {setup_txt}")
    return [
        [label, "training clock per epoch", f"{med(off_epoch):.4f} s", f"{med(on_epoch):.4f} s",
         f"{med(on_epoch) / med(off_epoch):.3f}"],
        [label, "whole run (wall)", f"{med(off_wall):.3f} s", f"{med(on_wall):.3f} s",
         f"{med(on_wall) / med(off_wall):.3f}"],
    ]


def main() -> None:
    pairs = int(os.environ.get("PERFSUITE_BENCH_PAIRS", "3"))
    rows = _compare("digits (5 epochs)", "digits", pairs, epochs=5, measure_peaks=True)
    data = next((d for d in CIFAR_DIRS if (d / "train").is_dir()), None)
    if data is None:
        print("cifar10: skipped (extract ../shared/data/cifar10-jpeg.tar.gz into "
              f"{CIFAR_DIRS[-1]} to include it)")
    else:
        rows += _compare(
            "cifar10 (1 epoch, 5,000 images, width 0.25)", "cifar10", max(1, pairs - 1),
            epochs=1, data_dir=str(data), overrides=["train_limit=5000", "width=0.25"],
            inference_repeats=20,
        )
    print(table(rows, ["run", "what", "capture off", "capture on", "on/off"], align="llrrr"))
    print("on/off = median with instrumentation / median without; target < 1.02 on the "
          "training clock.")
