"""Op names on the roofline chart, as annotations beside their markers (or joined to them by a
leader line) at the spots label_place chooses (trace text put every name above its marker, on
top of its neighbours')."""

from __future__ import annotations

import math
from collections.abc import Sequence

import plotly.graph_objects as go

from perfsuite.analyzers.roofline.results import OpRoofline
from perfsuite.figures.label_place import DIRECTIONS, place_labels, text_size

# Op names are placed in px by label_place, so px per decade must be known on both axes. The
# page is responsive: placement assumes the narrowest page the report supports, 760 px wide,
# where the figure's div is 697 px (measured in Chromium, scrollbar included); a wider page
# only moves markers apart, never closer, and names stay clear of the plot's edges. There the
# legend below the plot puts each entry on a row of its own, and rows beyond what the bottom
# margin holds take their height off the plot (_LEGEND_ROW_PX each beyond _LEGEND_FREE_ROWS).
NARROW_DIV_PX = 697
_LEGEND_ROW_PX = 16
_LEGEND_FREE_ROWS = 4
_OP_SIZE = (8, 50)  # op marker diameter in px: 8 + 50 * sqrt(time share)
RUN_STAR_PX = 18


def op_size(share: float | None) -> float:
    """Marker diameter in px of an op with this time share (area grows with the share)."""
    return _OP_SIZE[0] + _OP_SIZE[1] * math.sqrt(max(share or 0.0, 0.0))


def narrow_plot_height(fig: go.Figure, plot_h: float) -> float:
    """The plot's height in px on the narrowest page: `plot_h` less the legend rows beyond
    what the bottom margin holds, counting one more row for the flagged ops' names that may
    find no room (they join their legend entry on a line of their own)."""
    rows = sum(1 + (d.name or "").count("<br>") for d in fig.data if d.showlegend is not False)
    rows += any((d.name or "").startswith("ABOVE") for d in fig.data)
    return plot_h - _LEGEND_ROW_PX * max(0, rows - _LEGEND_FREE_ROWS)


# Annotation anchors of a name at each spot label_place can choose, by its direction.
_XANCHOR = {-1: "right", 0: "center", 1: "left"}
_YANCHOR = {-1: "top", 0: "middle", 1: "bottom"}


def draw_op_names(
    fig: go.Figure,
    ops: Sequence[OpRoofline],
    named: set[str],
    star: tuple[float | None, float | None],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    plot_h: float,
    fixed: Sequence[tuple[float, float, str]] = (),
) -> None:
    """Name the largest ops and every flagged one beside their markers where label_place
    finds room on the narrowest page; a name with no room is left to the hover text and the
    ops table, and a flagged op's name then goes into its legend entry too. `fixed`: other
    text on the plot, (x, y) of its lower-left corner (data values) and the text; `plot_h`:
    the plot's height in px when the legend does not shrink it."""
    points = [
        (math.log10(o.placement.intensity), math.log10(o.placement.achieved_flops)) for o in ops
    ]
    texts = [o.op if o.placement.flag or o.op in named else "" for o in ops]
    radii = [op_size(o.time_share) / 2 for o in ops]
    weights = [o.time_share or 0.0 for o in ops]
    if star[0] and star[1]:  # the whole run's star: a marker names keep clear of
        points.append((math.log10(star[0]), math.log10(star[1])))
        texts.append("")
        radii.append(RUN_STAR_PX / 2)
        weights.append(0.0)
    plot_w = NARROW_DIV_PX - fig.layout.margin.l - fig.layout.margin.r
    kx = plot_w / (x_range[1] - x_range[0])
    ky = narrow_plot_height(fig, plot_h) / (y_range[1] - y_range[0])
    boxes = [((math.log10(x), math.log10(y)), text_size(t)) for x, y, t in fixed]
    spots = place_labels(points, texts, radii, (kx, ky), (x_range, y_range), weights, boxes)
    for o, (x, y), spot in zip(ops, points, spots, strict=False):
        if spot is None:
            continue
        dx, dy = DIRECTIONS[spot.position]
        where = (
            # a leader line: plotly's arrow from the name's anchor (its tail, ay is px down)
            # to the marker, stopped at the marker's edge by the standoff
            {
                "showarrow": True,
                "ax": spot.dx,
                "ay": -spot.dy,
                "standoff": op_size(o.time_share) / 2,
                "arrowhead": 0,
                "arrowwidth": 1,
                "arrowcolor": "#555",
            }
            if spot.lead
            else {"showarrow": False, "xshift": spot.dx, "yshift": spot.dy}
        )
        fig.add_annotation(
            x=x,
            y=y,
            text=o.op,
            name="op-name",  # the browser check finds the names by it
            xanchor=_XANCHOR[dx],
            yanchor=_YANCHOR[dy],
            font={"size": 12, **({"color": "crimson"} if o.placement.flag else {})},
            **where,
        )
    left_off = [o.op for o, spot in zip(ops, spots, strict=False) if o.placement.flag and not spot]
    if left_off:
        trace = next(d for d in fig.data if d.name.startswith("ABOVE"))
        # a line of its own: plotly does not wrap legend text, a narrow page cut it off
        trace.name += f"<br>no room on the chart for the name of {', '.join(left_off)}"
