"""The picture of one history series: its points over time, a rolling band, each segment's
mean between change points, the change points marked (regressions red, improvements green),
notes of known changes, and the commit and value on hover. Draws what
`perfsuite.analyzers.history.verdict` returns; no arithmetic of its own."""

from __future__ import annotations

from collections.abc import Collection

import plotly.graph_objects as go

from perfsuite.analyzers.history.verdict import SeriesVerdict, rolling_band, segment_means
from perfsuite.history_store.times import short_time
from perfsuite.views.history_rows import unit_of, value_text

_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 30, "t": 60, "b": 60},
    "height": 420,
}
KIND_COLOUR = {"regression": "#c0392b", "improvement": "#1e8449"}


def _hover(verdict: SeriesVerdict) -> list[str]:
    metric = verdict.series.metric
    lines = []
    for i, p in enumerate(verdict.series.points):
        commit = p.attributes.get("commit", "")
        extra = "".join(f"<br>{k}: {v}" for k, v in sorted(p.attributes.items()) if k != "commit")
        lines.append(
            f"#{i} {short_time(p.time)}<br>{metric}: {value_text(metric, p.value)}"
            f"<br>commit: {commit[:12] or 'n/a'}{extra}<br>{p.run}"
        )
    return lines


def _segments(fig: go.Figure, verdict: SeriesVerdict, times: list[str]) -> None:
    """Each stretch's mean between change points as a flat dashed line."""
    for a, b, mean in segment_means(verdict):
        fig.add_trace(
            go.Scatter(
                x=[times[a], times[b - 1]],
                y=[mean, mean],
                mode="lines",
                line={"color": "#555", "dash": "dash", "width": 1},
                name="mean between change points",
                legendgroup="segment",
                showlegend=a == 0,
                hoverinfo="skip",
            )
        )


def _marks(fig: go.Figure, verdict: SeriesVerdict) -> None:
    metric = verdict.series.metric
    for c in verdict.changes:
        fig.add_vline(x=c.time, line={"color": KIND_COLOUR[c.kind], "width": 2})
        label = f"{c.kind} {c.change_pct:+.1f}% (p {c.pvalue:.2g})"
        if c.note:
            label += f"<br>known: {c.note}"
        fig.add_annotation(
            x=c.time, y=1.0, yref="paper", text=label, showarrow=False, yanchor="bottom",
            font={"color": KIND_COLOUR[c.kind], "size": 11},
            hovertext=(
                f"{value_text(metric, c.mean_before)} -> {value_text(metric, c.mean_after)}, "
                f"commit {c.attributes.get('commit', 'n/a')[:12]}"
            ),
        )  # fmt: skip
    for note in verdict.series.notes:
        fig.add_vline(x=note.time, line={"color": "#7d3c98", "dash": "dot", "width": 1})
        fig.add_annotation(
            x=note.time, y=0.0, yref="paper", text=f"note: {note.text}", showarrow=False,
            yanchor="top", font={"color": "#7d3c98", "size": 10},
        )  # fmt: skip


def series_figure(verdict: SeriesVerdict, highlight: Collection[str] = ()) -> go.Figure:
    """The series over time; points whose record key is in `highlight` are drawn as stars (a
    run's own report shows where it falls)."""
    series = verdict.series
    times = [p.time for p in series.points]
    band = rolling_band(series.values)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(x=times, y=band.high, mode="lines", line={"width": 0}, hoverinfo="skip",
                   showlegend=False)
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=times, y=band.low, mode="lines", line={"width": 0}, fill="tonexty",
            fillcolor="rgba(52, 152, 219, 0.18)", hoverinfo="skip",
            name=f"rolling mean +- 1 sd ({band.width} points)",
        )
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=times, y=series.values, mode="lines+markers", name=series.metric,
            line={"color": "#2471a3", "width": 1.2}, marker={"size": 6},
            text=_hover(verdict), hoverinfo="text",
        )
    )  # fmt: skip
    if verdict.changes:
        _segments(fig, verdict, times)
    mine = [i for i, p in enumerate(series.points) if p.key and p.key in highlight]
    if mine:
        fig.add_trace(
            go.Scatter(
                x=[times[i] for i in mine], y=[series.values[i] for i in mine], mode="markers",
                marker={"symbol": "star", "size": 16, "color": "#f39c12"}, name="this run",
                hoverinfo="skip",
            )
        )  # fmt: skip
    _marks(fig, verdict)
    unit = unit_of(series.metric)
    fig.update_layout(
        **_LAYOUT,
        title={"text": f"{series.metric}: {verdict.label}", "font": {"size": 14}},
        xaxis_title="time (UTC)",
        yaxis_title=f"{series.metric} ({unit})" if unit else series.metric,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def figure_id(verdict: SeriesVerdict, n: int) -> str:
    return f"history-{n}-{verdict.series.metric}"
