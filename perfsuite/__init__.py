"""perfsuite: end-to-end time-to-accuracy benchmarking and performance analysis.

Importing this package must stay cheap and framework-free: the analysis half runs on machines
without torch or tensorflow. The analysis API (`open`, `trace`, `compare`, `verdict`;
docs/api.md) loads pandas on first use, never torch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from perfsuite.version import __version__ as __version__


def _source_checkout_analyzers() -> None:
    """In a source checkout the analysis stage is the folder `analyzers/` beside this package;
    setup.py installs it as `perfsuite.analyzers`. Running a checkout without installing it
    (PYTHONPATH=<checkout>, as `make gpu-evidence` does on a machine that brings its own
    torch) finds it here, under the same name; an installed copy has its own and skips this."""
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(os.path.dirname(here), "analyzers")
    name = f"{__name__}.analyzers"
    if (
        name in sys.modules
        or os.path.isdir(os.path.join(here, "analyzers"))
        or not os.path.isfile(os.path.join(src, "__init__.py"))
    ):
        return
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(src, "__init__.py"), submodule_search_locations=[src]
    )
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    globals()["analyzers"] = module  # as the import system binds a loaded submodule


_source_checkout_analyzers()

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


def __getattr__(name: str) -> Any:
    if name in _API_NAMES:
        import perfsuite.api

        return getattr(perfsuite.api, name)
    raise AttributeError(f"module 'perfsuite' has no attribute {name!r}")
