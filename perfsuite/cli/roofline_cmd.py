"""`perfsuite roofline RUN_JSON`: where a run and its ops sit under the device's roofs."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_deprecated,
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
        "run", metavar="RUN", help="a run folder, a run.json, or a group folder holding one run"
    )
    add_top_flag(p, "rows in the per-op table and the ranking")
    p.add_argument(
        "-o", "--output", metavar="FILE", help="also write an interactive roofline page (HTML)"
    )
    add_deprecated(p, "--html", "-o/--output", "output")
    p.add_argument(
        "--peaks",
        metavar="FILE",
        help="roofs from a `perfsuite peaks --json` file (per math: measured, else "
        "spec), used before the record's own ceilings",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


# the window's step and the run's step_time read as the same below this relative difference
SAME_STEP = 0.005


def _shares_of(res: Any) -> str:
    """What the per-op shares are shares of; "not the run's step_time above" only when the
    window's step differs from it (by more than SAME_STEP)."""
    from perfsuite import fmt

    if not res.time_rows:
        return ""
    step = fmt.si(res.reconciled_step_time_s, "s")
    run_step = res.run.step_time.value
    window = res.reconciled_step_time_s
    if res.time_rows.measured_source.startswith("timeline.") and not (
        run_step and window and abs(window - run_step) <= SAME_STEP * run_step
    ):
        return (
            f"shares of the {step} step of the epoch the window followed, not the run's "
            "step_time above; "
        )
    return f"shares of the {step} step_time; "


def _measured_text(view: Any) -> list[str]:
    """Counted vs measured FLOP and modeled vs measured DRAM bytes, side by side: per op class,
    then per op where the capture attributes kernels to ops; then the calibration line."""
    from perfsuite import fmt
    from perfsuite.views.roofline_rows import measured_tables

    out = []
    for caption, headers, body, notes in measured_tables(view):
        out += ["", caption, fmt.table(body, headers, align="lrrrrrr")]
        out += [f"  - {n}" for n in notes]
    if out and view.calibration:
        out.append(view.calibration)
    if view.note:
        out += ["", f"note: {view.note}"]
    return out


def _text(
    res: Any,
    util: Any,
    top: int,
    measured: Any = None,
    mfu: Any = None,
) -> str:
    from perfsuite import fmt
    from perfsuite.analyzers.roofline.above_roof import check_line
    from perfsuite.views.roofline_rows import (
        MFU_HEADERS,
        OP_HEADERS,
        RANKING_HEADERS,
        ROOF_HEADERS,
        RUN_HEADERS,
        TIME_HEADERS,
        mfu_rows,
        op_caption,
        op_rows,
        ranking_rows,
        roof_rows,
        run_rows,
        time_rows,
        utilization_doubts,
    )

    r = res.run
    out = [
        f"Roofline of {r.run_id} on {r.device or 'unknown device'} ({r.dtype or '?'})",
        f"math: {res.math_source}",
        # a fact that voids every number below goes first, not among the closing notes
        *[n for n in res.notes if n.startswith("WRONG MACHINE")],
        "",
    ]
    rows = run_rows(res)
    out.append(fmt.table(rows, RUN_HEADERS, align="lrll"))
    if r.flag:
        out.append(f"WHOLE RUN FLAGGED: {r.flag}")
    out += [
        "",
        "Roofs used (each op is judged against the roof of the math it ran in):",
        fmt.table(roof_rows(res), ROOF_HEADERS, align="lrrll"),
    ]
    if util.run and (util.spec_peak or util.measured_peak):
        # a roof some op is flagged above: the mark goes after the name, over both figures
        peak, bw = (f"{m}:" if m else "" for m in utilization_doubts(res))
        out.append("")
        out.append(
            f"utilization: peak{peak} {fmt.pct(util.run.of_measured_peak)} of measured, "
            f"{fmt.pct(util.run.of_spec_peak)} of spec; bandwidth{bw} "
            f"{fmt.pct(util.run.of_measured_bandwidth)} of measured, "
            f"{fmt.pct(util.run.of_spec_bandwidth)} of spec"
        )
    if mfu is not None:
        out += [
            "",
            "Model FLOPs utilization (transformer):",
            fmt.table(mfu_rows(mfu), MFU_HEADERS, align="lrll"),
        ]
        from perfsuite.flops.mfu import why_counted_differs

        out += [f"  - {n}" for n in [*mfu.notes, why_counted_differs(mfu)]]
    if res.machine_check:
        out.append(check_line(res.machine_check))
    if util.clock:
        c = util.clock
        out.append(
            f"SM clock: mean {fmt.si(c.sm_clock_hz_mean, 'Hz')}, min "
            f"{fmt.si(c.sm_clock_hz_min, 'Hz')}, max spec "
            f"{fmt.si(c.sm_clock_hz_max_spec, 'Hz')} ({fmt.pct(c.mean_of_max)} of max"
            f"{', THROTTLED' if c.throttled else ''})"
        )
    if util.cpu:
        mean, peak = util.cpu.util_pct_mean, util.cpu.util_pct_max
        out.append(
            "CPU utilization, machine-wide (every process, % of all cores): "
            f"mean {fmt.pct(None if mean is None else mean / 100)}, "
            f"max {fmt.pct(None if peak is None else peak / 100)}"
        )
        own, own_max = util.cpu.process_util_pct_mean, util.cpu.process_util_pct_max
        if own is not None:
            out.append(
                "CPU utilization of the run's process (% of one core): "
                f"mean {fmt.pct(own / 100)}, "
                f"max {fmt.pct(None if own_max is None else own_max / 100)}"
            )
    if res.ops:
        out += [
            "",
            op_caption(res, top, _shares_of(res)),
            fmt.table(op_rows(res, top), OP_HEADERS, align="llrrrrrrllrrr"),
        ]
    if res.time_rows:
        tr = res.time_rows
        out += [
            "",
            f"Where the measured step goes ({fmt.si(tr.measured_step_s, 's')}, "
            f"{tr.measured_source}); rows add up to it:",
            fmt.table(time_rows(tr, top), TIME_HEADERS, align="lrrl"),
        ]
    if res.ranking:
        out += [
            "",
            "Where to look first (lost time = time x (1 - achieved/attainable)):",
            fmt.table(
                ranking_rows(res, top),
                RANKING_HEADERS,
                align="rlrrrl",
            ),
        ]
    if measured is not None:
        out += _measured_text(measured)
    h = res.hierarchical
    out += [
        "",
        f"Hierarchical roofline: {h.source} bytes, {len(h.points)} points; levels "
        + ", ".join(f"{k} {fmt.si(v, 'byte/s')}" for k, v in h.levels.items()),
    ]
    if len(h.levels) == 1:  # say why a "hierarchy" of one level is all there is
        out.append(
            "  (one level: without measured per-level traffic, i.e. Nsight Compute counters "
            "with L2 and DRAM bytes, every op is judged against main-memory bandwidth only)"
        )
    notes = res.notes + h.notes + util.notes
    if notes:
        out += ["", "Notes:"] + [f"  - {n}" for n in notes]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.roofline.inputs import RooflineInputError
    from perfsuite.analyzers.roofline.roofline import EXPLAIN, roofline
    from perfsuite.analyzers.roofline.utilization import utilization
    from perfsuite.record import load_record

    top = top_rows(args.top)
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs

    rec = load_record(resolve_run(args.run))
    if args.output:  # refused before any work: never onto the record, a sidecar or an input
        output_path(args.output, [rec], [args.run, *([args.peaks] if args.peaks else [])])
    try:
        peaks = peaks_file_roofs(args.peaks) if args.peaks else None
        res = roofline(rec, peaks)
    except (RooflineInputError, PeaksFileError) as exc:
        raise CLIError(str(exc)) from None
    util = utilization(rec, peaks)
    from perfsuite.analyzers.roofline.measured import counted_vs_measured

    measured = counted_vs_measured(rec)
    from perfsuite.flops.mfu import mfu

    model = mfu(rec)
    if args.output:
        from perfsuite.record.io import write_text_atomic

        page = html_pages(args).roofline(rec, top, peaks)
        path = write_text_atomic(args.output, page)
        status(f"wrote {path}")
    if args.json:
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
            }
        )
    else:
        print(_text(res, util, top, measured, model))
    return 0
