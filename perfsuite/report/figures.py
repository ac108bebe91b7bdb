"""Plotly figures. They draw what the analyzers return; the only arithmetic here is geometry
(where to draw a roof line across the visible axis range)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from analyzers.roofline import Roofline
from analyzers.tasks import metric_info, target_text
from analyzers.utilization import Utilization
from perfsuite import fmt

_LAYOUT = {"template": "plotly_white", "margin": {"l": 70, "r": 30, "t": 50, "b": 60},
           "height": 480}


def _roof(x_lo: float, x_hi: float, peak: float, bw: float) -> tuple[list[float], list[float]]:
    """Points of min(peak, x * bw) on [x_lo, x_hi]: the slope up to the ridge, then flat."""
    ridge = peak / bw
    xs = [x_lo] + ([ridge] if x_lo < ridge < x_hi else []) + [x_hi]
    return xs, [min(peak, x * bw) for x in xs]


def roofline_figure(res: Roofline, util: Utilization | None = None,
                    title: str = "Roofline") -> go.Figure:
    """Log-log roofline: roofs (measured and, when different, spec), ridge, ops, the run."""
    run = res.run
    peak, bw = run.peak_flops.value, run.memory_bandwidth.value
    ops = [o for o in res.ops if o.status == "joined" and o.placement.intensity
           and o.placement.achieved_flops]
    xs = [o.placement.intensity for o in ops] + [run.intensity.value or 0]
    xs = [x for x in xs if x and x > 0]
    per_math = [(m, lab) for m, lab in run.roofs_used.items() if m != "memory" and lab.value]
    if peak and bw:
        xs.append(peak / bw)
    xs += [lab.value / bw for _, lab in per_math if bw]
    lo = 10 ** math.floor(math.log10(min(xs) / 4)) if xs else 1e-2
    hi = 10 ** math.ceil(math.log10(max(xs) * 4)) if xs else 1e3
    fig = go.Figure()
    for m, lab in per_math if bw else []:
        # one roof per math the run computed in (fp32 CUDA core, TF32 Tensor Core...)
        rx, ry = _roof(lo, hi, lab.value, bw)
        fig.add_trace(go.Scatter(
            x=rx, y=ry, mode="lines", line={"width": 2},
            name=f"{m} roof ({lab.provenance}): {fmt.si(lab.value, 'FLOP/s')}"))
    if peak and bw:
        rx, ry = _roof(lo, hi, peak, bw)
        fig.add_trace(go.Scatter(
            x=rx, y=ry, mode="lines", line={"color": "black", "width": 3},
            name=f"blended roof of the run: {fmt.si(peak, 'FLOP/s')}, "
                 f"{fmt.si(bw, 'byte/s')} ({run.memory_bandwidth.provenance})"))
        fig.add_vline(x=peak / bw, line_dash="dot", line_color="grey",
                      annotation_text=f"ridge {peak / bw:.3g} FLOP/byte")
    if util and util.spec_peak and util.spec_bandwidth and (
            util.spec_peak != peak or util.spec_bandwidth != bw):
        sx, sy = _roof(lo, hi, util.spec_peak, util.spec_bandwidth)
        fig.add_trace(go.Scatter(
            x=sx, y=sy, mode="lines", line={"color": "grey", "dash": "dash"},
            name=f"spec roof (blended): {fmt.si(util.spec_peak, 'FLOP/s')}, "
                 f"{fmt.si(util.spec_bandwidth, 'byte/s')}"))
    if ops:
        shares = [o.time_share or 0.0 for o in ops]
        fig.add_trace(go.Scatter(
            x=[o.placement.intensity for o in ops], y=[o.placement.achieved_flops for o in ops],
            mode="markers", name="ops (size = time share)",
            marker={"size": [8 + 50 * math.sqrt(max(s, 0.0)) for s in shares], "opacity": 0.7},
            text=[f"{o.op}<br>time {fmt.si(o.time_s, 's')} ({fmt.pct(o.time_share)})<br>"
                  + ("ABOVE ITS ROOF: a model or ceiling error"
                     if o.placement.flag else f"{fmt.pct(o.placement.frac_of_roof)} of its "
                     f"{o.placement.math} roof")
                  + f", {o.placement.bound}-bound"
                  for o in ops],
            hoverinfo="text"))
    if run.intensity.value and run.achieved_flops.value:
        fig.add_trace(go.Scatter(
            x=[run.intensity.value], y=[run.achieved_flops.value], mode="markers",
            marker={"symbol": "star", "size": 18, "color": "crimson"}, name="whole run",
            text=[f"run: {fmt.si(run.achieved_flops.value, 'FLOP/s')}, "
                  + ("FLAGGED above its roofs" if run.flag else
                     f"{fmt.pct(run.frac_of_roof)} of its roofs (time-weighted)")],
            hoverinfo="text"))
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP/byte, modeled bytes)")
    fig.update_yaxes(type="log", title="achieved FLOP/s")
    fig.update_layout(title=title, **_LAYOUT)
    return fig


def curves_figure(curves: Sequence[dict[str, Any]], metric: str) -> go.Figure:
    """Accuracy vs cumulative training time, one line per run, threshold lines dashed."""
    fig = go.Figure()
    thresholds = set()
    for c in curves:
        fig.add_trace(go.Scatter(x=c["time_s"], y=c["values"], mode="lines+markers",
                                 name=c["label"]))
        if c.get("threshold") is not None:
            thresholds.add(c["threshold"])
    for t in sorted(thresholds):
        fig.add_hline(y=t, line_dash="dash", line_color="crimson",
                      annotation_text=f"target {target_text(metric, t)}")
    fig.update_xaxes(title="training time (s)")
    fig.update_yaxes(title=f"{metric_info(metric).label} (fraction)")
    fig.update_layout(title="Accuracy vs training time", **_LAYOUT)
    return fig


def ops_bar_figure(res: Roofline, top: int = 20) -> go.Figure:
    """Per-op time per step, coloured by fraction of roof."""
    ops = [o for o in res.ops if o.time_s][:top]
    fig = go.Figure(go.Bar(
        x=[o.time_s for o in ops], y=[o.op for o in ops], orientation="h",
        marker={"color": [o.placement.frac_of_roof if o.placement.frac_of_roof is not None
                          else -0.1 for o in ops],
                "colorscale": "RdYlGn", "cmin": 0, "cmax": 1,
                "colorbar": {"title": "of roof"}},
        text=[fmt.pct(o.placement.frac_of_roof) if o.placement.frac_of_roof is not None
              else o.status for o in ops], textposition="auto"))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="time per step (s)")
    fig.update_layout(title="Per-op time (profiled window)", **_LAYOUT)
    return fig


def telemetry_figure(columns: dict[str, list[float | None]]) -> go.Figure:
    """Telemetry time series, one trace per non-empty column, on its own y axis scale."""
    fig = go.Figure()
    t = columns.get("t_s") or []
    for name, ys in columns.items():
        if name == "t_s" or not any(v is not None for v in ys):
            continue
        fig.add_trace(go.Scatter(x=t, y=ys, mode="lines", name=name,
                                 visible=True if name.endswith("pct") else "legendonly"))
    fig.update_xaxes(title="time (s)")
    fig.update_layout(title="Telemetry (click legend entries to show other series)", **_LAYOUT)
    return fig
