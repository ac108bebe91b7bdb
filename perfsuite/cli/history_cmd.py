"""`perfsuite history`: the performance history, its change points and a CI gate.

perfsuite history [FILE.csv] [--db URL] [--series S] [--metric M] [--json]
perfsuite history check [FILE.csv] [--db URL] ... [--regressions-only]   exit 0 / 3 / 4
perfsuite history add RUN|DIR... [--db URL] [--metric M]
perfsuite history note SERIES TIME TEXT [--db URL]
"""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import (
    EXIT_NO_VERDICT,
    EXIT_OK,
    EXIT_SLOWER,
    CLIError,
    add_json_flag,
    positive_int,
    print_json,
    status,
)

EPILOG = """\
actions (the first word):
  (none) [FILE.csv]     each series, its latest value, label and change points (index, time,
                        commit, mean before -> after, % change, p-value, regression or
                        improvement); FILE.csv (Otava's layout) is read without a store
  check [FILE.csv]      the CI gate on the newest points of every selected series
  add RUN|DIR...        add records (runs, imports, folders of them) to the store
  note SERIES TIME TEXT mark a known change (a planned driver upgrade) of a series at TIME

change points: E-divisive means on sliding windows and a t-test merge, as Apache Otava 0.8
computes them (--window, --pvalue, --min-magnitude; Otava's defaults 50, 0.001, 0).

labels of the newest points (PyTorch HUD's): regression (the newest change point with
--consecutive points after it is a regression no note marks), suspicious (an unmarked
regression with fewer points after it, or the newest point 3 standard deviations worse than
its segment), no change, insufficient data (fewer than --min-points points).

exit status of check:
  0  no selected series shows a regression in its newest points
  2  usage error or bad input (a one-line error names the file or URL and the field)
  3  a regression
  4  no regression, but a series has too few points to tell (insufficient data)

The store is runs/history.sqlite unless --db names a SQLite file (a path or sqlite:///PATH)
or a PostgreSQL database (postgresql://user@host:port/db, with the `history` extra).
See docs/history.md.
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "history",
        help="the performance history: change points as Apache Otava finds them, a CI gate",
        description=(
            "Keep every run's results in a database (SQLite, or PostgreSQL for a team) and find "
            "where each series changed: time to accuracy, throughput, step time, MFU, fraction "
            "of roof, latency, cost and energy, per configuration."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("items", nargs="*", metavar="ACTION_OR_FILE", help="see below")
    p.add_argument("--db", metavar="PATH|URL", help="the store (default runs/history.sqlite)")
    p.add_argument(
        "--series",
        action="append",
        default=[],
        metavar="TEXT",
        help="only series whose name contains TEXT (repeatable)",
    )
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="NAME",
        help="only this metric (repeatable); with add: refuse records without it",
    )
    p.add_argument("--window", type=positive_int, default=50, help="points per window (50)")
    p.add_argument("--pvalue", type=float, default=0.001, help="t-test p-value (0.001)")
    p.add_argument(
        "--min-magnitude",
        type=float,
        default=0.0,
        metavar="F",
        help="smallest relative change kept, e.g. 0.02 (0)",
    )
    p.add_argument(
        "--consecutive",
        type=positive_int,
        default=3,
        metavar="N",
        help="points after a regression before it is called one (3)",
    )
    p.add_argument(
        "--min-points",
        type=positive_int,
        default=6,
        metavar="N",
        help="fewer points are insufficient data (6)",
    )
    p.add_argument(
        "--regressions-only", action="store_true", help="check: print only the regressions"
    )
    add_json_flag(p)
    p.set_defaults(func=run)


def _settings(args: argparse.Namespace) -> Any:
    from perfsuite.analyzers.history.verdict import Settings

    if not 0 < args.pvalue <= 1:
        raise CLIError(f"--pvalue {args.pvalue}: a p-value lies in (0, 1]")
    if not args.min_magnitude >= 0:
        raise CLIError(f"--min-magnitude {args.min_magnitude}: must be >= 0")
    if args.window < 2:
        raise CLIError("--window must be at least 2")
    return Settings(args.window, args.pvalue, args.min_magnitude, args.consecutive, args.min_points)


def _verdicts(args: argparse.Namespace, items: list[str]) -> list[Any]:
    from perfsuite.analyzers.history.verdict import judge
    from perfsuite.history_store.sources import is_csv, load_series
    from perfsuite.history_store.store import HistoryError

    if len(items) > 1 or (items and not is_csv(items[0])):
        raise CLIError(f"expected one FILE.csv, got {' '.join(items)}")
    if items and args.db:
        raise CLIError("give FILE.csv or --db, not both")
    settings = _settings(args)
    try:
        _, found = load_series(items[0] if items else args.db, args.series, args.metric)
    except HistoryError as exc:
        raise CLIError(str(exc)) from None
    return [judge(s, settings) for s in found]


def _show(args: argparse.Namespace, items: list[str]) -> int:
    from perfsuite.views.history_rows import history_json, history_text

    verdicts = _verdicts(args, items)
    if args.json:
        print_json(history_json(verdicts))
    else:
        print(history_text(verdicts))
    return EXIT_OK


def exit_code(labels: list[str]) -> int:
    """3 for any regression, else 4 for any series with too few points, else 0."""
    if "regression" in labels:
        return EXIT_SLOWER
    return EXIT_NO_VERDICT if "insufficient data" in labels else EXIT_OK


def _check(args: argparse.Namespace, items: list[str]) -> int:
    from perfsuite.views.history_rows import check_json, check_text

    verdicts = _verdicts(args, items)
    code = exit_code([v.label for v in verdicts])
    if args.json:
        shown = (
            [v for v in verdicts if v.label == "regression"] if args.regressions_only else verdicts
        )
        print_json(check_json(shown, code))
    else:
        print(check_text(verdicts, args.regressions_only))
    return code


def _note(args: argparse.Namespace, items: list[str]) -> int:
    from perfsuite.history_store.store import HistoryError, open_store

    if len(items) != 3:
        raise CLIError("usage: perfsuite history note SERIES TIME TEXT")
    series, time, text = items
    try:
        with open_store(args.db) as store:
            names = {s.name for s in store.series()}
            if series not in names:
                raise CLIError(f"{store.where}: field series: no series is named {series!r}")
            store.note(series, time, text)
            where = store.where
    except HistoryError as exc:
        raise CLIError(str(exc)) from None
    except ValueError:
        raise CLIError(f"field time: {time!r} is not an ISO 8601 time") from None
    status(f"noted on {series} at {time} in {where}")
    return EXIT_OK


def _add(args: argparse.Namespace, items: list[str]) -> int:
    from perfsuite.cli.history_add import add_records

    if not items:
        raise CLIError("usage: perfsuite history add RUN|DIR... [--db URL]")
    if len(args.metric) > 1:
        raise CLIError("history add takes one --metric")
    added, total, where = add_records(items, args.db, args.metric[0] if args.metric else None)
    status(f"added {added} of {total} rows to {where} ({total - added} were there already)")
    return EXIT_OK


ACTIONS = {"check": _check, "note": _note, "add": _add}


def run(args: argparse.Namespace) -> int:
    items = list(args.items)
    if items and items[0] in ACTIONS:
        return ACTIONS[items[0]](args, items[1:])
    return _show(args, items)
