"""`perfsuite history add` and `perfsuite run --history`: records in, rows into the store.

Every record is loaded and turned into rows before the store is touched, and the rows go in
as one transaction: a bad record, a missing metric or a failed write leaves the store as it
was."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from perfsuite.cli.common import CLIError


def add_history_flag(parser: argparse.ArgumentParser, help_text: str) -> None:
    """`--history [URL]`: None when absent, "" alone (the default store), else the URL."""
    parser.add_argument(
        "--history", nargs="?", const="", default=None, metavar="URL", help=help_text
    )


def add_records(
    paths: Sequence[str], db: str | None, metric: str | None = None
) -> tuple[int, int, str]:
    """(rows added, rows offered, store) for the records under `paths`."""
    from perfsuite.analyzers.history.records import MissingMetric, rows_of
    from perfsuite.history_store.store import HistoryError, open_store
    from perfsuite.pricing import PriceError, load_prices
    from perfsuite.record import find_records, load_record

    files = list(find_records(paths))
    if not files:
        raise CLIError(f"no run.json found under {' '.join(paths)}")
    try:  # as `perfsuite cost` prices: the built-in table and $PERFSUITE_PRICES
        prices = load_prices()
    except PriceError as exc:
        raise CLIError(str(exc)) from None
    rows = []
    for path in files:
        record = load_record(path)
        try:
            rows += rows_of(record, metric, prices)
        except MissingMetric as exc:
            raise CLIError(f"{path}: {exc}") from None
    try:
        with open_store(db, create=True) as store:
            added = store.add(rows)
            return added, len(rows), store.where
    except HistoryError as exc:
        raise CLIError(str(exc)) from None
