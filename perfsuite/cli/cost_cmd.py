"""`perfsuite cost`: training and inference cost in USD, with the price's origin."""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, instance_type, print_json


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


def add_instance_type_flag(p: argparse.ArgumentParser) -> None:
    """--instance-type TYPE, shared with `perfsuite leaderboard` (same rule:
    perfsuite.analyzers.results.cost)."""
    p.add_argument(
        "--instance-type",
        metavar="TYPE",
        type=instance_type,
        help=(
            "instance type to price records that record none (e.g. n2-standard-2); not used "
            "for a record whose hardware differs from the price table's for TYPE, or whose "
            "hardware cannot be checked against it (a note says so)"
        ),
    )


def check_instance_type(prices: dict[str, dict[str, Any]], instance_type: str | None) -> None:
    """A one-line error for an --instance-type that the price table does not list."""
    if instance_type and instance_type not in prices:
        known = ", ".join(sorted(prices))
        raise CLIError(f"--instance-type {instance_type}: not in the price table ({known})")


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
            "items = batch-1 latency (s; the mean over the evaluation set, see perfsuite "
            "infer) x 10,000 / 3600 x price, or the record's imported cost per item x 10,000. "
            "Energy (J) is shown where a hardware counter measured it. The price is the "
            "record's own cost.usd_per_hour, else the price table entry for "
            "hardware.instance_type, else the --instance-type entry for records that name no "
            "instance type (unless the table lists other hardware for it, or the record's "
            "hardware cannot be checked against it), else unknown (never guessed); a recorded "
            "instance type whose listed hardware is not the record's is not used either. A "
            "run that crashed or is unfinished without reaching is n/a, not DNC."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="RUN_OR_DIR", help="run.json files or folders")
    add_prices_flag(p)
    add_instance_type_flag(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def percentiles(c: Any) -> str:
    """`p50 / p90 / p99` of a DAWNBench-rule latency, or "-"."""
    from perfsuite.fmt import si

    if c.inference_p50_s is None:
        return "-"
    return " / ".join(si(v, "s") for v in (c.inference_p50_s, c.inference_p90_s, c.inference_p99_s))


def render(results: list[Any]) -> str:
    from perfsuite.analyzers.results.inference import OLDER_RULE
    from perfsuite.fmt import duration, si, table, usd

    rows = []
    for c in results:
        # a crashed or unfinished run is left out (n/a), not DNC: docs/statistics.md, Terms
        train_blank = (
            "-" if c.entry_type == "inference" else (f"n/a ({c.left_out})" if c.left_out else "DNC")
        )
        rows.append(
            [
                c.run_id,
                c.task,
                c.target,
                c.instance_type or "-",
                f"${c.price.usd_per_hour:g} ({c.price.origin})"  # the price as listed, unrounded
                if c.price.usd_per_hour is not None
                else "unknown",
                duration(c.training_time_s) if c.reached else train_blank,
                usd(c.training_cost_usd),
                si(c.inference_latency_s, "s") + (" *" if c.inference_rule == OLDER_RULE else ""),
                f"{usd(c.inference_cost_per_10k_usd)} per 10k {c.items}"
                if c.inference_cost_per_10k_usd is not None
                else "n/a",
            ]
        )
    headers = [
        "run",
        "task",
        "target",
        "instance",
        "price/h (from)",
        "time to acc.",
        "train cost",
        "latency (mean)",
        "infer cost/10k",
    ]
    align = "llllrrrrr"
    if any(c.inference_p50_s is not None for c in results):  # optional: DAWNBench-rule runs
        for row, c in zip(rows, results, strict=True):
            row.append(percentiles(c))
        headers.append("p50 / p90 / p99")
        align += "r"
    if any(c.energy_to_accuracy_j is not None or c.energy_per_10k_j is not None for c in results):
        for row, c in zip(rows, results, strict=True):
            row += [si(c.energy_to_accuracy_j, "J"), si(c.energy_per_10k_j, "J")]
        headers += ["energy to acc.", "energy/10k inf."]
        align += "rr"
    out = [table(rows, headers, align)]
    if any(c.inference_rule == OLDER_RULE for c in results):
        out.append("* older rule: median of a few batch-1 calls, not the DAWNBench mean")
    for c in results:
        out.extend(f"note: {c.run_id}: {n}" for n in c.notes)
    sources = sorted({c.price.source for c in results if c.price.usd_per_hour is not None})
    out.extend(f"price source: {s}" for s in sources)
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.results.cost import costs
    from perfsuite.cli.common import load_runs

    prices = load_price_table(args.prices)
    check_instance_type(prices, args.instance_type)
    records = load_runs(args.paths)
    results = costs(records, prices, args.instance_type)
    if args.json:
        print_json({"costs": results})
    else:
        print(render(results))
    return 0
