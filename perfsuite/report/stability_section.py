"""Stability of repeated runs on the multi-run page: per group, the fraction of runs reaching
the target, time to accuracy with its CoV and bootstrap 95% CI, epochs to threshold and time
per epoch (statistical vs hardware variance), the olympic mean and the analyzer's warnings.

Why: DAWNBench's finding that time to accuracy is stable across runs is the reason a single
run is worth anything; a page of 5 seeds must show that spread. Numbers come from
`perfsuite.analyzers.runs.stability`; the rows are the CLI's (`perfsuite stability`), so the two
agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from perfsuite import fmt
from perfsuite.analyzers.runs.stability import GroupStability, stability, training_records
from perfsuite.figures.runs import LAYOUT, item_colour
from perfsuite.report import html as h
from perfsuite.views import stability_rows as rows


def spread_figure(groups: Sequence[GroupStability]) -> go.Figure:
    """Each run's time to accuracy as a dot per group, with the group mean and its bootstrap
    95% CI as an error bar; runs that did not reach are listed in the hover of the group."""
    fig = go.Figure()
    for g in groups:
        name = _short(g.label)
        colour = item_colour(name)  # the group id: its label in the comparison charts
        reached = [r for r in g.runs if r.reached and r.time_s is not None]
        fig.add_trace(
            go.Scatter(
                x=[r.time_s for r in reached],
                y=[name] * len(reached),
                mode="markers",
                marker={"size": 9, "color": colour, "opacity": 0.7},
                name=f"{g.label}: runs",
                text=[f"{r.run_id}: {fmt.duration(r.time_s)}" for r in reached],
                hoverinfo="text",
            )
        )
        s = g.time_to_accuracy
        if s.mean is not None and s.ci_low is not None and s.ci_high is not None:
            fig.add_trace(
                go.Scatter(
                    x=[s.mean],
                    y=[name],
                    mode="markers",
                    marker={"symbol": "diamond", "size": 13, "color": colour},
                    error_x={
                        "type": "data",
                        "symmetric": False,
                        "array": [s.ci_high - s.mean],
                        "arrayminus": [s.mean - s.ci_low],
                        "color": colour,
                        "thickness": 2,
                    },
                    name=f"{g.label}: mean, 95% CI",
                    text=[
                        f"mean {fmt.duration(s.mean)}, 95% CI [{fmt.duration(s.ci_low)}, "
                        f"{fmt.duration(s.ci_high)}], CoV {fmt.pct(s.cov)}; "
                        f"{g.n_reached}/{g.n_runs} reached"
                    ],
                    hoverinfo="text",
                )
            )
    fig.update_xaxes(title="time to accuracy (s)", rangemode="tozero")
    fig.update_yaxes(title="", automargin=True)
    fig.update_layout(
        title="Time to accuracy of each run; group mean with its 95% CI",
        **{**LAYOUT, "height": max(260, 120 + 70 * len(groups))},
        showlegend=False,
    )
    return fig


def _short(label: str) -> str:
    """The axis name of a group: its id without the '(task / model / hardware)' tail, which
    the tables below spell out."""
    return label.split(" (", 1)[0] or label


def _group_block(g: GroupStability) -> str:
    return (
        f"<h3>{h.esc(rows.headline(g))}</h3>"
        + h.table(rows.SUMMARY_HEADERS, rows.summary_rows(g), [False] + [True] * 7)
        + f"<p>{h.esc(rows.olympic_line(g))}</p>"
        + h.notes(g.warnings)
        + h.table(rows.OUTCOME_HEADERS, rows.outcome_rows(g), [False, False] + [True] * 4 + [False])
    )


def stability_section(records: Sequence[Mapping[str, Any]]) -> str:
    """HTML of the stability section, or "" when no group holds two or more training runs."""
    training, _inference_only = training_records([dict(r) for r in records])
    if not training:
        return ""
    groups = [g for g in stability(training) if g.n_runs >= 2]
    if not groups:
        return ""
    intro = (
        "<p>Runs are grouped as <code>perfsuite stability</code> groups them (group.id, else "
        "task, model, hardware and configuration). CoV is the sample standard deviation over "
        "the mean; the CI is a seeded bootstrap of the mean over the runs that reached "
        "(docs/statistics.md)."
        "</p>"
    )
    return (
        intro
        + h.figure(spread_figure(groups), "fig-stability")
        + "".join(_group_block(g) for g in groups)
    )
