"""Instrumented runners: wrap a workload, measure it, write its run record."""

from perfsuite.runner.launch.start import run_workload
from perfsuite.runner.options import RunOptions

__all__ = ["RunOptions", "run_workload"]
