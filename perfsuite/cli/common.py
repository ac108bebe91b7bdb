"""Helpers shared by the CLI commands: errors, JSON output, common flags."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any


class CLIError(Exception):
    """A user-facing error; `main` prints it as one line and exits with status 2."""


def _plain(obj: Any) -> Any:
    """Make dataclasses, paths, numpy scalars and non-finite floats JSON-safe."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def print_json(obj: Any) -> None:
    """Print `obj` as JSON on stdout (the only thing printed when --json is given)."""
    json.dump(_plain(obj), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print machine-readable JSON on stdout instead of text"
    )


def status(message: str) -> None:
    """Progress and notes go to stderr, so stdout stays clean for results and --json."""
    print(message, file=sys.stderr, flush=True)
