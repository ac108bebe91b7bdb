"""Where the series of a history come from: a CSV file in Otava's layout or a store (SQLite
file or PostgreSQL URL), narrowed to some series and metrics. Shared by the command line, the
report and the Python API."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from perfsuite.history_store.csvfile import read_csv
from perfsuite.history_store.series import Series
from perfsuite.history_store.store import DEFAULT_SQLITE, HistoryError, is_postgres, open_store


def is_csv(source: str | None) -> bool:
    return bool(source) and not is_postgres(str(source)) and str(source).lower().endswith(".csv")


def load_series(
    source: str | None = None,
    series: Sequence[str] = (),
    metrics: Sequence[str] = (),
) -> tuple[str, list[Series]]:
    """(where, series): every series of `source` (a .csv file, a store path or URL; default
    the store `runs/history.sqlite`) whose name contains one of `series` and whose metric is
    one of `metrics` (all when empty). HistoryError for a metric no series has, or when
    nothing is selected."""
    if is_csv(source):
        where = str(source)
        found = read_csv(Path(str(source)))
    else:
        with open_store(source) as store:
            where = store.where
            found = store.series()
    if not found:
        raise HistoryError(f"{where}: field history_points: the history holds no points yet")
    for metric in metrics:
        if not any(s.metric == metric for s in found):
            known = ", ".join(sorted({s.metric for s in found}))
            raise HistoryError(f"{where}: field {metric}: no series has this metric ({known})")
    chosen = [
        s
        for s in found
        if (not series or any(part in s.name for part in series))
        and (not metrics or s.metric in metrics)
    ]
    if not chosen:
        raise HistoryError(f"{where}: field series: no series name contains {' or '.join(series)}")
    return where, chosen


def default_store() -> str:
    return str(DEFAULT_SQLITE)
