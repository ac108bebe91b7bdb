"""A user's own workload class, named `path/to/file.py:ClassName` or `package.module:ClassName`.

The file is imported as Python code the user pointed at (the same trust as running it); the
class must subclass `perfsuite.workloads.Workload` (or be a factory returning one).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def load_workload_class(spec: str) -> Callable[[], Any]:
    """The factory named by `spec`; a one-line ValueError when it cannot be found or used."""
    from perfsuite.workloads.base import Workload

    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ValueError(f"workload {spec!r}: expected FILE.py:NAME or package.module:NAME")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"workload {spec!r}: no such file {path}")
        mod_name = f"perfsuite_user_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        if module_spec is None or module_spec.loader is None:
            raise ValueError(f"workload {spec!r}: cannot import {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[mod_name] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise ValueError(f"workload {spec!r}: cannot import {where} ({exc})") from None
    factory = getattr(module, attr, None)
    if factory is None:
        raise ValueError(f"workload {spec!r}: {where} has no attribute {attr!r}")
    if isinstance(factory, type) and not issubclass(factory, Workload):
        raise ValueError(f"workload {spec!r}: {attr} is not a perfsuite Workload subclass")
    if not callable(factory):
        raise ValueError(f"workload {spec!r}: {attr} is not a class or factory")
    return factory
