"""The sampled timeline window of a TensorFlow run, through `tf.profiler.experimental`.

Taken like the PyTorch window: off the training clock, in a `detour` on the warm model (the
state is restored afterwards), after `WAIT` unprofiled steps; `active` steps are recorded,
each inside a `Trace("train", step_num=N)` marker. The profiler's XSpace file is converted
(`xplane.py`) into the Chrome-trace sidecar the timeline analyzer reads, and then removed.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from perfsuite.record import quantity
from perfsuite.runner.engine.profile_window import TRACE_NAME
from perfsuite.runner.frameworks.xplane import op_rows, read_xspace, to_chrome_trace
from perfsuite.workloads.state import detour

WAIT = 3  # unprofiled steps first (as wait=2 + warmup=1 of the PyTorch window)


def write_trace(trace: dict[str, Any], target: Path) -> None:
    """Gzipped Chrome-trace JSON, written atomically."""
    tmp = target.with_name(target.name + ".tmp")
    with gzip.open(tmp, "wt", compresslevel=6) as fh:
        json.dump(trace, fh)
    os.replace(tmp, target)


def profile_window(
    run_dir: Path, workload: Any, state: Any, batches: Any, active: int
) -> dict[str, Any] | None:
    """Profile `active` warm steps; returns the record's `timeline` section (None if the
    profiler wrote nothing)."""
    import tensorflow as tf

    logdir = Path(tempfile.mkdtemp(prefix=".tfprofile-", dir=run_dir))
    stamps: list[float] = []
    try:
        with detour(state):
            for _ in range(WAIT):
                workload.train_step(state, next(batches)).numpy()
            tf.profiler.experimental.start(str(logdir))
            try:
                stamps.append(time.perf_counter())
                for i in range(active):
                    with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
                        workload.train_step(state, next(batches)).numpy()
                    stamps.append(time.perf_counter())
            finally:
                tf.profiler.experimental.stop()
        files = sorted(logdir.rglob("*.xplane.pb"))
        if not files:
            return None
        trace = to_chrome_trace(read_xspace(files[-1]))
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
    write_trace(trace, Path(run_dir) / TRACE_NAME)
    deltas = [b - a for a, b in itertools.pairwise(stamps)]
    return {
        "trace": TRACE_NAME,
        "tool": "tf.profiler.experimental (XSpace converted to Chrome trace by perfsuite)",
        "steps": active,
        "step_time": quantity(
            sum(deltas) / len(deltas) if deltas else None,
            "s",
            "measured",
            f"mean wall time of the {active} profiled steps (profiler on, perf_counter)",
        ),
        "ops": op_rows(trace),
        "notes": trace["notes"],
    }
