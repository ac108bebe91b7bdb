"""`perfsuite report RUN_JSON...`: one self-contained, shareable HTML file."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_top_flag,
    html_pages,
    output_path,
    print_json,
    status,
    top_rows,
)
from perfsuite.cli.history_add import add_history_flag
from perfsuite.views.pages import HtmlPages


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="write one self-contained HTML report (summary, curves, roofline, ops, telemetry)",
        description=(
            "Write ONE self-contained HTML file (plotly.js embedded, no network needed) for one "
            "or more runs: summary table, accuracy vs training time with the threshold, "
            "roofline, per-op breakdown, telemetry time series, environment and config. "
            "For two or more runs the page opens with their comparison (every curve on one "
            "chart, side by side with ratios, FLOP agreement, roofline positions and, for "
            "groups of repeats, the verdict of perfsuite compare); per-run sections are folded."
        ),
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN_JSON",
        help="run.json files or folders (folders are searched recursively)",
    )
    add_history_flag(
        p,
        "without runs: the history page of a store (runs/history.sqlite, a SQLite file, a "
        "postgresql:// URL) or a CSV file; with runs: where they fall in their series (shown "
        "anyway when runs/history.sqlite holds them)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="output file (default: reports/<run_id>.html, or reports/compare-N.html for N runs)",
    )
    p.add_argument(
        "--peaks",
        metavar="FILE",
        help="roofs from a `perfsuite peaks --json` file (per math: measured, else "
        "spec), used before each record's own ceilings, as `perfsuite roofline --peaks`",
    )
    # --json describes the page (path, runs, sections, notes): no rows for --top to cut
    add_top_flag(p, "ops shown per run in tables and bar charts", has_json=False)
    p.add_argument(
        "--json",
        action="store_true",
        help="print, instead of the page's path, a JSON object on stdout: the page's path, "
        "the runs in it (id, folder, flags, warnings, notes) and its sections",
    )
    p.set_defaults(func=run)


def default_output(records: list[dict[str, Any]]) -> Path:
    if len(records) == 1:
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(records[0]["run_id"])).lstrip(".") or "run"
    else:
        name = f"compare-{len(records)}"
    return Path("reports") / f"{name}.html"


def _study_sections(paths: list[str], pages: HtmlPages) -> list[tuple[str, str, str]]:
    """A Study section for every study folder among `paths`."""
    from perfsuite.study.folder import MANIFEST

    out = []
    for i, p in enumerate(paths):
        if (Path(p) / MANIFEST).is_file():
            from perfsuite.cli.study_cmd import analysis

            result, records = analysis(p)
            section = pages.study_section(result, records)
            out.append((f"study-{i}", f"Study: {result.kind}", section))
    return out


def warning_lines(runs: list[dict[str, Any]]) -> list[str]:
    """One line per WRONG MACHINE note of a run (the rule and wording of `perfsuite roofline`,
    `perfsuite.analyzers.roofline.context.foreign_roof_notes`), naming the run: printed on stderr
    after
    "warning: ", so a user who never opens the page learns the peaks were not this machine's."""
    return [f"{r['run_id']}: {note}" for r in runs for note in r["warnings"]]


def _judged(source: str | None) -> tuple[str, list[Any]]:
    """(where, verdicts) of every series of a history, at Otava's default settings."""
    from perfsuite.analyzers.history.verdict import judge
    from perfsuite.history_store.sources import load_series
    from perfsuite.history_store.store import HistoryError

    try:
        where, found = load_series(source)
    except HistoryError as exc:
        raise CLIError(str(exc)) from None
    return where, [judge(s) for s in found]


def _history_page(args: argparse.Namespace, pages: HtmlPages) -> int:
    """`report --history [URL]` without runs: the history page."""
    from perfsuite.record.io import write_text_atomic

    where, verdicts = _judged(args.history or None)
    out = Path(args.output or Path("reports") / "history.html")
    write_text_atomic(out, pages.history(verdicts, where))
    if args.json:
        print_json({"output": str(out), "title": f"perfsuite history: {where}", "runs": []})
    else:
        print(out)
    return 0


def _run_history_sections(
    args: argparse.Namespace, records: list[dict[str, Any]], pages: HtmlPages
) -> list[tuple[str, str, str]]:
    """A History section when the store (--history, else runs/history.sqlite if there)
    holds the series of any of the runs."""
    from perfsuite.analyzers.history.records import series_key, series_name
    from perfsuite.history_store.sources import default_store

    if args.history is None and not Path(default_store()).is_file():
        return []
    names = {series_name(series_key(r)) for r in records}
    _, verdicts = _judged(args.history or None)
    mine = [v for v in verdicts if v.series.name in names]
    if not mine:
        return []
    return [("history", "History: where the run falls", pages.history_section(mine, records))]


def run(args: argparse.Namespace) -> int:
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs
    from perfsuite.record import load_records
    from perfsuite.record.io import write_text_atomic

    pages = html_pages(args)
    if not args.runs:
        if args.history is None:
            raise CLIError("give RUN_JSON... or --history [URL]")
        return _history_page(args, pages)
    records = load_records(args.runs)
    if not records:
        raise CLIError(f"no run.json found under {', '.join(args.runs)}")
    inputs = [*args.runs, *([args.peaks] if args.peaks else [])]
    out = output_path(str(args.output or default_output(records)), records, inputs)
    try:
        peaks = peaks_file_roofs(args.peaks) if args.peaks else None
    except PeaksFileError as exc:
        raise CLIError(str(exc)) from None
    status(f"building report for {len(records)} run(s)")
    first = [*_run_history_sections(args, records, pages), *_study_sections(args.runs, pages)]
    page = pages.report(records, top_rows(args.top), first, peaks)
    write_text_atomic(out, page.html)  # unguessable temp name, exclusive create, rename
    warnings = warning_lines(page.runs)
    for line in warnings:
        status(f"warning: {line}")
    if args.json:
        print_json(
            {
                "output": str(out),
                "title": page.title,
                "peaks": args.peaks,
                "runs": page.runs,
                "sections": [{"id": i, "title": t} for i, t in page.sections],
                "warnings": warnings,
            }
        )
    else:
        print(out)
    return 0
