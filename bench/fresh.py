"""One run in a fresh process, as `perfsuite run --repeats` runs each repeat.

Why: runs compared by a bench must be independent samples. In one process a later run
inherits an earlier one's allocator state, autotuning caches and warm memory
(perfsuite/runner/launch/executor.py), which would show up as a difference between the arms.
"""

from __future__ import annotations

import time

from perfsuite.record import load_record
from perfsuite.runner import RunOptions
from perfsuite.runner.launch.executor import Job, LocalExecutor


def run_fresh(opts: RunOptions) -> tuple[float, dict]:
    """(wall seconds of the child, process start included; the run's record)."""
    t0 = time.perf_counter()
    (res,) = LocalExecutor(poll_s=0.05).run([Job(opts)])
    wall = time.perf_counter() - t0
    if res.run_dir is None or res.error:
        raise RuntimeError(f"bench run failed: {res.error}")
    return wall, load_record(res.run_dir)
