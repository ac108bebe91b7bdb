"""`perfsuite.history(URL_or_CSV)`: a performance history as DataFrames, holding the numbers
`perfsuite history` prints (the same rows: `perfsuite.views.history_rows`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from perfsuite.analyzers.history.verdict import SeriesVerdict, Settings, judge
from perfsuite.history_store.sources import load_series
from perfsuite.views.history_rows import change_dict


@dataclass(frozen=True)
class History:
    """A history's tables: `points` (a row per point: series, metric, direction, index,
    time, value, commit, run, attributes), `change_points` (a row per change point: the
    fields of `perfsuite history --json` with the series, metric and any note) and `series`
    (a row per series: points, latest value, label of its newest points and why)."""

    where: str
    points: pd.DataFrame
    change_points: pd.DataFrame
    series: pd.DataFrame
    verdicts: list[SeriesVerdict]


def _points(verdicts: Sequence[SeriesVerdict]) -> pd.DataFrame:
    rows = [
        {
            "series": v.series.name,
            "metric": v.series.metric,
            "direction": v.series.direction,
            "index": i,
            "time": pd.Timestamp(p.time),
            "value": p.value,
            "commit": p.attributes.get("commit"),
            "run": p.run,
            "attributes": dict(p.attributes),
        }
        for v in verdicts
        for i, p in enumerate(v.series.points)
    ]
    columns = ["series", "metric", "direction", "index", "time", "value", "commit", "run"]
    return pd.DataFrame(rows, columns=[*columns, "attributes"])


def _changes(verdicts: Sequence[SeriesVerdict]) -> pd.DataFrame:
    rows = [
        {"series": v.series.name, "metric": v.series.metric, **change_dict(c), "note": c.note}
        for v in verdicts
        for c in v.changes
    ]
    columns = ["series", "metric", "index", "time", "attributes", "mean_before", "mean_after"]
    columns += ["change_pct", "pvalue", "kind", "note"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["time"] = pd.to_datetime(frame["time"], utc=True)
    return frame


def _series(verdicts: Sequence[SeriesVerdict]) -> pd.DataFrame:
    rows = [
        {
            "name": v.series.name,
            "metric": v.series.metric,
            "direction": v.series.direction,
            "points": len(v.series.points),
            "latest": v.latest,
            "label": v.label,
            "why": v.why,
        }
        for v in verdicts
    ]
    return pd.DataFrame(
        rows, columns=["name", "metric", "direction", "points", "latest", "label", "why"]
    )


def history(
    source: str | None = None,
    series: Sequence[str] = (),
    metrics: Sequence[str] = (),
    settings: Settings | None = None,
) -> History:
    """The history of `source` (a CSV file in Otava's layout, a SQLite store's path or
    `sqlite:///` URL, a `postgresql://` URL; default runs/history.sqlite), narrowed to series
    whose name contains one of `series` and to `metrics`, judged with `settings` (Otava's
    defaults: window 50, p 0.001, minimum magnitude 0)."""
    where, found = load_series(source, series, metrics)
    verdicts = [judge(s, settings) for s in found]
    return History(where, _points(verdicts), _changes(verdicts), _series(verdicts), verdicts)
