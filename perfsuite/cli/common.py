"""Helpers shared by the CLI commands: errors, JSON output, common flags."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from perfsuite.views.pages import HtmlPages

# Exit codes of the commands that give a verdict (`compare`, `history check`), so a CI job
# fails on a real regression and not on noise.
EXIT_OK = 0  # no regression: faster, no significant difference, or nothing to compare
EXIT_USAGE = 2  # bad arguments or a bad record (every perfsuite command)
EXIT_SLOWER = 3  # significantly slower than the baseline: a regression
EXIT_NO_VERDICT = 4  # compared, but no verdict could be reached (too few runs or points)


class CLIError(Exception):
    """A user-facing error; `main` prints it as one line and exits with status 2."""


def html_pages(args: argparse.Namespace) -> HtmlPages:
    """The report's pages, as the program that runs the CLI wired them in (`perfsuite.__main__`),
    or a one-line error: where plotly is missing (only the HTML pages need it; text and --json
    output do not), or where the CLI runs without the report."""
    load = getattr(args, "html_pages", None)
    if load is None:
        raise CLIError(
            "HTML pages come from the report, which this entry point does not load: "
            "run the `perfsuite` program (perfsuite.__main__.main)"
        )
    try:
        return load()
    except ImportError as exc:
        raise CLIError(
            f"HTML output needs plotly, which does not import here ({exc}); "
            "pip install 'plotly>=5.18', or use the text or --json output"
        ) from None


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


# -- option parsing shared by every command ------------------------------------------------

TOP_DEFAULT = 20  # rows of every ranked table (--top); 0 shows all


def fraction(text: str) -> float:
    """A metric threshold as a fraction in [0, 1]: "0.98" or, explicitly, "98%".

    A bare number above 1 (or below 0) is refused rather than read as a percent: `--threshold
    98` trained 20 epochs against an unreachable target before this rule.
    """
    raw = text.strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    if percent:
        value /= 100.0
    if not 0.0 <= value <= 1.0:
        hint = f" (for percent write {raw}%)" if not percent and 1 < value <= 100 else ""
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside 0..1; thresholds are fractions, e.g. 0.98{hint}"
        )
    return value


def metric_value(text: str) -> float:
    """A threshold whose range depends on the records' metric (checked once they are loaded:
    fractions for higher-is-better metrics, any value >= 0 for lower-is-better ones): "0.93",
    "93%" (= 0.93) or "2.7" (a log perplexity)."""
    raw = text.strip()
    if raw.endswith("%"):
        return fraction(raw)
    try:
        return float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


_INSTANCE_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def instance_type(text: str) -> str:
    """A cloud instance type name (`p3.2xlarge`, `n2-standard-2`, `Standard_NC6`): letters,
    digits, `.`, `_`, `-`, at most 64; a path (`../../etc/passwd`), spaces or control
    characters are no instance type and are refused, never stored in a record."""
    if not _INSTANCE_TYPE.fullmatch(text) or ".." in text:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise argparse.ArgumentTypeError(
            f"{shown!r} is not an instance type (letters, digits, '.', '_', '-'; at most 64)"
        )
    return text


# The integers a flag takes: a signed 64-bit one, what torch, NumPy and the OS take as a seed,
# a count or a size; a larger one would fail later, far from the flag that gave it.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int64(text: str) -> int:
    """An integer in the signed 64-bit range (seeds, step counts); argparse names the flag."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not INT64_MIN <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(
            f"{value:.3g} is outside the 64-bit integer range [-2**63, 2**63 - 1]"
        )
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (epochs, batch size, repeats), at most 2**63 - 1."""
    value = int64(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not >= 1")
    return value


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (prices, seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number >= 0")
    return value


def add_top_flag(
    parser: argparse.ArgumentParser, what: str = "rows per table", *, has_json: bool = True
) -> None:
    """`--top N` with one default across commands (0: all rows). `has_json=False` for a
    command without --json, whose help must not promise an uncut --json output."""
    uncut = "; --json output is never cut" if has_json else ""
    parser.add_argument(
        "--top",
        type=int64,
        default=TOP_DEFAULT,
        metavar="N",
        help=f"{what} (0: all; default {TOP_DEFAULT}){uncut}",
    )


def top_rows(top: int) -> int:
    """`--top` as a row count: every row (sys.maxsize) for 0; CLIError for a negative N."""
    if top < 0:
        raise CLIError("--top must be >= 0 (0: all rows)")
    return top or sys.maxsize


def resolve_run(arg: str) -> Path:
    """The run.json meant by `arg`: a run.json (any file), a run folder, or a group folder
    holding exactly one run. A folder with several runs is an error listing them.
    """
    from perfsuite.record.io import RECORD_NAME, find_records

    p = Path(arg)
    if not p.is_dir():
        if not p.exists() and not p.is_symlink():
            raise CLIError(f"{arg}: no such file or folder")
        return p
    if (p / RECORD_NAME).exists():
        return p / RECORD_NAME
    found = list(find_records([p]))
    if len(found) == 1:
        return found[0]
    if not found:
        raise CLIError(f"{arg}: no run.json in this folder or below")
    shown = ", ".join(str(f.parent) for f in found[:8])
    more = f" and {len(found) - 8} more" if len(found) > 8 else ""
    raise CLIError(
        f"{arg}: holds {len(found)} runs; give one of them: {shown}{more} "
        "(report, stability and cost take the whole folder)"
    )


def resolve_trace(path: str) -> Path:
    """A trace path from a trace file, a run.json, or a run folder."""
    p = Path(path)
    if p.is_dir() or p.name == "run.json":
        from perfsuite.record import load_record
        from perfsuite.record.sidecars import trace_path

        return trace_path(load_record(resolve_run(path)))
    if not p.exists():
        raise CLIError(f"{p}: no such file or folder")
    return p


def output_path(
    output: str, records: Iterable[Mapping[str, Any]] = (), inputs: Iterable[str] = ()
) -> Path:
    """`output` as a file a page may be written to; CLIError (one line) when writing it would
    replace a run record, a sidecar, a run folder's lock or an input of the command, or when
    it is a folder. Why: an `-o` typo (`-o R/run.json`) must never destroy a record."""
    from perfsuite.record.checks import sidecar_fields
    from perfsuite.record.io import LOCK_NAME, RECORD_NAME

    out = Path(output)
    if out.is_dir():
        raise CLIError(f"-o {output}: is a folder; give the page a file name")
    if out.name == RECORD_NAME or out.name.startswith(f".{RECORD_NAME}"):
        raise CLIError(f"-o {output}: would replace a run record; give the page another name")
    target = out.resolve()
    kept: dict[Path, str] = {}
    for rec in records:
        run = rec.get("run_id")
        if rec.get("_path"):
            kept[Path(rec["_path"]).resolve()] = f"the run record of {run}"
        folder = rec.get("_dir")
        if folder:
            kept[(Path(folder) / LOCK_NAME).resolve()] = f"the writer lock of {run}"
            for field, rel in sidecar_fields(rec):
                if isinstance(rel, str) and rel:
                    kept[(Path(folder) / rel).resolve()] = f"{run}'s sidecar ({field})"
    for arg in inputs:
        kept.setdefault(Path(arg).resolve(), "an input of this command")
    what = kept.get(target)
    if what is None and out.exists():  # a hard link or another name of a kept file
        what = next((w for p, w in kept.items() if p.exists() and os.path.samefile(p, out)), None)
    if what:
        raise CLIError(f"-o {output}: would replace {what}; give the page another name")
    return out
