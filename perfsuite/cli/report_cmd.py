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
        nargs="+",
        metavar="RUN_JSON",
        help="run.json files or folders (folders are searched recursively)",
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


def run(args: argparse.Namespace) -> int:
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs
    from perfsuite.record import load_records
    from perfsuite.record.io import write_text_atomic

    pages = html_pages(args)
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
    page = pages.report(records, top_rows(args.top), _study_sections(args.runs, pages), peaks)
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
