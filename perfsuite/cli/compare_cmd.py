"""`perfsuite compare`: runs or groups of repeats side by side, with a verdict CI can gate on."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfsuite.cli.common import (
    EXIT_NO_VERDICT,
    EXIT_OK,
    EXIT_SLOWER,
    CLIError,
    add_json_flag,
    add_top_flag,
    int64,
    print_json,
    status,
    top_rows,
)

EPILOG = """\
items (the first is the baseline; each later one is compared with it):
  RUN                a run folder or its run.json: one run
  FOLDER             a folder of runs (searched recursively): one group per group.id
                     (perfsuite run --repeats N); runs without one form one group
  --group-a P... --group-b P...
                     two groups made of the listed runs or folders (A is the baseline)

verdict (two groups of repeats, 2+ runs each), per quantity (time to accuracy, time per epoch):
  faster / slower    the Mann-Whitney U rank test gives p < --alpha (exact distribution up to
                     40 runs in all, else normal with tie correction), the bootstrap interval
                     (1 - alpha) of the ratio of means lies on the same side of 1, and the
                     ratio differs from 1 by at least --min-effect
  no significant difference   otherwise (the reason is printed)
  no verdict         no run of either group has a value (e.g. none reached the target), or
                     the groups are not comparable: different workloads or targets (time to
                     accuracy), different workloads or steps per epoch (time per epoch)
  Runs that did not reach the target count as the slowest in the rank test; crashed runs that
  did not reach are left out. A candidate that reaches the target in fewer of its runs than
  the baseline without a significant verdict gets a warning (exit status unchanged).
  See docs/compare.md.

exit status:
  0  no candidate is significantly slower on the gated quantity (also: runs without groups)
  2  usage error or bad input (a one-line error names the file and the field)
  3  a candidate group is significantly slower than the baseline (a regression)
  4  groups were given but no verdict could be reached on the gated quantity (no value,
     or not comparable)

examples:
  perfsuite compare runs/base-x5 runs/candidate-x5 --min-effect 0.02
  perfsuite compare --group-a runs/a1 runs/a2 runs/a3 --group-b runs/b1 runs/b2 runs/b3 --json
  perfsuite compare runs/torch-run runs/tf-run        # two runs: table, FLOP agreement
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="runs or groups of repeats side by side, with a statistical verdict (exit code)",
        description=(
            "Compare runs, or groups of repeated runs, side by side: framework, time to "
            "accuracy, time per epoch, FLOPs per step (checked to agree for the same network "
            "and batch), achieved FLOP/s, roofline position and the ops whose time changed "
            "most. For two groups of repeats: a statistical verdict (faster / slower / no "
            "significant difference) whose exit status a CI job can gate on."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("items", nargs="*", metavar="RUN_OR_FOLDER", help="runs or group folders")
    p.add_argument("--group-a", nargs="+", metavar="PATH", help="runs of the baseline group")
    p.add_argument("--group-b", nargs="+", metavar="PATH", help="runs of the candidate group")
    p.add_argument(
        "--min-effect",
        type=float,
        default=0.0,
        metavar="F",
        help="smallest relative difference called a difference, e.g. 0.02 for 2%% "
        "(default 0: any significant difference)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the rank test; the ratio interval is 1 - alpha (default 0.05)",
    )
    p.add_argument(
        "--gate",
        choices=["time_to_accuracy", "time_per_epoch", "both"],
        default="time_to_accuracy",
        help="which verdict sets the exit status (default time_to_accuracy)",
    )
    p.add_argument(
        "--resamples", type=int64, default=10_000, help="bootstrap resamples (default 10000)"
    )
    p.add_argument("--seed", type=int64, default=0, help="bootstrap seed (default 0)")
    p.add_argument(
        "--flop-tolerance",
        type=float,
        default=1e-3,
        metavar="F",
        help="relative FLOP difference tolerated for the same network (default 0.001)",
    )
    add_top_flag(p, "op time deltas shown per candidate")
    add_json_flag(p)
    p.set_defaults(func=run)


def _load(paths: list[str]) -> list[dict[str, Any]]:
    from perfsuite.record import find_records, load_record

    files = list(find_records(paths))
    if not files:
        raise CLIError(f"no run.json found under {' '.join(paths)}")
    return [load_record(f) for f in files]


def _folder_label(path: str) -> str:
    p = Path(path)
    return (p.parent.name if p.name == "run.json" else p.name) or str(p)


def items(args: argparse.Namespace) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, records) per item, the baseline first, from the positional paths or the
    --group-a/--group-b lists."""
    from perfsuite.analyzers.runs.compare import items_from_records

    if args.group_a or args.group_b:
        if not (args.group_a and args.group_b):
            raise CLIError("--group-a and --group-b go together")
        if args.items:
            raise CLIError("give either RUN_OR_FOLDER items or --group-a/--group-b, not both")
        return [("A", _load(args.group_a)), ("B", _load(args.group_b))]
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for path in args.items:
        recs = _load([path])
        found = items_from_records(recs, None if len(recs) == 1 else _folder_label(path))
        if len(found) == 1 and len(recs) > 1:  # a folder of one group: named as the folder
            found = [(_folder_label(path), recs)]
        out += found
    if len(out) < 2:
        raise CLIError(
            "compare needs at least two runs or groups (give two paths, or --group-a/--group-b)"
        )
    seen: dict[str, int] = {}
    for i, (label, recs) in enumerate(out):  # the same label twice gets a suffix
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            out[i] = (f"{label} ({seen[label]})", recs)
    return out


def exit_code(verdicts: list[Any], gate: str) -> int:
    """3 if a gated verdict says slower, else 4 if one has no verdict, else 0."""
    gated = [v for v in verdicts if gate == "both" or v.quantity == gate]
    if any(v.verdict == "slower" for v in gated):
        return EXIT_SLOWER
    if any(v.verdict == "no verdict" for v in gated):
        return EXIT_NO_VERDICT
    return EXIT_OK


def _check(args: argparse.Namespace) -> None:
    if not 0 < args.alpha < 1:
        raise CLIError(f"--alpha {args.alpha:g}: must be between 0 and 1")
    if not args.min_effect >= 0 or args.min_effect >= 1:
        raise CLIError(f"--min-effect {args.min_effect:g}: must be a fraction in [0, 1)")
    if args.resamples < 100:
        raise CLIError(f"--resamples {args.resamples}: must be at least 100")
    if not args.flop_tolerance >= 0:
        raise CLIError(f"--flop-tolerance {args.flop_tolerance:g}: must be >= 0")
    top_rows(args.top)  # refuses a negative N


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.runs.compare import compare, fewer_reached
    from perfsuite.views.compare_rows import render

    _check(args)
    result = compare(
        items(args),
        alpha=args.alpha,
        min_effect=args.min_effect,
        resamples=args.resamples,
        seed=args.seed,
        flop_tolerance=args.flop_tolerance,
        top=None if args.json else top_rows(args.top),  # --json is never cut
    )
    code = exit_code(result.verdicts, args.gate)
    if args.json:
        print_json({"comparison": result, "gate": args.gate, "exit_code": code})
    else:
        print(render(result))
    for line in fewer_reached(result.verdicts):  # also a note; repeated where CI logs look
        status(f"warning: {line}")
    if code == EXIT_SLOWER:
        status(f"exit {code}: a candidate is significantly slower ({args.gate})")
    elif code == EXIT_NO_VERDICT:
        status(f"exit {code}: no verdict could be reached ({args.gate})")
    return code
