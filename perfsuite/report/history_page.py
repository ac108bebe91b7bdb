"""The history page of the report (`perfsuite report --history [URL]`) and a run's own
History section: one chart per series and metric, the change points marked, and the tables of
`perfsuite history` (shared rows: `perfsuite.views.history_rows`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite.analyzers.history.records import record_key
from perfsuite.figures.history import series_figure
from perfsuite.report import html as h
from perfsuite.views.history_rows import (
    CHANGE_HEADERS,
    SERIES_HEADERS,
    change_rows,
    series_rows,
)

SETTINGS_NOTE = (
    "Change points: E-divisive means on sliding windows of {window} points, merged by a "
    "Student t-test at p < {max_pvalue:g} with a relative change above {min_magnitude:g}, "
    "as Apache Otava 0.8 computes them. Labels of the newest points as PyTorch HUD's: a "
    "regression needs {consecutive} points after its change point."
)


def _settings_note(verdicts: Sequence[Any]) -> str:
    if not verdicts:
        return ""
    return h.notes([SETTINGS_NOTE.format(**verdicts[0].settings.__dict__)])


def _charts(verdicts: Sequence[Any], highlight: Sequence[str] = ()) -> str:
    blocks = []
    for n, v in enumerate(verdicts):
        fig = series_figure(v, highlight)
        blocks.append(
            f"<h3>{h.esc(v.series.name)}: {h.esc(v.series.metric)}</h3>"
            f"<p>{h.esc(v.label)}: {h.esc(v.why)}</p>"
            + h.figure(fig, f"history-{n}-{v.series.metric}")
        )
    return "".join(blocks)


def _tables(verdicts: Sequence[Any]) -> str:
    changes = change_rows(verdicts)
    return h.table(SERIES_HEADERS, series_rows(verdicts)) + (
        h.table(CHANGE_HEADERS, changes) if changes else "<p>No change points.</p>"
    )


def history_page(verdicts: Sequence[Any], where: str) -> str:
    """The whole page: the series table and change points, then a chart per series."""
    sections = [
        (
            "history-summary",
            "Series and change points",
            _settings_note(verdicts) + _tables(verdicts),
        ),
        ("history-charts", "Series over time", _charts(verdicts)),
    ]
    return h.page(
        f"perfsuite history: {where}",
        sections,
        "Each point is one run's measured value; the band is the rolling mean +- one standard "
        "deviation; dashed lines are the means between change points.",
    )


def history_section(verdicts: Sequence[Any], records: Sequence[Mapping[str, Any]]) -> str:
    """Where each run of the report falls in its series (its points drawn as stars)."""
    if not verdicts:
        return "<p>No series of the history holds these runs.</p>"
    keys = [record_key(r) for r in records]
    return _settings_note(verdicts) + _tables(verdicts) + _charts(verdicts, keys)
