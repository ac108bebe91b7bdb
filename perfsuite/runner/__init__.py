"""Instrumented runners: wrap a workload, measure it, write its run record."""

from perfsuite.runner.loop import RunOptions, run_workload

__all__ = ["RunOptions", "run_workload"]
