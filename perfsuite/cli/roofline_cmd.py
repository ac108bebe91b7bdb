"""`perfsuite roofline RUN_JSON`: where a run and its ops sit under the device's roofs."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    add_top_flag,
    html_pages,
    output_path,
    print_json,
    resolve_run,
    status,
    top_rows,
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "roofline",
        help="roofline placement of a run and its ops, ranked by time lost below the roof",
        description=(
            "Place a run (counted FLOPs, modeled bytes, measured step time) under the device's "
            "compute and memory roofs, join per-op FLOP models with profiled op times, and rank "
            "ops by lost time = time x (1 - achieved/attainable). Field meanings: "
            "docs/roofline.md."
        ),
    )
    p.add_argument(
        "run",
        metavar="RUN",
        help="a run folder, a run.json, a group folder holding one run, or an Nsight Systems "
        "profile (.sqlite export or .nsys-rep) made under emit_nvtx",
    )
    add_top_flag(p, "rows in the per-op table and the ranking")
    p.add_argument(
        "-o", "--output", metavar="FILE", help="also write an interactive roofline page (HTML)"
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="every note in full and the hierarchical roofline's points (default: the most "
        "important notes, one line each)",
    )
    p.add_argument(
        "--peaks",
        metavar="FILE",
        help="roofs from a `perfsuite peaks --json` file (per math: measured, else "
        "spec), used before the record's own ceilings",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def _table_text(table: Any) -> list[str]:
    """A view's table as text: a blank line, its heading, the table, the lines under it."""
    from perfsuite import fmt

    out = ["", f"{table.heading}:", fmt.table(table.rows, table.headers, align=table.align)]
    return out + [f"  - {n}" for n in table.notes]


def _text(view: Any, explain: bool) -> str:
    """The roofline view (perfsuite.views.roofline_view) as text: the answer first, then the
    whole-run and roof tables, utilization, the per-op tables, the hierarchy and the notes
    (`explain`: every note in full and the hierarchy's points; else the most important notes
    as one line each)."""
    out = [view.title, *view.warnings, *view.answer, view.math]
    for table in (view.run, view.roofs):
        out += _table_text(table)
    out += ["", *view.utilization] if view.utilization else []
    for table in (view.mfu, view.ops, view.time, view.ranking, *view.measured):
        out += _table_text(table) if table is not None else []
    out += view.measured_lines
    out += ["", view.hierarchy[0], *(f"  {line}" for line in view.hierarchy[1:])]
    if explain and view.levels is not None:
        out += _table_text(view.levels)
    if view.notes:
        out += ["", f"{view.notes_heading(explain)}:"]
        out += [f"  - {n}" for n in view.notes_shown(explain)]
    return "\n".join(out)


def _analyses(rec: Any, peaks_file: str | None) -> tuple[Any, Any, Any]:
    """(roofs of the peaks file or None, the roofline, the utilization) of a record; a record
    or peaks file the roofline cannot use is a CLIError naming file and field."""
    from perfsuite.analyzers.roofline.inputs import RooflineInputError
    from perfsuite.analyzers.roofline.roofline import roofline
    from perfsuite.analyzers.roofline.utilization import utilization
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs

    try:
        peaks = peaks_file_roofs(peaks_file) if peaks_file else None
        res = roofline(rec, peaks)
    except (RooflineInputError, PeaksFileError) as exc:
        raise CLIError(str(exc)) from None
    return peaks, res, utilization(rec, peaks)


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.roofline.measured import counted_vs_measured
    from perfsuite.analyzers.roofline.roofline import EXPLAIN
    from perfsuite.flops.mfu import mfu
    from perfsuite.record import load_record
    from perfsuite.views.roofline_view import roofline_view, view_json

    top = top_rows(args.top)
    from perfsuite.cli import roofline_profile

    if roofline_profile.handles(args.run):  # an nsys profile, not a run
        return roofline_profile.run(args, top)
    rec = load_record(resolve_run(args.run))
    if args.output:  # refused before any work: never onto the record, a sidecar or an input
        output_path(args.output, [rec], [args.run, *([args.peaks] if args.peaks else [])])
    peaks, res, util = _analyses(rec, args.peaks)
    measured, model = counted_vs_measured(rec), mfu(rec)
    view = roofline_view(res, util, top, measured, model)
    if args.output:
        from perfsuite.record.io import write_text_atomic

        path = write_text_atomic(args.output, html_pages(args).roofline(rec, top, peaks))
        status(f"wrote {path}")
    if not args.json:
        print(_text(view, args.explain))
        return 0
    print_json(
        {
            "roofline": res,
            "utilization": util,
            "mfu": model,
            "counted_vs_measured": measured.by_class,
            "counted_vs_measured_by_op": measured.by_op,
            "counters_calibration": measured.calibration,
            "counted_vs_measured_note": measured.note,
            "counted_vs_measured_notes": measured.class_notes,
            "counted_vs_measured_by_op_notes": measured.op_notes,
            "explain": EXPLAIN,
            "view": view_json(view),
        }
    )
    return 0
