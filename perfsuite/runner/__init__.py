"""Instrumented runners: wrap a workload, measure it, write its run record.

`run_workload(RunOptions(...))` plans the run (wrong options raise `OptionsError`, one line,
before anything runs) and runs it; the stages are read in `perfsuite/runner/routes/run.py`.
"""

from perfsuite.runner.launch.start import run_workload
from perfsuite.runner.options import RunOptions
from perfsuite.runner.routes.plan import OptionsError

__all__ = ["OptionsError", "RunOptions", "run_workload"]
