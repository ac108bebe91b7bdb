"""`perfsuite cost`: training and inference cost in USD, with the price's origin."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, print_json


def add_prices_flag(p: argparse.ArgumentParser) -> None:
    """--prices FILE, shared with `perfsuite leaderboard`."""
    p.add_argument(
        "--prices",
        metavar="FILE",
        help=(
            "price table JSON (format of perfsuite/pricing/prices.json) whose entries replace "
            "the built-in ones by instance type; default: $PERFSUITE_PRICES, if set"
        ),
    )


def load_price_table(path: str | None) -> dict[str, dict[str, Any]]:
    """The price table, with price-file errors turned into one-line CLI errors."""
    from perfsuite.pricing import PriceError, load_prices

    try:
        return load_prices(path)
    except PriceError as exc:
        raise CLIError(str(exc)) from None


def register(sub: Any) -> None:
    p = sub.add_parser(
        "cost",
        help="training cost (time to accuracy x USD/h) and inference cost per 10,000 items",
        description=(
            "Training cost = time to accuracy (h) x price (USD/h). Inference cost per 10,000 "
            "items = batch-1 latency (s) x 10,000 / 3600 x price, or the record's imported "
            "cost per item x 10,000. The price is the record's own cost.usd_per_hour, else the "
            "price table entry for hardware.instance_type, else unknown (never guessed)."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="RUN_OR_DIR", help="run.json files or folders")
    add_prices_flag(p)
    p.add_argument(
        "--instance-type",
        metavar="TYPE",
        help="instance type to price records that record none (e.g. n2-standard-2)",
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def render(results: list[Any], targets: dict[str, str] | None = None) -> str:
    """The cost table; `targets` (run id -> "F1 >= 0.75") names each task's own target."""
    from perfsuite.fmt import duration, si, table, usd

    rows = []
    for c in results:
        train_blank = "-" if c.entry_type == "inference" else "DNC"
        rows.append(
            [
                c.run_id,
                c.task,
                (targets or {}).get(c.run_id, "-"),
                c.instance_type or "-",
                f"{c.price.usd_per_hour:g} ({c.price.origin})"
                if c.price.usd_per_hour is not None
                else "unknown",
                duration(c.training_time_s) if c.reached else train_blank,
                usd(c.training_cost_usd),
                si(c.inference_latency_s, "s"),
                usd(c.inference_cost_per_10k_usd),
            ]
        )
    headers = [
        "run",
        "task",
        "target",
        "instance",
        "USD/h (from)",
        "time to acc.",
        "train cost",
        "latency",
        "infer cost/10k",
    ]
    out = [table(rows, headers, "llllrrrrr")]
    for c in results:
        out.extend(f"note: {c.run_id}: {n}" for n in c.notes)
    sources = sorted({c.price.source for c in results if c.price.usd_per_hour is not None})
    out.extend(f"price source: {s}" for s in sources)
    return "\n".join(out)


def task_targets(records: list[dict[str, Any]]) -> dict[str, str]:
    """Run id -> its task's target in the task's unit ("top-1 >= 94%", "F1 >= 0.75")."""
    from perfsuite.fmt import target

    out = {}
    for rec in records:
        task = rec.get("task") or {}
        out[str(rec.get("run_id"))] = target(
            task.get("metric"), task.get("threshold"), task.get("direction")
        )
    return out


def run(args: argparse.Namespace) -> int:
    from analyzers.cost import costs
    from perfsuite.cli.common import load_runs

    prices = load_price_table(args.prices)
    if args.instance_type and args.instance_type not in prices:
        known = ", ".join(sorted(prices))
        raise CLIError(f"--instance-type {args.instance_type}: not in the price table ({known})")
    records = load_runs(args.paths)
    results = costs(records, prices, args.instance_type)
    if args.json:
        print_json({"costs": results})
    else:
        print(render(results, task_targets(records)))
    return 0
