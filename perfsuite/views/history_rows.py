"""Rows of `perfsuite history`, shared by its text and JSON, the report's history page and
`perfsuite.history(...)`, so that they cannot disagree. The numbers come from
`perfsuite.analyzers.history` (`SeriesVerdict`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfsuite.fmt import si, table
from perfsuite.history_store.series import METRICS
from perfsuite.history_store.times import short_time

SERIES_HEADERS = ["series", "metric", "points", "latest", "label", "change points"]
CHANGE_HEADERS = ["series", "metric", "index", "time", "commit", "mean before -> after", "change"]
CHANGE_HEADERS += ["p-value", "kind", "note"]


def unit_of(metric: str) -> str:
    known = METRICS.get(metric)
    return known.unit if known else ""


def value_text(metric: str, value: float | None) -> str:
    """A value in the metric's unit (fractions as fractions: MFU 0.412)."""
    unit = unit_of(metric)
    if value is None:
        return "n/a"
    if unit in ("", "fraction"):
        return f"{value:.4g}"
    return si(value, unit)


def change_dict(change: Any) -> dict[str, Any]:
    """One change point as `--json` gives it."""
    return {
        "index": change.index,
        "time": change.time,
        "attributes": dict(change.attributes),
        "mean_before": change.mean_before,
        "mean_after": change.mean_after,
        "change_pct": change.change_pct,
        "pvalue": change.pvalue,
        "kind": change.kind,
    }


def series_dict(verdict: Any) -> dict[str, Any]:
    """One series as `perfsuite history --json` gives it (exactly these keys)."""
    s = verdict.series
    return {
        "name": s.name,
        "metric": s.metric,
        "direction": s.direction,
        "points": len(s.points),
        "change_points": [change_dict(c) for c in verdict.changes],
    }


def history_json(verdicts: Sequence[Any]) -> dict[str, Any]:
    return {"series": [series_dict(v) for v in verdicts]}


def check_json(verdicts: Sequence[Any], exit_code: int) -> dict[str, Any]:
    """`perfsuite history check --json`: each series' label and why, with its change points."""
    return {
        "exit_code": exit_code,
        "series": [
            {**series_dict(v), "label": v.label, "why": v.why, "latest": v.latest} for v in verdicts
        ],
    }


def series_rows(verdicts: Sequence[Any]) -> list[list[str]]:
    return [
        [
            v.series.name,
            v.series.metric,
            str(len(v.series.points)),
            value_text(v.series.metric, v.latest),
            v.label,
            str(len(v.changes)),
        ]
        for v in verdicts
    ]


def change_rows(verdicts: Sequence[Any], kinds: Sequence[str] = ()) -> list[list[str]]:
    """A row per change point (only those of `kinds` when given)."""
    rows = []
    for v in verdicts:
        metric = v.series.metric
        for c in v.changes:
            if kinds and c.kind not in kinds:
                continue
            rows.append(
                [
                    v.series.name,
                    metric,
                    str(c.index),
                    short_time(c.time),
                    c.attributes.get("commit", "")[:12],
                    f"{value_text(metric, c.mean_before)} -> {value_text(metric, c.mean_after)}",
                    f"{c.change_pct:+.1f}%",
                    f"{c.pvalue:.2g}",
                    c.kind,
                    c.note or "",
                ]
            )
    return rows


def history_text(verdicts: Sequence[Any]) -> str:
    """The table of series, then the table of their change points."""
    out = [table(series_rows(verdicts), SERIES_HEADERS)]
    changes = change_rows(verdicts)
    out.append("")
    out.append(table(changes, CHANGE_HEADERS) if changes else "no change points")
    return "\n".join(out)


def check_text(verdicts: Sequence[Any], regressions_only: bool) -> str:
    """`history check`: every series' label, or (regressions only) just the regressions and
    the change points behind them."""
    shown = [v for v in verdicts if v.label == "regression"] if regressions_only else verdicts
    if regressions_only and not shown:
        return "no regression"
    rows = [[v.series.name, v.series.metric, v.label, v.why] for v in shown]
    out = [table(rows, ["series", "metric", "label", "why"])]
    changes = change_rows(shown, kinds=("regression",) if regressions_only else ())
    if changes:
        out += ["", table(changes, CHANGE_HEADERS)]
    return "\n".join(out)
