"""Instrumented runners: wrap a workload, measure it, write its run record."""

from perfsuite.runner.options import RunOptions
from perfsuite.runner.routes.run import run_workload

__all__ = ["RunOptions", "run_workload"]
