"""`perfsuite leaderboard`: DAWNBench-style ranked tables over any set of run records."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, print_json


def register(sub: Any) -> None:
    from perfsuite.analyzers.runs.leaderboard import BY
    from perfsuite.cli.cost_cmd import add_instance_type_flag, add_prices_flag

    p = sub.add_parser(
        "leaderboard",
        help="DAWNBench-style ranked tables: training time/cost, inference latency/cost",
        description=(
            "Rank records (our runs and imported DAWNBench/MLPerf results) per task at the "
            "task's own metric and threshold. Entries that finished without reaching it are "
            "listed as DNC below the ranking; entries without a value (e.g. unknown price) and "
            "runs that crashed or are unfinished without reaching it as n/a, saying why. Equal "
            "values share a rank and are listed by run id. Costs are priced as perfsuite cost "
            "prices them (--prices, --instance-type). An import of a run's own mllog.txt is "
            "listed once, as the run."
        ),
    )
    p.add_argument(
        "paths", nargs="+", metavar="DIR", help="folders (searched recursively) or run.json files"
    )
    p.add_argument("--task", help="only this task (e.g. cifar10, imagenet)")
    p.add_argument(
        "--by",
        choices=BY,
        default="training-time",
        help="what to rank by (default training-time); costs use the price table",
    )
    add_prices_flag(p)
    add_instance_type_flag(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def _value(v: float | None, by: str) -> str:
    from perfsuite.fmt import duration, si, usd

    if v is None:
        return "-"
    if by == "training-time":
        return duration(v)
    if by == "inference-latency":
        return si(v, "s")
    return usd(v)


GENERALIZATION_HEADERS = ["own top1", "shifted top1", "shift drop", "corruption mean", "probe top1"]


def _generalization_cells(g: dict[str, Any] | None) -> list[str]:
    """`perfsuite eval` results of the threshold model (percent; drop in points)."""
    from perfsuite.fmt import pct

    if not g:
        return ["-"] * len(GENERALIZATION_HEADERS)
    drop = g.get("shift_drop")
    return [
        pct(g.get("own_top1"), 2) if g.get("own_top1") is not None else "-",
        pct(g.get("shift_top1"), 2) if g.get("shift_top1") is not None else "-",
        f"{100 * drop:+.2f} pts" if drop is not None else "-",
        pct(g.get("corruption_mean"), 2) if g.get("corruption_mean") is not None else "-",
        pct(g.get("probe_top1"), 2) if g.get("probe_top1") is not None else "-",
    ]


ENERGY_HEADER = {"training": "energy to acc.", "inference": "energy/10k"}


def render(boards: list[Any]) -> str:
    from perfsuite.fmt import si, table

    blocks = []
    for b in boards:
        task = f"{b.task} (MLPerf round {b.round})" if b.round else b.task
        head = f"== {task}: {b.target}, ranked by {b.by} ({b.unit})"
        rows = [
            [
                str(r.rank) if r.rank is not None else r.status,
                _value(r.value, b.by),
                r.provenance or "",
                r.model or "?",
                r.hardware,
                r.framework or "?",
                r.source,
                r.run_id,
                r.note or "",
            ]
            for r in b.rows
        ]
        headers = [
            "rank",
            b.by,
            "provenance",
            "model",
            "hardware",
            "framework",
            "source",
            "run",
            "note",
        ]
        align = "rrlllllll"
        if any(r.generalization for r in b.rows):  # optional columns, only when measured
            for row, r in zip(rows, b.rows, strict=True):
                row.extend(_generalization_cells(r.generalization))
            headers += GENERALIZATION_HEADERS
            align += "r" * len(GENERALIZATION_HEADERS)
        if any(r.accelerator_s is not None for r in b.rows):  # systems of different sizes
            for row, r in zip(rows, b.rows, strict=True):
                acc = r.accelerator_s
                row.insert(2, "-" if acc is None else f"{acc / 60:,.0f}")
            headers.insert(2, "accelerator-min")
            align = align[:2] + "r" + align[2:]
        if any(r.energy_j is not None for r in b.rows):  # only where a counter measured it
            for row, r in zip(rows, b.rows, strict=True):
                row.append(si(r.energy_j, "J"))
            headers.append(ENERGY_HEADER[b.by.split("-")[0]])
            align += "r"
        lines = [head, table(rows, headers, align)]
        lines.extend(f"note: {n}" for n in b.notes)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.runs.leaderboard import leaderboard
    from perfsuite.cli.common import load_runs
    from perfsuite.cli.cost_cmd import check_instance_type, load_price_table

    if args.instance_type and "cost" not in args.by:
        raise CLIError(
            "--instance-type prices the cost rankings (--by training-cost or inference-cost), "
            f"not --by {args.by}"
        )
    if args.prices and "cost" not in args.by:
        raise CLIError(
            f"--prices prices the cost rankings (--by training-cost or inference-cost), not "
            f"--by {args.by}"
        )
    prices = load_price_table(args.prices) if "cost" in args.by else {}
    check_instance_type(prices, args.instance_type)
    records = load_runs(args.paths)
    boards = leaderboard(records, args.by, prices, args.task, args.instance_type)
    if not boards:
        what = f"task {args.task!r}" if args.task else "any task"
        raise CLIError(
            f"no {args.by.split('-')[0]} entries for {what} under {' '.join(args.paths)}"
        )
    if args.json:
        print_json({"boards": boards})
    else:
        print(render(boards))
    return 0
