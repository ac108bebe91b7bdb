"""`perfsuite stability`: how repeatable is time-to-accuracy over repeated runs?"""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    load_runs,
    metric_value,
    print_json,
    status,
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stability",
        help="run-to-run spread of time-to-accuracy (CoV, bootstrap CI, olympic mean)",
        description=(
            "Summarize repeated runs: time to accuracy and epochs to threshold per run; over "
            "runs the mean, sample std, coefficient of variation, seeded bootstrap 95% CI of "
            "the mean, fraction reaching the threshold and the MLPerf olympic mean (the "
            "benchmark's own rule for imported MLPerf runs: unet3d drops 4 at each end). "
            "Time per epoch gets the same statistics, separating statistical variance "
            "(epochs) from hardware variance (seconds per epoch). Runs sharing group.id form "
            "one group, others are grouped by task, model, hardware and configuration "
            "(switches, batch size, epochs, recipe, framework, device...). A run that "
            "finished without reaching the threshold is DNC (did not converge; 'DNC "
            "(diverged)' for a NaN loss). Crashed or unfinished runs, and runs that stopped "
            "at their own target before a stricter --threshold, are left out and named. See "
            "docs/statistics.md."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="RUN_OR_DIR", help="run.json files or folders")
    p.add_argument("--metric", help="metric to use instead of each record's task metric")
    p.add_argument(
        "--threshold",
        type=metric_value,
        help="threshold recomputed from the curves instead of the recorded one (a fraction 0-1 "
        "for higher-is-better metrics such as top1)",
    )
    p.add_argument(
        "--max-cov",
        type=float,
        default=0.05,
        help="warn when a coefficient of variation exceeds this fraction (default 0.05)",
    )
    p.add_argument(
        "--max-ci",
        type=float,
        default=0.05,
        help="warn when the 95%% CI half-width exceeds this fraction of the mean (default 0.05)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _row(name: str, s: Any, fmt: Any) -> list[str]:
    from perfsuite.fmt import pct

    ci = f"[{fmt(s.ci_low)}, {fmt(s.ci_high)}]" if s.ci_low is not None else "n/a"
    return [name, str(s.n), fmt(s.mean), fmt(s.std), pct(s.cov), ci, fmt(s.min), fmt(s.max)]


def _epochs(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


OUTCOME_HEADERS = ["run", "seed", "time to acc.", "epochs", "s/epoch", "CoV in run", "epoch times"]
SUMMARY_HEADERS = ["statistic", "n", "mean", "std", "CoV", "95% CI of mean", "min", "max"]


def headline(g: Any) -> str:
    """'digits (...): top1 >= 0.98 (5/5 reached, 100%)': one group's target and success."""
    from perfsuite.fmt import pct

    return (
        f"{g.label}: {g.metric} {'<=' if g.direction == 'lower' else '>='} {g.threshold} "
        f"({g.n_reached}/{g.n_runs} reached, {pct(g.reached_fraction, 0)})"
    )


def _time_cell(r: Any) -> str:
    """Time to accuracy; DNC (did not converge: finished without reaching the threshold),
    "DNC (diverged)" for a NaN/inf loss; or why the run is left out ("crashed", "not
    measured")."""
    from perfsuite.fmt import duration

    if r.reached:
        return duration(r.time_s)
    if r.counted:
        return "DNC (diverged)" if r.status == "diverged" else "DNC"
    return "not measured" if r.stopped_at is not None else r.status


def outcome_rows(g: Any) -> list[list[str]]:
    """One row per run of a group (shared with the report's stability section)."""
    from perfsuite.fmt import duration, pct

    return [
        [
            r.run_id,
            "" if r.seed is None else str(r.seed),
            _time_cell(r),
            _epochs(r.epochs) if r.reached else "-",
            duration(r.time_per_epoch_s),
            pct(r.epoch_time_cov),
            r.epoch_times_from or "-",
        ]
        for r in g.runs
    ]


def summary_rows(g: Any) -> list[list[str]]:
    """Statistics over a group's runs: time to accuracy, epochs, time per epoch."""
    from perfsuite.fmt import duration

    return [
        _row("time to accuracy", g.time_to_accuracy, duration),
        _row("epochs to threshold", g.epochs_to_threshold, _epochs),
        _row("time per epoch", g.time_per_epoch, duration),
    ]


def olympic_line(g: Any) -> str:
    """The olympic mean and the rule applied: the generic one (drop fastest and slowest), or
    the benchmark's own when every run is an imported MLPerf record of it (unet3d: 4)."""
    from perfsuite.fmt import duration

    om = g.olympic_mean
    how = (
        "drop fastest and slowest"
        if g.olympic_rule == "generic"
        else f"{g.olympic_rule} rule: drop the {om.dropped} fastest and the {om.dropped} slowest"
    )
    return f"olympic mean ({how}): " + (
        duration(om.value) if om.value is not None else f"n/a ({om.reason})"
    )


def render(groups: list[Any]) -> str:
    """Human text for the stability results (one block per group)."""
    from perfsuite.fmt import printable, table

    blocks = []
    for g in groups:
        lines = [printable(f"== {headline(g)}")]
        lines.append(table(outcome_rows(g), OUTCOME_HEADERS, "llrrrrl"))
        lines.append("")
        lines.append(table(summary_rows(g), SUMMARY_HEADERS, "lrrrrrrr"))
        lines.append(olympic_line(g))
        lines.extend(printable(f"warning: {w}") for w in g.warnings)  # names from records
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def run(args: argparse.Namespace) -> int:
    from analyzers.stability import stability, threshold_problem, training_records

    records, skipped = training_records(load_runs(args.paths))
    if skipped:
        status(f"skipped {len(skipped)} inference-only record(s): no training run")
    if not records:
        raise CLIError("no training records to analyze")
    if args.threshold is not None:
        problem = threshold_problem(args.threshold, records, args.metric)
        if problem:
            raise CLIError(f"--threshold {args.threshold:g}: {problem}")
    groups = stability(
        records, args.metric, args.threshold, args.max_cov, args.max_ci, seed=args.seed
    )
    if args.json:
        print_json({"groups": groups})
    else:
        print(render(groups))
    return 0
