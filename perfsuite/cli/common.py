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
    from perfsuite.fmt import printable  # names from records and files: no raw escapes

    print(printable(message), file=sys.stderr, flush=True)


def load_runs(paths: list[str]) -> list[dict[str, Any]]:
    """Load every record under `paths`, with a progress bar on stderr (terminals only).

    Shared by stability, thresholds, cost and leaderboard; an empty result is an error.
    """
    import sys

    from tqdm import tqdm

    from perfsuite.record import find_records, load_record

    files = list(find_records(paths))
    if not files:
        raise CLIError(f"no run.json found under {' '.join(paths)}")
    bar = tqdm(files, desc="load", unit="run", file=sys.stderr, disable=None, leave=False)
    return [load_record(f) for f in bar]
