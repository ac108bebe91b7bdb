"""Importers: other benchmarks' published results (DAWNBench v1, MLPerf training logs) as run
records. Pure file parsing; no deep-learning framework is imported here."""

from perfsuite.importers.common import Imported, ImportFailure

__all__ = ["ImportFailure", "Imported"]
