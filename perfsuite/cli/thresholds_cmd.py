"""`perfsuite thresholds`: time to several accuracy thresholds and where rankings change."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, metric_value, print_json


def _fractions(text: str) -> list[float]:
    try:
        values = [metric_value(x) for x in text.split(",") if x.strip()]
    except ValueError:
        msg = f"not a comma-separated list of numbers: {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not values:
        raise argparse.ArgumentTypeError("empty threshold list")
    return values


def register(sub: Any) -> None:
    p = sub.add_parser(
        "thresholds",
        help="time to accuracy at several thresholds, rankings and where they swap",
        description=(
            "From the recorded evaluation curves, compute the time to each threshold "
            "(first evaluation with metric >= threshold), rank runs (or groups with --groups) "
            "at each threshold, and list pairs whose order swaps between consecutive "
            "thresholds. Runs that trained to their end without reaching a threshold rank last "
            "as DNC (did not converge; 'DNC (diverged)' for a NaN loss); a run that stopped "
            "on reaching its own target is 'not measured' at stricter thresholds (not DNC, "
            "and left out of ranking changes)."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="RUN_OR_DIR", help="run.json files or folders")
    p.add_argument(
        "--thresholds",
        required=True,
        type=_fractions,
        metavar="T1,T2,...",
        help="comma-separated thresholds as fractions, e.g. 0.90,0.91,0.92,0.93",
    )
    p.add_argument("--metric", help="metric to rank on (default: the records' common task metric)")
    p.add_argument(
        "--groups",
        action="store_true",
        help="rank groups of repeated runs (mean time over the group) instead of single runs",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def _cell(p: Any) -> str:
    """One entry at one threshold: time and rank, DNC (diverged runs named), or not measured
    (and why)."""
    from perfsuite.fmt import duration

    if p.time_s is not None:
        return f"{duration(p.time_s)} (#{p.rank})"
    if p.state == "not_measured":
        stops = ", ".join(f"{x:g}" for x in p.stopped_at)
        if p.runs > 1:
            return f"not measured ({p.reached_runs}/{p.runs} reached, rest stopped at {stops})"
        return f"not measured (stopped at {stops})"
    if p.runs > 1:
        diverged = f", {p.diverged_runs} diverged" if p.diverged_runs else ""
        return f"DNC ({p.reached_runs}/{p.runs} runs{diverged})"
    return "DNC (diverged)" if p.diverged_runs else "DNC"


def _dnc_name(name: str, p: Any) -> str:
    """An entry in a ranking line's DNC list, a diverged single run marked."""
    return f"{name} (diverged)" if p.runs == 1 and p.diverged_runs else name


def render(res: Any) -> str:
    """Human text: a run x threshold table, the ranking at each threshold, and the swaps."""
    from perfsuite.fmt import printable, table

    cmp = "<=" if res.direction == "lower" else ">="

    label = {e.name: e.label for e in res.entries}
    by_name = {
        e.name: [next(p for p in r.placings if p.name == e.name) for r in res.rankings]
        for e in res.entries
    }
    headers = ["run" if res.by == "run" else "group"] + [
        f"{res.metric}{cmp}{t:g}" for t in res.thresholds
    ]
    rows = [[e.label] + [_cell(p) for p in by_name[e.name]] for e in res.entries]
    out = [table(rows, headers, "l" + "r" * len(res.thresholds)), ""]
    for r in res.rankings:
        order = [label[p.name] for p in r.placings if p.rank is not None]
        dnc = [_dnc_name(label[p.name], p) for p in r.placings if p.state == "dnc"]
        unmeasured = [label[p.name] for p in r.placings if p.state == "not_measured"]
        line = f"{res.metric} {cmp} {r.threshold:g}: " + (" < ".join(order) or "(none reached)")
        line += f"; DNC: {', '.join(dnc)}" if dnc else ""
        out.append(line + (f"; not measured: {', '.join(unmeasured)}" if unmeasured else ""))
    out.append("")
    if res.swaps:
        out.append("ranking changes:")
        out.extend(
            f"  {label[s.faster_before]} ahead of {label[s.faster_after]} at {s.from_threshold:g}, "
            f"behind at {s.to_threshold:g}"
            for s in res.swaps
        )
    else:
        out.append("ranking changes: none")
    out.extend(f"note: {n}" for n in res.notes)
    # run ids come from records: escaped, as the table (out[0]) already is
    return "\n".join([out[0], *(printable(line) for line in out[1:])])


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.runs.thresholds import analyze_thresholds
    from perfsuite.cli.common import load_runs

    records = load_runs(args.paths)
    try:
        res = analyze_thresholds(records, args.thresholds, args.metric, by_group=args.groups)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.json:
        print_json(res)
    else:
        print(render(res))
    return 0
