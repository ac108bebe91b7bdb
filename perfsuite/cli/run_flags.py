"""A run's command-line flags, built from `RunOptions`' field metadata (the one source).

`perfsuite run` takes every option flag; `perfsuite study` takes those a study shares or sets.
The argparse destination of a flag is its field's name, so `options_from_args` reads them back
without a per-field copy.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from perfsuite.cli.common import (
    fraction,
    instance_type,
    int64,
    nonnegative_float,
    positive_int,
)
from perfsuite.runner.options import Flag, RunOptions, default_of, option_flags

# The argparse converter of each value kind (runner/options.py VALUE_KINDS). A run's threshold
# stays text until the workload's metric says its range (run_cmd._threshold); a study's is a
# fraction (the study file's rule).
_CONVERTERS: dict[str, Callable[[str], Any] | None] = {
    "text": None,
    "int": int64,
    "positive_int": positive_int,
    "nonnegative_float": nonnegative_float,
    "instance_type": instance_type,
    "choice": None,
    "threshold": None,
}


def _add(parser: argparse.ArgumentParser, dest: str, flag: Flag, default: Any, study: bool) -> None:
    text = (flag.study_help or flag.help) if study else flag.help
    help_text = argparse.SUPPRESS if flag.hidden else text
    if not flag.name.startswith("-"):
        parser.add_argument(dest, help=help_text)
        return
    kw: dict[str, Any] = {"dest": dest, "help": help_text}
    if flag.value == "switch":
        kw["action"] = "store_false" if flag.negate else "store_true"
    elif flag.value == "list":
        kw.update(action="append", default=[])
    else:
        convert = fraction if study and flag.value == "threshold" else _CONVERTERS[flag.value]
        if convert is not None:
            kw["type"] = convert
        if flag.choices:
            kw["choices"] = flag.choices
        kw["default"] = default
    if flag.metavar:
        kw["metavar"] = flag.metavar
    parser.add_argument(flag.name, **kw)


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """Every option flag of `perfsuite run`."""
    for f, flag in option_flags():
        _add(parser, f.name, flag, default_of(f), study=False)


def add_study_run_flags(parser: argparse.ArgumentParser) -> None:
    """The option flags a study takes: the run settings every run shares and the study-level
    threshold, seed and switches; the workload positional comes first."""
    for f, flag in option_flags():
        if flag.study is not None or f.name == "workload":
            _add(parser, f.name, flag, default_of(f), study=True)


def options_from_args(args: argparse.Namespace, **fixed: Any) -> RunOptions:
    """The RunOptions of a parsed `perfsuite run` command line; `fixed` replaces fields (the
    seed and group of one repeat)."""
    values = {f.name: getattr(args, f.name) for f, _ in option_flags()}
    values = {k: list(v) if isinstance(v, list) else v for k, v in values.items()}
    return RunOptions(**{**values, **fixed})
