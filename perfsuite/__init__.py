"""perfsuite: end-to-end time-to-accuracy benchmarking and performance analysis.

Importing this package must stay cheap and framework-free: the analysis half runs on machines
without torch or tensorflow. The analysis API (`open`, `trace`, `compare`, `verdict`;
docs/api.md) loads pandas on first use, never torch.
"""

from __future__ import annotations

import os
from typing import Any

from perfsuite.version import __version__ as __version__

# Loaded from perfsuite.api on first access, so `import perfsuite` imports neither pandas nor
# the analyzers.
_API_NAMES = ("Run", "Group", "Trace")


def track(task: str, **kwargs: object) -> object:
    """Measure your own training loop into a perfsuite run record (see
    perfsuite.runner.routes.track)."""
    from perfsuite.runner.routes.track import track as _track

    return _track(task, **kwargs)


def open(path: str | os.PathLike[str], **options: Any) -> Any:
    """Open a run (run.json or its folder) as a Run, or a folder of runs as a Group."""
    from perfsuite.api import open_path

    return open_path(path, **options)


def trace(path: str | os.PathLike[str], device: int | None = None) -> Any:
    """Analyze a Kineto/Chrome trace (or a run's trace sidecar) into a Trace of DataFrames."""
    from perfsuite.api import trace as _trace

    return _trace(path, device)


def compare(*items: Any, **named: Any) -> Any:
    """Runs and groups (or their paths) side by side: a row per quantity, a column each."""
    from perfsuite.api import compare as _compare

    return _compare(*items, **named)


def verdict(*items: Any, **options: Any) -> Any:
    """`perfsuite compare` as data: runs or groups side by side and, for two groups of
    repeats, the statistical verdict (perfsuite.analyzers.runs.compare.Comparison;
    docs/compare.md)."""
    from perfsuite.api import verdict as _verdict

    return _verdict(*items, **options)


def history(source: str | None = None, **options: Any) -> Any:
    """A performance history (a CSV file, a SQLite store, a postgresql:// URL; default
    runs/history.sqlite) as DataFrames of its points, change points and series
    (perfsuite.api.history.History; docs/history.md)."""
    from perfsuite.api.history import history as _history

    return _history(source, **options)


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        import perfsuite.api

        return getattr(perfsuite.api, name)
    raise AttributeError(f"module 'perfsuite' has no attribute {name!r}")
