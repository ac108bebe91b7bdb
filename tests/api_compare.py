"""Helpers for the Python API tests: run the CLI for --json, compare DataFrames with it.

The column-to-JSON-key maps live in the tests, written against the CLI's JSON field names, so a
wrong column in the API (a wrong field, a unit slip, a row order change) fails a test.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, cache: Path | None = None, timeout: int = 900) -> str:
    """`python -m perfsuite ARGS`; stdout, or an assertion error with stderr's tail."""
    env = dict(os.environ)
    if cache is not None:
        env["PERFSUITE_CACHE_DIR"] = str(cache)
    proc = subprocess.run(
        [sys.executable, "-m", "perfsuite", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"perfsuite {' '.join(args)}: {proc.stderr[-2000:]}"
    return proc.stdout


def cli_json(*args: str, cache: Path | None = None) -> Any:
    return json.loads(cli(*args, "--json", cache=cache))


def dig(obj: Any, path: str) -> Any:
    """obj["a"]["b"] for "a.b" (None when a step is missing or null)."""
    for part in path.split("."):
        if obj is None:
            return None
        obj = obj[part]
    return obj


def same_value(api: Any, ref: Any, scale: float = 1.0) -> bool:
    """NaN/None match null; numbers match exactly after `scale` (the JSON's unit)."""
    missing = api is None or (isinstance(api, float) and math.isnan(api))
    if ref is None or missing:
        return ref is None and missing
    if isinstance(ref, bool) or isinstance(api, bool):
        return bool(api) == ref
    if isinstance(ref, (int, float)):
        return float(api) * scale == float(ref)
    if isinstance(ref, (list, dict)):  # tuples in the analyzer, lists in JSON
        return json.loads(json.dumps(api)) == ref
    return api == ref


def assert_rows(
    df: Any,
    rows: Sequence[Mapping[str, Any]],
    columns: Mapping[str, str],
    scale: Mapping[str, float] | None = None,
) -> None:
    """Every row of `df`, in order, equals the JSON rows on every column; `columns` maps each
    DataFrame column (all of them, in order) to its JSON key."""
    assert len(df) == len(rows), f"{len(df)} rows in the DataFrame, {len(rows)} in the JSON"
    assert list(df.columns) == list(columns)
    for i, (rec, ref) in enumerate(zip(df.to_dict("records"), rows, strict=True)):
        for col, key in columns.items():
            want = dig(ref, key)
            got = rec[col]
            assert same_value(got, want, (scale or {}).get(col, 1.0)), (i, col, got, want)
