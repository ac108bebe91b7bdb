"""A user's own workload class, named `path/to/file.py:ClassName` or `package.module:ClassName`.

The file is imported as Python code the user pointed at (the same trust as running it); the
name must be a `perfsuite.workloads.Workload` subclass or a factory returning an instance of
one. While the file is imported its folder is first on `sys.path`, as for `python file.py`, so
it can import its siblings; a module spec is looked up from the current directory too, as
`python -m perfsuite` does (the `perfsuite` console script alone would not). Every way this
can fail is a one-line ValueError naming the file (and line), never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from perfsuite.workloads.base import Workload


def absolute_spec(spec: str) -> str:
    """`spec` with a FILE.py part made absolute, so a record or study names the same file
    from any directory (`perfsuite eval`, a resumed study); other specs unchanged."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where.endswith(".py"):
        return spec
    return f"{Path(where).expanduser().resolve()}:{attr}"


def module_name(path: Path) -> str:
    """A name for the file's module that is the same in every process (pickled classes from
    it name their module; `hash()` of a string differs per process)."""
    resolved = str(path.resolve())
    stem = re.sub(r"\W", "_", path.stem)
    return f"perfsuite_user_{stem}_{hashlib.sha256(resolved.encode()).hexdigest()[:16]}"


@contextmanager
def _on_sys_path(folder: str) -> Iterator[None]:
    """`folder` first on sys.path for the duration (removed after, unless it was there)."""
    if folder in sys.path:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        if folder in sys.path:
            sys.path.remove(folder)


def _where_failed(exc: BaseException, path: Path | None) -> str:
    """`file:line: Type: message` of an import failure, at the deepest frame of user code."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}: SyntaxError: {exc.msg}"
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "importlib" not in f.filename and f.filename != __file__
    ]
    where = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    if not frames and path is not None:
        where = f"{path}: "
    text = str(exc).strip().splitlines()
    return f"{where}{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _import_file(spec: str, path: Path) -> ModuleType:
    name = module_name(path)
    if name in sys.modules:  # loaded once per process: its classes stay the same objects
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"workload {spec!r}: cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        with _on_sys_path(str(path.parent)):
            module_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file: any error is theirs, said in one line
        del sys.modules[name]
        raise ValueError(
            f"workload {spec!r}: import failed at {_where_failed(exc, path)}"
        ) from None
    return module


def _import_module(spec: str, where: str) -> ModuleType:
    try:
        with _on_sys_path(os.getcwd()):
            return importlib.import_module(where)
    except Exception as exc:  # the user's module: any error is theirs, said in one line
        missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
        if missing and (where == missing or where.startswith(missing + ".")):
            raise ValueError(
                f"workload {spec!r}: no module {where} (looked in the current directory and "
                "sys.path; or name a file: FILE.py:NAME)"
            ) from None
        raise ValueError(
            f"workload {spec!r}: import failed at {_where_failed(exc, None)}"
        ) from None


def _checked(factory: Callable[[], Any], spec: str) -> Any:
    """Call a factory and refuse what is not a Workload (it would fail later, obscurely)."""
    made = factory()
    if not isinstance(made, Workload):
        raise ValueError(
            f"workload {spec!r}: {getattr(factory, '__name__', 'the factory')}() returned "
            f"{type(made).__name__}, not a perfsuite Workload"
        )
    return made


def load_workload_class(spec: str) -> Callable[[], Any]:
    """The factory named by `spec`; a one-line ValueError when it cannot be found or used."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ValueError(f"workload {spec!r}: expected FILE.py:NAME or package.module:NAME")
    if where.endswith(".py"):
        path = Path(where).expanduser()
        if not path.is_file():
            raise ValueError(f"workload {spec!r}: no such file {path}")
        module = _import_file(spec, path.resolve())
    else:
        module = _import_module(spec, where)
    factory = getattr(module, attr, None)
    if factory is None:
        raise ValueError(f"workload {spec!r}: {where} has no attribute {attr!r}")
    if isinstance(factory, type):
        if not issubclass(factory, Workload):
            raise ValueError(f"workload {spec!r}: {attr} is not a perfsuite Workload subclass")
        return factory
    if not callable(factory):
        raise ValueError(f"workload {spec!r}: {attr} is not a class or factory")
    return functools.partial(_checked, factory, spec)
