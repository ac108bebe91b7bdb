"""Plotly figures of one run or several: accuracy against training time, the roofline, per-op
time, telemetry; and the layout and colours the other figures share. They draw what the
analyzers return; the only arithmetic here is geometry (where to draw a roof line across the
visible axis range, where its label goes)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import plotly.colors as pc
import plotly.graph_objects as go
import plotly.io as pio

from perfsuite import fmt
from perfsuite.analyzers.roofline.ops import rank_time, ranked_ops
from perfsuite.analyzers.roofline.roofline import Roofline
from perfsuite.analyzers.roofline.utilization import Utilization
from perfsuite.figures.op_names import RUN_STAR_PX, draw_op_names, op_size
from perfsuite.task_metrics import metric_info, target_text
from perfsuite.views.roofline_rows import own_time, run_frac

LAYOUT = {
    "template": "plotly_white",
    "margin": {"l": 70, "r": 30, "t": 50, "b": 60},
    "height": 480,
}


def roof_line(x_lo: float, x_hi: float, peak: float, bw: float) -> tuple[list[float], list[float]]:
    """Points of min(peak, x * bw) on [x_lo, x_hi]: the slope up to the ridge, then flat."""
    ridge = peak / bw
    xs = [x_lo] + ([ridge] if x_lo < ridge < x_hi else []) + [x_hi]
    return xs, [min(peak, x * bw) for x in xs]


# Ops labelled by name on the roofline chart (the largest time shares); the rest hover only.
LABELLED_OPS = 5
# A log axis with SI prefixes (1k, 1M, 1G), shared by every roofline chart.
LOG_SI_AXIS = {"type": "log", "exponentformat": "SI", "showexponent": "all"}
# One colour per roof of a math, shared by its line and its label (the template's own colours).
_COLORWAY = pio.templates[LAYOUT["template"]].layout.colorway
# One colour per compared item (a run or a group), in order, on every chart of a page, so a
# group keeps its colour from the overlay of curves to the stability strip.
ITEM_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]
FLAGGED_GREY = "#9e9e9e"  # an op above its roof: no place on the 0-100% colour scale


def item_colour(label: str) -> str:
    """The colour of a compared item (a run or a group of repeats), keyed by its label alone,
    so the same group has the same colour in every chart of the page (and across pages)."""
    return ITEM_COLORS[zlib.crc32(str(label).encode("utf-8")) % len(ITEM_COLORS)]


def time_scale(values: Sequence[float | None]) -> tuple[float, str]:
    """(scale, unit) for a time axis: seconds, ms or µs by the largest value, so ticks read
    "2 ms" rather than "0.002s"."""
    top = max((abs(v) for v in values if v is not None), default=0.0)
    if top >= 1 or top == 0:
        return 1.0, "s"
    return (1e-3, "ms") if top >= 1e-3 else (1e-6, "µs")


def _log_x(x: float) -> float:
    """Annotation x on a log axis: plotly reads it as log10 of the data value (a raw value put
    the ridge label at 10^13 and stretched the axis to 10^16)."""
    return math.log10(x)


def _log_label(fig: go.Figure, x: float, y: float, text: str, **style: Any) -> None:
    """A text label at the data point (x, y) of a log-log chart: both coordinates go through
    log10 (see _log_x)."""
    fig.add_annotation(x=_log_x(x), y=math.log10(y), showarrow=False, text=text, **style)


# The roofline keeps a fixed plot height, so a decade on its y axis has a known height in px
# and roof labels can be kept apart in data space (log10 decades). The roof labels go into the
# right margin beside the ends of their lines, where no op, op name or the ridge label can be;
# the legend goes below the plot to leave them that margin. A legend taller than the bottom
# margin (narrow pages) shrinks the plot: 314 px at a 760 px wide page, still room for 14 px
# labels 20 px apart at 360 (op_names.narrow_plot_height estimates it).
_ROOF_MARGIN = {"l": 70, "t": 50, "b": 150}
_ROOF_HEIGHT = 560
_ROOF_PLOT_PX = _ROOF_HEIGHT - _ROOF_MARGIN["t"] - _ROOF_MARGIN["b"]
_LABEL_PX = 20  # one line of label text (14 px box in Chromium) plus air
_PAD_PX = (40, 16)  # above the highest point (room for its name), below the lowest
_CHAR_PX = 7.0  # mean width of a 12 px label character: sizes the right margin


def spread_labels(heights: Sequence[float], gap: float, top: float | None = None) -> list[float]:
    """Label centres (log10) for labels whose lines end at `heights` (log10), each at least
    `gap` decades from the next and as close to its own line as that allows.

    Why: roofs a fraction of a decade apart (fp32 54 and tf32 67 TFLOP/s, a measured roof and
    its spec) put their labels on top of each other. Labels keep the order of their lines and
    move the least in total (least squares): a lone label stays on its line, two close labels
    part symmetrically about their lines' mean. With ordered centres p_k, p_k - k*gap must not
    decrease, so the answer is the isotonic fit of h_k - k*gap (pool adjacent violators); a
    `top` caps the highest centre and pushes the stack down below it."""
    order = sorted(range(len(heights)), key=lambda i: heights[i])
    blocks: list[list[float]] = []  # [sum, count] of pooled targets, in order
    for k, i in enumerate(order):
        blocks.append([heights[i] - k * gap, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    fitted = [b[0] / b[1] for b in blocks for _ in range(int(b[1]))]
    cap = None if top is None else top - (len(order) - 1) * gap
    out = [0.0] * len(heights)
    for k, i in enumerate(order):
        q = fitted[k] if cap is None else min(fitted[k], cap)
        out[i] = q + k * gap
    return out


def _y_range(ys: Sequence[float]) -> tuple[float, float]:
    """The y axis range (log10) over the plotted values, padded by _PAD_PX at both ends, so
    that one px is a known number of decades (see spread_labels)."""
    lo, hi = math.log10(min(ys)), math.log10(max(ys))
    span = max(hi - lo, 1.0)
    per_px = span / (_ROOF_PLOT_PX - sum(_PAD_PX))
    return lo - _PAD_PX[1] * per_px, lo + span + _PAD_PX[0] * per_px


def _roof_labels(
    fig: go.Figure, labels: Sequence[tuple[str, float, str]], y_range: tuple[float, float]
) -> None:
    """Each (text, y at the right end, colour) in the right margin, beside the end of its roof
    and joined to it by a short leader, spread apart by spread_labels."""
    lo, hi = y_range
    gap = _LABEL_PX * (hi - lo) / _ROOF_PLOT_PX
    heights = [math.log10(y) for _, y, _ in labels]
    for (text, _, color), h, c in zip(
        labels, heights, spread_labels(heights, gap, hi - gap / 2), strict=True
    ):
        fig.add_annotation(
            xref="paper",
            x=1,
            yref="y",
            y=h,
            text=text,
            font={"color": color},
            showarrow=True,
            arrowcolor=color,
            ax=14,
            ayref="y",
            ay=c,
            xanchor="left",
            yanchor="middle",
            standoff=0,
        )


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
    ys: list[float] = []  # every plotted y, for the axis range
    labels: list[tuple[str, float, str]] = []  # roof labels: text, y at the right end, colour
    fixed: list[tuple[float, float, str]] = []  # text on the plot: x, y of its lower left, text
    for i, (m, lab) in enumerate(per_math if bw else []):
        # one roof per math the run computed in (fp32 CUDA core, TF32 Tensor Core...)
        rx, ry = roof_line(lo, hi, lab.value, bw)
        color = _COLORWAY[i % len(_COLORWAY)]
        fig.add_trace(
            go.Scatter(
                x=rx,
                y=ry,
                mode="lines",
                line={"width": 3, "color": color},
                name=f"{m} roof ({lab.provenance}): {fmt.si(lab.value, 'FLOP/s')}",
            )
        )
        ys += ry
        labels.append((f"{m} {fmt.si(lab.value, 'FLOP/s')} ({lab.provenance})", ry[-1], color))
    if peak and bw:
        rx, ry = roof_line(lo, hi, peak, bw)
        ys += ry
        fig.add_trace(
            go.Scatter(
                x=rx,
                y=ry,
                mode="lines",
                # dashed and thinner, on top of the per-math roofs: a roof within a few % of
                # the blend (tf32 374 and blended 366 TFLOP/s) shows in its gaps and edges
                line={"color": "black", "width": 2, "dash": "dash"},
                name=f"blended roof of the run: {fmt.si(peak, 'FLOP/s')}, "
                f"{fmt.si(bw, 'byte/s')} ({run.memory_bandwidth.provenance})",
            )
        )
        # a run in one math has that math's roof as its blend: one label says it
        if not any(math.isclose(peak, lab.value, rel_tol=1e-9) for _, lab in per_math):
            text = f"blended {fmt.si(peak, 'FLOP/s')} ({run.peak_flops.provenance})"
            labels.append((text, ry[-1], "black"))
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
        # label the bandwidth slope near its left end; the slope climbs through the text and
        # ops can sit under it, so the text gets a halo of the background colour (a backdrop
        # box would hide those ops)
        x_mem = lo * 2
        text = f"memory {fmt.si(bw, 'byte/s')} ({run.memory_bandwidth.provenance})"
        fixed.append((x_mem, min(peak, x_mem * bw), text))  # op names keep clear of it
        _log_label(
            fig,
            *fixed[-1],
            xanchor="left",
            yanchor="bottom",
            font={"shadow": "auto"},
        )
    if (
        util
        and util.spec_peak
        and util.spec_bandwidth
        and (util.spec_peak != peak or util.spec_bandwidth != bw)
    ):
        sx, sy = roof_line(lo, hi, util.spec_peak, util.spec_bandwidth)
        ys += sy
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
        labels.append((f"spec {fmt.si(util.spec_peak, 'FLOP/s')}", sy[-1], "grey"))
    ys += [o.placement.achieved_flops for o in joined]
    named = {o.op for o in sorted(joined, key=lambda o: -(o.time_share or 0))[:LABELLED_OPS]}
    for flagged in (False, True):
        ops = [o for o in joined if bool(o.placement.flag) == flagged]
        if not ops:
            continue
        fig.add_trace(
            go.Scatter(
                x=[o.placement.intensity for o in ops],
                y=[o.placement.achieved_flops for o in ops],
                mode="markers",  # names are annotations: op_names.draw_op_names
                name=(
                    "ABOVE its roof: a FLOP/byte model or ceiling error"
                    if flagged
                    else "ops (size = time share)"
                ),
                marker={
                    "size": [op_size(o.time_share) for o in ops],
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
        ys.append(run.achieved_flops.value)
        fig.add_trace(
            go.Scatter(
                x=[run.intensity.value],
                y=[run.achieved_flops.value],
                mode="markers",
                marker={"symbol": "star", "size": RUN_STAR_PX, "color": "crimson"},
                name="whole run",
                hovertext=[
                    f"run: {fmt.si(run.achieved_flops.value, 'FLOP/s')}, of its roofs "
                    f"(time-weighted): {run_frac(run)}"
                ],
                hoverinfo="text",
            )
        )
    fig.update_xaxes(title="arithmetic intensity (FLOP/byte, modeled bytes)", **LOG_SI_AXIS)
    fig.update_yaxes(title="achieved FLOP/s", **LOG_SI_AXIS)
    ys = [y for y in ys if y > 0]
    width = max((len(t) for t, _, _ in labels), default=0)
    fig.update_layout(
        title=title,
        **{
            **LAYOUT,
            "height": _ROOF_HEIGHT,
            "margin": {**_ROOF_MARGIN, "r": 30 + math.ceil(_CHAR_PX * width)},
        },
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom"},
    )
    if ys:
        y_range = _y_range(ys)
        fig.update_yaxes(range=list(y_range))
        _roof_labels(fig, labels, y_range)
        if joined:
            x_range = (math.log10(lo), math.log10(hi))
            fig.update_xaxes(range=list(x_range))
            star = (run.intensity.value, run.achieved_flops.value)
            draw_op_names(fig, joined, named, star, x_range, y_range, _ROOF_PLOT_PX, fixed)
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
    fig.update_layout(title="Accuracy vs training time", **LAYOUT)
    return fig


def ops_bar_figure(res: Roofline, top: int = 20) -> go.Figure:
    """Per-op time per step, coloured by fraction of roof: the ops of the per-op table, in its
    order and with its times (perfsuite.analyzers.roofline.ops.ranked_ops: an unmodeled op by its
    own time; wrapper rows, whose time is their children's, are no bars)."""
    ops = [o for o in ranked_ops(res.ops)[0] if rank_time(o)][:top]
    times = [float(rank_time(o) or 0.0) for o in ops]
    scale, unit = time_scale(times)
    fig = go.Figure(
        go.Bar(
            x=[t / scale for t in times],
            y=[o.op for o in ops],
            orientation="h",
            marker={
                "color": [_bar_colour(o.placement.frac_of_roof, o.placement.flag) for o in ops],
                "line": {"width": 0},
            },
            hovertext=[  # an unmodeled op's bar is its own time, as the table says
                f"{o.op}: {own_time(o) or fmt.si(t, 's')} per step, "
                + (
                    "flagged >100% of its roof"
                    if o.placement.flag
                    else f"{fmt.pct(o.placement.frac_of_roof)} of roof"
                    if o.placement.frac_of_roof is not None
                    else str(o.status)
                )
                for o, t in zip(ops, times, strict=True)
            ],
            hoverinfo="text",
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
    # the colour bar of the scale, on an invisible point (a bar colour list is set per bar)
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={
                "color": [0],
                "colorscale": "RdYlGn",
                "cmin": 0,
                "cmax": 1,
                "colorbar": {"title": "of roof<br>(grey: flagged >100%)"},
                "showscale": True,
            },
            showlegend=False,
            hoverinfo="skip",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title=f"time per step ({unit})", ticksuffix=f" {unit}")
    fig.update_layout(title="Per-op time (profiled window)", **LAYOUT)
    return fig


def _bar_colour(frac: float | None, flag: Any) -> str:
    """An op's bar: its fraction of roof on the red-yellow-green scale; grey when it is
    flagged above its roof or has no fraction (never the colour of 0%)."""
    if flag or frac is None:
        return FLAGGED_GREY
    return pc.sample_colorscale("RdYlGn", [min(max(frac, 0.0), 1.0)])[0]


# Telemetry columns: (panel title with unit, value scale) in the order shown.
_TELEMETRY = {
    "cpu_util_pct": ("CPU utilization, machine-wide: every process (% of all cores)", "%"),
    "proc_cpu_util_pct": ("CPU utilization of the run's process (% of one core)", "%"),
    "rss_bytes": ("resident memory (B)", "B"),
    "gpu_util_pct": ("GPU utilization (%)", "%"),
    "gpu_sm_clock_hz": ("SM clock (Hz)", "Hz"),
    "gpu_power_w": ("GPU power (W)", "W"),
    "gpu_mem_used_bytes": ("GPU memory used (B)", "B"),
}


def _si_scale(values: Sequence[float | None]) -> tuple[float, str]:
    """The SI prefix of the largest value. Plotly's SI ticks put the prefix before the
    ticksuffix ("400M B"), so unit axes are plotted pre-scaled and labeled "400 MB"."""
    return fmt.si_prefix(max((abs(v) for v in values if v is not None), default=0.0))


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
        scale, prefix = _si_scale(ys) if unit in ("B", "Hz", "W") else (1.0, "")
        fig.add_trace(
            go.Scatter(
                x=t,
                y=[v / scale if v is not None else None for v in ys],
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
        axis: dict[str, Any] = {"exponentformat": "SI", "rangemode": "tozero"}
        if unit in ("B", "Hz", "W"):
            axis.update(exponentformat="none", ticksuffix=f" {prefix}{unit}")
        fig.update_yaxes(row=row, col=1, **axis)
    fig.update_xaxes(title="time since the run started (s)", row=len(shown), col=1)
    fig.update_layout(title="Telemetry", **{**LAYOUT, "height": 180 * len(shown) + 120})
    return fig
