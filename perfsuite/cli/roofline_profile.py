"""`perfsuite roofline PROFILE`: the per-op roofline of an Nsight Systems profile (an nsys
SQLite export or .nsys-rep) made under emit_nvtx, as PyProf gave it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfsuite.cli.common import CLIError, print_json


def handles(path: str) -> bool:
    """True for a profile file (nsys report or SQLite export) rather than a run."""
    from perfsuite.traces.nsys import is_sqlite
    from perfsuite.traces.profile import REPORT_SUFFIXES

    p = Path(path)
    return p.name.endswith(REPORT_SUFFIXES) or (p.is_file() and is_sqlite(p))


def _text(res: Any, top: int) -> str:
    from perfsuite.fmt import pct, si, table, truncate

    out = [
        f"Roofline of the ops in {res.path} on {res.device or 'unknown device'}",
        f"  reader {res.reader}",
        "",
        "Roofs:",
        table(
            [[r.kind, si(r.value, r.unit), r.provenance, r.source] for r in res.roofs],
            ["roof", "value", "provenance", "source"],
            "lrll",
        ),
    ]
    rows = []
    for r in res.rows[: top or None]:
        pl = r.placement
        frac = pct(pl.frac_of_roof) if pl.frac_of_roof is not None else (pl.flag or "n/a")
        rows.append(
            [
                r.op,
                truncate(str(list(r.input_dims)), 40),
                r.calls,
                si(r.flops, "FLOP"),
                si(r.bytes, "B"),
                si(r.device_time_s, "s"),
                si(pl.achieved_flops, "FLOP/s"),
                "n/a" if pl.intensity is None else f"{pl.intensity:.3g}",
                pl.bound or "n/a",
                frac,
                "n/a" if r.lost_s is None else si(r.lost_s, "s"),
            ]
        )
    headers = [
        "op",
        "input dims",
        "calls",
        "FLOP",
        "bytes",
        "kernel time",
        "achieved",
        "FLOP/byte",
        "bound",
        "of roof",
        "lost",
    ]
    out += [
        "",
        "Ops (FLOP, bytes modeled from the marker's shapes; kernel time measured; all calls):",
        table(rows, headers, "llrrrrrrlrr"),
        f"device time without an op with shapes: {si(res.unattributed_device_time_s, 's')}",
    ]
    out += ["", "Notes:"] + [f"  - {n}" for n in res.notes]
    return "\n".join(out)


def run(args: argparse.Namespace, top: int) -> int:
    from perfsuite.analyzers.roofline.profile_ops import profile_roofline
    from perfsuite.analyzers.timeline import TraceError, analyze_trace, read_profile
    from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs

    if args.output:
        raise CLIError(f"{args.run}: -o/--output draws a run's roofline page; not a profile's")
    try:
        peaks = peaks_file_roofs(args.peaks) if args.peaks else None
        data = read_profile(args.run)
        a = analyze_trace(data, top=None)
    except (TraceError, PeaksFileError) as exc:
        raise CLIError(str(exc)) from None
    res = profile_roofline(a, peaks)
    if args.json:
        print_json({"profile_roofline": res})
    else:
        print(_text(res, top))
    return 0
