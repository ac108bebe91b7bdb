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

_LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 30, "t": 50, "b": 60},
    "height": 480,
}


def _roof(x_lo: float, x_hi: float, peak: float, bw: float) -> tuple[list[float], list[float]]:
    """Points of min(peak, x * bw) on [x_lo, x_hi]: the slope up to the ridge, then flat."""
    ridge = peak / bw
    xs = [x_lo] + ([ridge] if x_lo < ridge < x_hi else []) + [x_hi]
    return xs, [min(peak, x * bw) for x in xs]


# Ops labelled by name on the roofline chart (the largest time shares); the rest hover only.
LABELLED_OPS = 5
_SI_AXIS = {"type": "log", "exponentformat": "SI", "showexponent": "all"}
# One colour per compared item (a run or a group), in order, on every chart of a page, so a
# group keeps its colour from the overlay of curves to the stability strip.
ITEM_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]


def _log_x(x: float) -> float:
    """Annotation x on a log axis: plotly reads it as log10 of the data value (a raw value put
    the ridge label at 10^13 and stretched the axis to 10^16). Labels at the axis end are
    placed a little inside it, since plotly hides an annotation outside the range."""
    return math.log10(x)


def _log_label(
    fig: go.Figure, x: float, y: float, text: str, inset: float = 0.0, **style: Any
) -> None:
    """A text label at the data point (x, y) of a log-log chart: both coordinates go through
    log10 (see _log_x); `inset` moves it left, in decades (labels at the axis end)."""
    fig.add_annotation(x=_log_x(x) - inset, y=math.log10(y), showarrow=False, text=text, **style)


def roofline_figure(
    res: Roofline, util: Utilization | None = None, title: str = "Roofline"
) -> go.Figure:
    """Log-log roofline: roofs (measured and, when different, spec) each labelled with its
    value, the ridge, ops (the largest labelled by name; those above their roof drawn apart as
    flagged, never as the best op), and the whole run."""
    run = res.run
    peak, bw = run.peak_flops.value, run.memory_bandwidth.value
    joined = [
        o
        for o in res.ops
        if o.status == "joined" and o.placement.intensity and o.placement.achieved_flops
    ]
    xs = [o.placement.intensity for o in joined] + [run.intensity.value or 0]
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
        fig.add_trace(
            go.Scatter(
                x=rx,
                y=ry,
                mode="lines",
                line={"width": 2},
                name=f"{m} roof ({lab.provenance}): {fmt.si(lab.value, 'FLOP/s')}",
            )
        )
        text = f"{m} {fmt.si(lab.value, 'FLOP/s')} ({lab.provenance})"
        _log_label(fig, hi, lab.value, text, 0.05, xanchor="right", yanchor="bottom")
    if peak and bw:
        rx, ry = _roof(lo, hi, peak, bw)
        fig.add_trace(
            go.Scatter(
                x=rx,
                y=ry,
                mode="lines",
                line={"color": "black", "width": 3},
                name=f"blended roof of the run: {fmt.si(peak, 'FLOP/s')}, "
                f"{fmt.si(bw, 'byte/s')} ({run.memory_bandwidth.provenance})",
            )
        )
        ridge = peak / bw
        fig.add_vline(x=ridge, line_dash="dot", line_color="grey")
        fig.add_annotation(
            x=_log_x(ridge),
            y=1,
            yref="paper",
            yanchor="bottom",
            showarrow=False,
            text=f"ridge {ridge:.3g} FLOP/byte",
        )
        x_mem = lo * 2  # label the bandwidth slope near its left end
        text = f"memory {fmt.si(bw, 'byte/s')} ({run.memory_bandwidth.provenance})"
        _log_label(
            fig, x_mem, min(peak, x_mem * bw), text, xanchor="left", yanchor="bottom", textangle=0
        )
    if (
        util
        and util.spec_peak
        and util.spec_bandwidth
        and (util.spec_peak != peak or util.spec_bandwidth != bw)
    ):
        sx, sy = _roof(lo, hi, util.spec_peak, util.spec_bandwidth)
        fig.add_trace(
            go.Scatter(
                x=sx,
                y=sy,
                mode="lines",
                line={"color": "grey", "dash": "dash"},
                name=f"spec roof (blended): {fmt.si(util.spec_peak, 'FLOP/s')}, "
                f"{fmt.si(util.spec_bandwidth, 'byte/s')}",
            )
        )
        text = f"spec {fmt.si(util.spec_peak, 'FLOP/s')}"
        _log_label(
            fig,
            hi,
            util.spec_peak,
            text,
            0.05,
            xanchor="right",
            yanchor="top",
            font={"color": "grey"},
        )
    named = {o.op for o in sorted(joined, key=lambda o: -(o.time_share or 0))[:LABELLED_OPS]}
    for flagged in (False, True):
        ops = [o for o in joined if bool(o.placement.flag) == flagged]
        if not ops:
            continue
        shares = [o.time_share or 0.0 for o in ops]
        fig.add_trace(
            go.Scatter(
                x=[o.placement.intensity for o in ops],
                y=[o.placement.achieved_flops for o in ops],
                mode="markers+text",
                textposition="top center",
                text=[o.op if o.op in named or flagged else "" for o in ops],
                name=(
                    "ABOVE its roof: a FLOP/byte model or ceiling error"
                    if flagged
                    else "ops (size = time share)"
                ),
                marker={
                    "size": [8 + 50 * math.sqrt(max(sh, 0.0)) for sh in shares],
                    "opacity": 0.75,
                    **(
                        {"symbol": "x", "color": "crimson", "line": {"width": 1}}
                        if flagged
                        else {"color": "#1f77b4"}
                    ),
                },
                hovertext=[
                    f"{o.op}<br>time {fmt.si(o.time_s, 's')} ({fmt.pct(o.time_share)})<br>"
                    + (
                        f"ABOVE ITS ROOF ({o.placement.over_roof:.3g}x): {o.placement.flag}"
                        if flagged
                        else f"{fmt.pct(o.placement.frac_of_roof)} of its {o.placement.math} roof"
                    )
                    + f", {o.placement.bound}-bound"
                    for o in ops
                ],
                hoverinfo="text",
            )
        )
    if run.intensity.value and run.achieved_flops.value:
        fig.add_trace(
            go.Scatter(
                x=[run.intensity.value],
                y=[run.achieved_flops.value],
                mode="markers",
                marker={"symbol": "star", "size": 18, "color": "crimson"},
                name="whole run",
                hovertext=[
                    f"run: {fmt.si(run.achieved_flops.value, 'FLOP/s')}, "
                    + (
                        "FLAGGED above its roofs"
                        if run.flag
                        else f"{fmt.pct(run.frac_of_roof)} of its roofs (time-weighted)"
                    )
                ],
                hoverinfo="text",
            )
        )
    fig.update_xaxes(title="arithmetic intensity (FLOP/byte, modeled bytes)", **_SI_AXIS)
    fig.update_yaxes(title="achieved FLOP/s", **_SI_AXIS)
    fig.update_layout(title=title, **_LAYOUT)
    return fig


def curves_figure(curves: Sequence[dict[str, Any]], metric: str) -> go.Figure:
    """Accuracy vs cumulative training time, one line per run, threshold lines dashed."""
    fig = go.Figure()
    thresholds = set()
    for c in curves:
        fig.add_trace(
            go.Scatter(x=c["time_s"], y=c["values"], mode="lines+markers", name=c["label"])
        )
        if c.get("threshold") is not None:
            thresholds.add(c["threshold"])
    for t in sorted(thresholds):
        fig.add_hline(
            y=t,
            line_dash="dash",
            line_color="crimson",
            annotation_text=f"target {target_text(metric, t)}",
        )
    fig.update_xaxes(title="training time (s)")
    fig.update_yaxes(title=f"{metric_info(metric).label} (fraction)")
    fig.update_layout(title="Accuracy vs training time", **_LAYOUT)
    return fig


def ops_bar_figure(res: Roofline, top: int = 20) -> go.Figure:
    """Per-op time per step, coloured by fraction of roof."""
    ops = [o for o in res.ops if o.time_s][:top]
    fig = go.Figure(
        go.Bar(
            x=[o.time_s for o in ops],
            y=[o.op for o in ops],
            orientation="h",
            marker={
                "color": [
                    o.placement.frac_of_roof if o.placement.frac_of_roof is not None else -0.1
                    for o in ops
                ],
                "colorscale": "RdYlGn",
                "cmin": 0,
                "cmax": 1,
                "colorbar": {"title": "of roof"},
            },
            text=[
                "FLAG >100% of roof"
                if o.placement.flag
                else fmt.pct(o.placement.frac_of_roof)
                if o.placement.frac_of_roof is not None
                else o.status
                for o in ops
            ],
            textposition="auto",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="time per step", ticksuffix="s", exponentformat="SI")
    fig.update_layout(title="Per-op time (profiled window)", **_LAYOUT)
    return fig


# Telemetry columns: (panel title with unit, value scale) in the order shown.
_TELEMETRY = {
    "cpu_util_pct": ("CPU utilization, system-wide (% of all cores)", "%"),
    "rss_bytes": ("resident memory (B)", "B"),
    "gpu_util_pct": ("GPU utilization (%)", "%"),
    "gpu_sm_clock_hz": ("SM clock (Hz)", "Hz"),
    "gpu_power_w": ("GPU power (W)", "W"),
    "gpu_mem_used_bytes": ("GPU memory used (B)", "B"),
}


def telemetry_figure(columns: dict[str, list[float | None]]) -> go.Figure:
    """Telemetry time series, one panel per quantity with its own axis and unit (CPU % and
    RSS bytes on one axis flattened the CPU line to zero)."""
    from plotly.subplots import make_subplots

    t = columns.get("t_s") or []
    shown = [
        (name, ys)
        for name, ys in columns.items()
        if name != "t_s" and any(v is not None for v in ys)
    ]
    if not shown:
        return go.Figure()
    fig = make_subplots(
        rows=len(shown),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=[_TELEMETRY.get(n, (n, ""))[0] for n, _ in shown],
    )
    for row, (name, ys) in enumerate(shown, start=1):
        unit = _TELEMETRY.get(name, (name, ""))[1]
        fig.add_trace(
            go.Scatter(
                x=t,
                y=ys,
                mode="lines",
                name=name,
                showlegend=False,
                hovertext=[
                    fmt.si(v, unit) if unit != "%" else fmt.pct(v / 100 if v is not None else None)
                    for v in ys
                ],
                hoverinfo="x+text",
            ),
            row=row,
            col=1,
        )
        axis = {"exponentformat": "SI", "rangemode": "tozero"}
        if unit in ("B", "Hz", "W"):
            axis["ticksuffix"] = f" {unit}"
        fig.update_yaxes(row=row, col=1, **axis)
    fig.update_xaxes(title="time since the run started (s)", row=len(shown), col=1)
    fig.update_layout(title="Telemetry", **{**_LAYOUT, "height": 180 * len(shown) + 120})
    return fig
