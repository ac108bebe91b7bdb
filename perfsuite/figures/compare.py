"""Plotly figures of a comparison: every run's curve on one chart, coloured per item, and every
run's roofline position on one roofline. They draw what `perfsuite.analyzers.runs.compare` and the
record hold; the only arithmetic is geometry (where a roof line crosses the visible range)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from perfsuite import fmt
from perfsuite.analyzers.runs.compare import RunValues
from perfsuite.figures.runs import LOG_SI_AXIS, item_colour, roof_line  # one roof geometry, axes
from perfsuite.views.roofline_rows import of_roof_cell

_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 30, "t": 50, "b": 60},
    "height": 520,
}


def overlay_figure(
    curves: Sequence[Mapping[str, Any]], items: Sequence[str], metric: str
) -> go.Figure:
    """Accuracy vs training time of every run on one chart: one colour per item (a run or a
    group of repeats), the threshold dashed, the time to accuracy of each run marked."""
    fig = go.Figure()
    colour = {label: item_colour(label) for label in items}
    thresholds = set()
    for c in curves:
        first = c["item"] not in {t.legendgroup for t in fig.data}
        fig.add_trace(
            go.Scatter(
                x=c["time_s"],
                y=c["values"],
                mode="lines+markers",
                name=str(c["item"]),
                legendgroup=str(c["item"]),
                showlegend=first,
                line={"color": colour[c["item"]], "width": 1.5},
                marker={"size": 5},
                text=[f"{c['label']}<br>{fmt.duration(t)}" for t in c["time_s"]],
                hoverinfo="text+y",
            )
        )
        if c.get("tta_s") is not None:
            fig.add_trace(
                go.Scatter(
                    x=[c["tta_s"]],
                    y=[c["tta_value"]],
                    mode="markers",
                    marker={"symbol": "star", "size": 12, "color": colour[c["item"]]},
                    legendgroup=str(c["item"]),
                    showlegend=False,
                    text=[f"{c['label']}: reached in {fmt.duration(c['tta_s'])}"],
                    hoverinfo="text",
                )
            )
        if c.get("threshold") is not None:
            thresholds.add(c["threshold"])
    for t in sorted(thresholds):
        fig.add_hline(y=t, line_dash="dash", line_color="grey", annotation_text=f"threshold {t:g}")
    fig.update_xaxes(title="training time (s)")
    fig.update_yaxes(title=f"{metric} (fraction)")
    fig.update_layout(
        title="Accuracy vs training time, every run (star: time to accuracy)", **_LAYOUT
    )
    return fig


def positions_figure(runs: Sequence[RunValues]) -> go.Figure:
    """Each run's whole-run point (intensity, achieved FLOP/s) on a log-log roofline, with
    the roof of each hardware among the runs (its first run's roofs): a point is read against
    the roof of the machine it ran on."""
    fig = go.Figure()
    pts = [r for r in runs if r.intensity_flop_per_byte and r.achieved_flop_per_s]
    items = list(dict.fromkeys(r.item for r in runs))
    colour = {label: item_colour(label) for label in items}
    roofs: dict[str, tuple[float, float]] = {}
    for r in runs:
        if r.peak_flops and r.memory_bandwidth:
            roofs.setdefault(r.hardware or "unknown hardware", (r.peak_flops, r.memory_bandwidth))
    xs = [r.intensity_flop_per_byte for r in pts] + [p / b for p, b in roofs.values()]
    dashes = ("solid", "dash", "dot", "dashdot")
    for i, (hw, (peak, bw)) in enumerate(roofs.items()):
        lo = 10 ** math.floor(math.log10(min(xs) / 4))
        hi = 10 ** math.ceil(math.log10(max(xs) * 4))
        rx, ry = roof_line(lo, hi, peak, bw)
        fig.add_trace(
            go.Scatter(
                x=rx,
                y=ry,
                mode="lines",
                line={"color": "black", "width": 2, "dash": dashes[i % len(dashes)]},
                name=f"roof of {hw}: {fmt.si(peak, 'FLOP/s')}, {fmt.si(bw, 'byte/s')}",
            )
        )
    for label in items:
        mine = [r for r in pts if r.item == label]
        if not mine:
            continue
        fig.add_trace(
            go.Scatter(
                x=[r.intensity_flop_per_byte for r in mine],
                y=[r.achieved_flop_per_s for r in mine],
                mode="markers",
                name=str(label),
                marker={"size": 11, "color": colour[label], "opacity": 0.8},
                text=[
                    f"{r.run_id} ({r.framework})<br>{fmt.si(r.achieved_flop_per_s, 'FLOP/s')}"
                    f", {r.bound}-bound, of its roofs: {of_roof_cell(r)}"
                    for r in mine
                ],
                hoverinfo="text",
            )
        )
    fig.update_xaxes(title="arithmetic intensity (FLOP/byte, modeled bytes)", **LOG_SI_AXIS)
    fig.update_yaxes(title="achieved FLOP/s", **LOG_SI_AXIS)
    fig.update_layout(title="Roofline positions, every run", **_LAYOUT)
    return fig
