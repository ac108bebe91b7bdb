"""Plotly figures of a study: both speed-ups per configuration, DNC marked. They draw what
`perfsuite.analyzers.runs.study` returns; nothing is computed here."""

from __future__ import annotations

import plotly.graph_objects as go

from perfsuite.analyzers.runs.study import StudyResult

_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 30, "t": 50, "b": 90},
    "height": 460,
}


def speedup_figure(result: StudyResult) -> go.Figure:
    """Grouped bars: time-to-accuracy speed-up beside throughput speed-up, 1x dashed; a
    configuration that did not converge gets no TTA bar but a "DNC" mark at its place."""
    names = [c.name for c in result.configs]
    fig = go.Figure()
    for label, values in (
        ("time-to-accuracy speed-up", [c.tta_speedup for c in result.configs]),
        ("throughput speed-up", [c.throughput_speedup for c in result.configs]),
    ):
        text = [f"{v:.2f}x" if v is not None else "" for v in values]
        fig.add_trace(go.Bar(x=names, y=values, name=label, text=text, textposition="outside"))
    if result.kind == "scaling" and result.configs:
        ref = result.configs[0].nproc
        fig.add_trace(
            go.Scatter(
                x=names,
                y=[c.nproc / ref for c in result.configs],
                mode="lines+markers",
                line={"dash": "dot", "color": "black"},
                name="linear scaling (processes / reference processes)",
            )
        )
    dnc = [c.name for c in result.configs if c.status == "DNC"]
    if dnc:
        fig.add_trace(
            go.Scatter(
                x=dnc,
                y=[0] * len(dnc),
                mode="markers+text",
                text=["DNC"] * len(dnc),
                textposition="top center",
                marker={"symbol": "x", "size": 14, "color": "crimson"},
                name="did not converge (no time to accuracy)",
            )
        )
    fig.add_hline(
        y=1.0, line_dash="dash", line_color="grey", annotation_text=f"reference: {result.reference}"
    )
    fig.update_yaxes(title="speed-up vs reference (x)", rangemode="tozero")
    fig.update_layout(title="Time-to-accuracy vs throughput speed-up", barmode="group", **_LAYOUT)
    return fig
