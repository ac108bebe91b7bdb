"""`perfsuite.open(path)`: what a path holds decides what comes back.

Why a list of kinds: a study, a run and a group of repeats are all folders; each kind says how
it recognizes a path and how to open it, and the first kind that recognizes the path wins (a
study folder holds runs too, so it is tried first). A new kind registers itself in front with
`register_kind` without touching the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.record import RecordError
from perfsuite.record.io import RECORD_NAME


@dataclass(frozen=True)
class Kind:
    """One kind of thing `open` can return: a test on the path and the opener."""

    name: str
    matches: Callable[[Path], bool]
    opener: Callable[..., Any]


def _is_run(p: Path) -> bool:
    return p.is_file() or (p / RECORD_NAME).is_file()


def _open_run(p: Path, **options: Any) -> Any:
    from perfsuite.api.run import Run

    return Run.load(p, **options)


def _is_group(p: Path) -> bool:
    return p.is_dir() and next(p.rglob(RECORD_NAME), None) is not None


def _open_group(p: Path, **options: Any) -> Any:
    from perfsuite.api.group import Group

    return Group.load(p, **options)


def _is_study(p: Path) -> bool:
    return (p / "study.json").is_file() or (p.name == "study.json" and p.is_file())


def _open_study(p: Path, **options: Any) -> Any:
    from perfsuite.api.study import Study

    if options:
        raise TypeError(f"a study takes no options, got {sorted(options)}")
    return Study.load(p)


KINDS: list[Kind] = [
    Kind("study", _is_study, _open_study),
    Kind("run", _is_run, _open_run),
    Kind("group", _is_group, _open_group),
]


def register_kind(kind: Kind) -> None:
    """Put a kind in front of the others (a more specific folder layout first)."""
    KINDS.insert(0, kind)


def open_path(path: str | os.PathLike[str], **options: Any) -> Any:
    """A Study for a study folder (its study.json); a Run for a run.json or a run folder; a
    Group for a folder of runs (repeats, searched recursively). `options` go to the opener:
    `peaks=FILE` for a run; `metric`, `threshold`, `max_cov`, `max_ci`, `seed` for a group (as
    `perfsuite stability`); none for a study."""
    p = Path(path)
    if not p.exists():
        raise RecordError(f"{p}: no such file or folder")
    for kind in KINDS:
        if kind.matches(p):
            return kind.opener(p, **options)
    raise RecordError(f"{p}: no {RECORD_NAME} in this folder or below it")
