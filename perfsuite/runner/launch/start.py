"""Where one run goes, once its options are planned: `--nproc N` > 1 starts N torchrun ranks
(`launch/torchrun.py`); any other run, a counters replay included, runs in this process
(`routes/run.py`)."""

from __future__ import annotations

from typing import Any

from perfsuite.runner.launch import torchrun
from perfsuite.runner.options import RunOptions
from perfsuite.runner.routes.plan import plan_run
from perfsuite.runner.routes.run import run_here


def run_workload(opts: RunOptions) -> Any:
    """Run one workload under instrumentation; returns the run folder (with run.json), or None
    for a counters replay. The options are planned first: wrong ones raise OptionsError before
    any process starts or any run folder exists."""
    plan = plan_run(opts)
    if opts.nproc > 1:
        return torchrun.launch(opts)
    return run_here(plan)
