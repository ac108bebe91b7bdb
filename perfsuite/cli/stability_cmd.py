"""`perfsuite stability`: how repeatable is time-to-accuracy over repeated runs?"""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    int64,
    load_runs,
    metric_value,
    print_json,
    status,
)
from perfsuite.views.stability_rows import render


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
    p.add_argument("--seed", type=int64, default=0, help="bootstrap seed (default 0)")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.runs.stability import stability, threshold_problem, training_records

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
