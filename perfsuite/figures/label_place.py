"""Where op names go on the roofline chart, so that no two names overlap and no name covers
another op's marker (plotly's trace text sits above every marker alike, so ops a few px apart
would print their names on top of each other).

Each name tries a few spots around its own marker, largest op first, and takes the first
whose text box stays inside the plot and clear of every name already placed and of every other
marker. Where all eight spots beside the marker are taken it tries them again farther out,
joined to the marker by a leader line that crosses no other marker, name or leader, so a large
op in a crowd is still named; a name with no free spot even then is left off the chart.

Pure geometry, no plotly: points come in log10 data space, the caller says how many px one
decade takes on each axis, and boxes are compared in px (y up, origin at the plot's lower-left
corner)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

# Spots tried around a marker, in order of preference: the four sides, then the four corners
# (a name beside a marker near the plot's edge often fits only leaning away from the edge).
POSITIONS = (
    "above",
    "below",
    "right",
    "left",
    "above right",
    "above left",
    "below right",
    "below left",
)
# Direction of each spot from the marker's centre: x and y each -1, 0 or 1.
DIRECTIONS = {
    p: (
        1 if "right" in p else -1 if "left" in p else 0,
        1 if "above" in p else -1 if "below" in p else 0,
    )
    for p in POSITIONS
}
CHAR_PX = 7.0  # mean width of a 12 px character; Chromium draws op names at 5.7-5.9 px
TEXT_PX = 16.0  # one 12 px line: a 14 px text box and the annotation's 1 px pad above and below
GAP_PX = 2.0  # air between a marker's edge and its name
# Leader line lengths in px tried, in order, once no spot beside the marker is free: far
# enough to step over a neighbour's name (one text line), near enough to read as one op's.
LEADS_PX = (0.0, 20.0, 40.0)

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in px


class Spot(NamedTuple):
    """Where a name goes: its position around the marker, and the px offset (y up) from the
    marker's centre to the name's anchor, the box's edge or corner nearest the marker (its
    middle along an axis the position does not name)."""

    position: str
    dx: float
    dy: float
    lead: float = 0.0  # length in px of the leader line between marker and name; 0 for none


def text_size(text: str) -> tuple[float, float]:
    """Estimated (width, height) in px of a one-line 12 px label: from its length, since the
    page measures text only once it is drawn."""
    return CHAR_PX * len(text), TEXT_PX


def shift(position: str, radius: float) -> tuple[float, float]:
    """Offset in px (y up) from a marker's centre to the label edge or corner nearest to it:
    radius + GAP_PX out along a side, or along the diagonal for a corner spot, so the box
    clears the marker's circle by GAP_PX."""
    if position not in DIRECTIONS:
        raise ValueError(f"unknown label position {position!r}")
    dx, dy = DIRECTIONS[position]
    off = (radius + GAP_PX) / (math.sqrt(2) if dx and dy else 1.0)
    return dx * off, dy * off


def label_box(spot: Spot, x: float, y: float, size: tuple[float, float]) -> Box:
    """The px box of a label of `size` at `spot` around a marker centred on (x, y)."""
    w, h = size
    ux, uy = DIRECTIONS[spot.position]
    x0 = x + spot.dx - (w if ux < 0 else 0 if ux > 0 else w / 2)
    y0 = y + spot.dy - (h if uy < 0 else 0 if uy > 0 else h / 2)
    return x0, y0, x0 + w, y0 + h


def candidate(
    position: str,
    x: float,
    radius: float,
    size: tuple[float, float],
    width: float,
    lead: float = 0.0,
) -> Spot:
    """The spot at `position` for a marker at px x, `lead` px farther out than beside it; a
    name above or below that would cross the plot's left or right edge slides along it to fit,
    as long as it still spans the marker's centre (the largest op, near the right edge, found
    no room otherwise)."""
    dx, dy = shift(position, radius + lead)
    if DIRECTIONS[position][0] == 0:
        half = size[0] / 2
        slide = max(0.0, half - x) or min(0.0, width - x - half)
        if abs(slide) <= half:
            dx += slide
    return Spot(position, dx, dy, lead)


Segment = tuple[float, float, float, float]  # x0, y0, x1, y1 in px


def leader(spot: Spot, x: float, y: float, radius: float) -> Segment | None:
    """The leader line of a name at `spot` around a marker of `radius` centred on (x, y): from
    the marker's edge, on the way to the name's anchor, to that anchor (a plotly arrow with
    standoff = radius draws the same line); None for a name beside its marker."""
    if not spot.lead:
        return None
    d = math.hypot(spot.dx, spot.dy)
    return x + spot.dx * radius / d, y + spot.dy * radius / d, x + spot.dx, y + spot.dy


def _segment_hits_box(seg: Segment, box: Box) -> bool:
    """Whether the segment passes through the inside of the box (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = seg
    ddx, ddy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for p, q in ((-ddx, x0 - box[0]), (ddx, box[2] - x0), (-ddy, y0 - box[1]), (ddy, box[3] - y0)):
        if p == 0:
            if q <= 0:
                return False
            continue
        t = q / p
        if p < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
        if lo >= hi:
            return False
    return True


def _segments_cross(a: Segment, b: Segment) -> bool:
    """Whether two leader lines cross (each one's ends lie on opposite sides of the other)."""

    def side(s: Segment, x: float, y: float) -> float:
        return (s[2] - s[0]) * (y - s[1]) - (s[3] - s[1]) * (x - s[0])

    return (
        side(a, b[0], b[1]) * side(a, b[2], b[3]) < 0
        and side(b, a[0], a[1]) * side(b, a[2], a[3]) < 0
    )


def _segment_hits_circle(seg: Segment, x: float, y: float, r: float) -> bool:
    """Whether the segment comes closer than r to (x, y) (another marker)."""
    x0, y0, x1, y1 = seg
    ddx, ddy = x1 - x0, y1 - y0
    t = ((x - x0) * ddx + (y - y0) * ddy) / ((ddx * ddx + ddy * ddy) or 1.0)
    t = min(max(t, 0.0), 1.0)
    return (x0 + t * ddx - x) ** 2 + (y0 + t * ddy - y) ** 2 < r * r


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _hits_circle(box: Box, x: float, y: float, r: float) -> bool:
    """Whether the box reaches into the circle of radius r about (x, y) (a marker)."""
    nx, ny = min(max(x, box[0]), box[2]), min(max(y, box[1]), box[3])
    return (nx - x) ** 2 + (ny - y) ** 2 < r * r


def place_labels(
    points: Sequence[tuple[float, float]],
    texts: Sequence[str],
    radii: Sequence[float],
    px_per_decade: tuple[float, float],
    bounds: tuple[tuple[float, float], tuple[float, float]],
    weights: Sequence[float] | None = None,
    fixed: Sequence[tuple[tuple[float, float], tuple[float, float]]] = (),
) -> list[Spot | None]:
    """A Spot for each labelled point, or None where no position in POSITIONS is free beside
    the marker nor at any of LEADS_PX farther out.

    points: (log10 x, log10 y) of each marker; texts: its name ("" for a marker that is only
    an obstacle); radii: marker radius in px; px_per_decade: px per decade on x and on y;
    bounds: the plot's ((x_lo, x_hi), (y_lo, y_hi)) in log10, which no label may cross;
    weights: who goes first (largest first, ties in input order; default input order);
    fixed: other text already on the plot, names keep clear of it: (log10 x, log10 y) of its
    lower-left corner and its (width, height) in px.

    Greedy, not optimal: a larger op never gives up its spot to let smaller ones fit, which
    is the order a reader wants names in."""
    kx, ky = px_per_decade
    (x_lo, x_hi), (y_lo, y_hi) = bounds
    width, height = (x_hi - x_lo) * kx, (y_hi - y_lo) * ky
    centres = [((x - x_lo) * kx, (y - y_lo) * ky) for x, y in points]
    order = sorted(range(len(points)), key=lambda i: -(weights[i] if weights is not None else 0.0))
    placed: list[Box] = []
    for (x, y), (w, h) in fixed:
        x0, y0 = (x - x_lo) * kx, (y - y_lo) * ky
        placed.append((x0, y0, x0 + w, y0 + h))
    leaders: list[Segment] = []
    others = list(zip(centres, radii, strict=True))

    def free(i: int, box: Box, line: Segment | None) -> bool:
        """Whether op i's name can take `box` (and `line`, its leader if any)."""
        rest = [c for j, c in enumerate(others) if j != i]
        if not (box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height):
            return False
        if any(_hits_circle(box, mx, my, r) for (mx, my), r in rest):
            return False
        if any(_overlap(box, p) for p in placed) or any(_segment_hits_box(s, box) for s in leaders):
            return False
        if line is None:
            return True
        return not (
            any(_segment_hits_circle(line, mx, my, r) for (mx, my), r in rest)
            or any(_segment_hits_box(line, p) for p in placed)
            or any(_segments_cross(line, s) for s in leaders)
        )

    out: list[Spot | None] = [None] * len(points)
    for i in order:
        if not texts[i]:
            continue
        size = text_size(texts[i])
        cx, cy = centres[i]
        for lead, position in itertools.product(LEADS_PX, POSITIONS):
            spot = candidate(position, cx, radii[i], size, width, lead)
            box = label_box(spot, cx, cy, size)
            line = leader(spot, cx, cy, radii[i])
            if free(i, box, line):
                out[i] = spot
                placed.append(box)
                if line is not None:
                    leaders.append(line)
                break
    return out
