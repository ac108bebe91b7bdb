"""Labels on the roofline chart never overlap: spread_labels keeps labels of roofs a fraction
of a decade apart at least one label height apart, each beside its own line, and
label_place.place_labels puts each op name, largest op first, at the first free spot around its
marker, inside the plot and clear of names already placed and of other markers."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.analyzers.roofline.utilization import utilization
from perfsuite.figures import op_names
from perfsuite.figures import runs as figures
from perfsuite.figures.label_place import (
    GAP_PX,
    POSITIONS,
    Spot,
    _segment_hits_box,
    _segments_cross,
    label_box,
    leader,
    place_labels,
    shift,
    text_size,
)
from perfsuite.figures.runs import spread_labels
from perfsuite.record import load_record, quantity
from tests.conftest import extract_h100_run, shared_path
from tests.helpers import build_record, set_ceilings

L54, L67 = math.log10(54e12), math.log10(67e12)


def test_lone_label_keeps_its_place():
    assert spread_labels([L54], 0.3) == [L54]
    assert spread_labels([], 0.3) == []


def test_two_close_roofs_part_symmetrically_about_their_lines():
    low, high = spread_labels([L54, L67], 0.25)
    assert high - low == pytest.approx(0.25)  # exactly one gap apart, not more
    assert (low + high) / 2 == pytest.approx((L54 + L67) / 2)  # the least total move
    assert low < L54 and high > L67  # each on the far side of its own line
    # the answer follows the labels, not the order they come in
    assert spread_labels([L67, L54], 0.25) == pytest.approx([high, low])


def test_far_roofs_stay_on_their_lines():
    heights = [14.0, 10.0, 12.0]
    assert spread_labels(heights, 0.3) == heights


def test_cluster_of_three_and_a_distant_one():
    out = spread_labels([13.0, 13.05, 13.1, 10.0], 0.2)
    assert out == pytest.approx([12.85, 13.05, 13.25, 10.0])  # the middle one keeps its place
    # only the close pair moves when the third is far enough below
    assert spread_labels([10.0, 13.0, 13.05], 0.2) == pytest.approx([10.0, 12.925, 13.125])


def test_equal_roofs_get_distinct_places_and_top_caps_the_stack():
    a, b = spread_labels([13.0, 13.0], 0.2)
    assert abs(a - b) == pytest.approx(0.2) and (a + b) / 2 == pytest.approx(13.0)
    assert spread_labels([13.0, 13.05], 0.2, top=13.1) == pytest.approx([12.9, 13.1])
    assert spread_labels([13.0], 0.2, top=12.5) == [12.5]


def _roof_labels(fig):
    """(text, head y, label centre y) of each roof label, and one label height in decades."""
    lay = fig["layout"]
    anns = [a for a in lay["annotations"] if a.get("xref") == "paper" and a.get("showarrow")]
    lo, hi = lay["yaxis"]["range"]
    plot_px = lay["height"] - lay["margin"]["t"] - lay["margin"]["b"]
    return [(a["text"], a["y"], a["ay"]) for a in anns], figures._LABEL_PX * (hi - lo) / plot_px


def _assert_apart(labels, gap, lo, hi):
    centres = sorted(c for _, _, c in labels)
    assert all(b - a >= gap - 1e-9 for a, b in itertools.pairwise(centres))
    assert all(lo < c < hi for c in centres)


def test_measured_and_spec_roof_labels_part_on_the_figure(make_record):
    rec = build_record(make_record)  # measured fp32 roof 100 GFLOP/s, 10 GB/s
    rec["ceilings"]["spec"] = {
        "id": "test",
        "source": "t",
        "flops": {"float32": 1.2e11},
        "memory_bandwidth": 1.5e10,
    }
    fig = figures.roofline_figure(roofline(rec), utilization(rec)).to_plotly_json()
    labels, gap = _roof_labels(fig)
    by_text = {t: (head, c) for t, head, c in labels}
    # one math: its roof is the blend, named once
    assert set(by_text) == {"fp32 100 GFLOP/s (measured)", "spec 120 GFLOP/s"}
    # each leader starts at its own roof's right end
    assert by_text["fp32 100 GFLOP/s (measured)"][0] == pytest.approx(11.0)
    assert by_text["spec 120 GFLOP/s"][0] == pytest.approx(math.log10(1.2e11))
    # 0.08 decades apart on the chart, their labels at least one label height apart
    assert by_text["fp32 100 GFLOP/s (measured)"][1] < 11.0
    assert by_text["spec 120 GFLOP/s"][1] > math.log10(1.2e11)
    _assert_apart(labels, gap, *fig["layout"]["yaxis"]["range"])
    # the labels sit in the right margin, which is wide enough for the longest one
    assert fig["layout"]["margin"]["r"] >= figures._CHAR_PX * len("fp32 100 GFLOP/s (measured)")
    assert fig["layout"]["legend"]["orientation"] == "h"  # below the plot, not in that margin


def test_h100_roof_labels_apart(tmp_path):
    from perfsuite.devices.roofs import peaks_file_roofs

    rec = load_record(extract_h100_run(tmp_path))
    peaks = peaks_file_roofs(shared_path("gpu", "h100-peaks.json"))
    fig = figures.roofline_figure(roofline(rec, peaks), utilization(rec, peaks)).to_plotly_json()
    labels, gap = _roof_labels(fig)
    by_text = {t: (head, c) for t, head, c in labels}
    assert set(by_text) == {
        "fp32 54.1 TFLOP/s (measured)",
        "blended 366 TFLOP/s (derived)",  # the blend of fp32 and tf32 is a roof of its own
        "tf32 374 TFLOP/s (measured)",
        "spec 484 TFLOP/s",
    }
    _assert_apart(labels, gap, *fig["layout"]["yaxis"]["range"])
    # the stack keeps the roofs' order; fp32, 0.83 decades below the blend, is pushed down by
    # the stack of three above it but stays within half a label height of its own line
    centres = [by_text[t][1] for t in sorted(by_text, key=lambda t: by_text[t][0])]
    assert centres == sorted(centres)
    head, centre = by_text["fp32 54.1 TFLOP/s (measured)"]
    assert head - gap / 2 < centre < head


def test_h100_tf32_roof_shows_beside_the_blended_one(tmp_path):
    """tf32 (374 TFLOP/s) is 2% above the blend (366): drawn as a solid 2 px line under a solid
    3 px black one it would vanish, so the blend is dashed, thinner and on top: the roof under
    it shows in the dash gaps and along both edges; its margin label is still there."""
    from perfsuite.devices.roofs import peaks_file_roofs

    rec = load_record(extract_h100_run(tmp_path))
    peaks = peaks_file_roofs(shared_path("gpu", "h100-peaks.json"))
    fig = figures.roofline_figure(roofline(rec, peaks), utilization(rec, peaks)).to_plotly_json()
    names = [t.get("name", "") for t in fig["data"]]
    blend = names.index(next(n for n in names if n.startswith("blended roof")))
    tf32 = names.index(next(n for n in names if n.startswith("tf32 roof")))
    assert tf32 < blend  # drawn first, under the blend
    assert fig["data"][blend]["line"]["dash"] == "dash"
    assert fig["data"][tf32]["line"]["width"] > fig["data"][blend]["line"]["width"]
    assert "dash" not in fig["data"][tf32]["line"]
    (tf32_label,) = [a for a in fig["layout"]["annotations"] if a["text"].startswith("tf32 ")]
    assert tf32_label["text"] == "tf32 374 TFLOP/s (measured)"
    assert tf32_label["font"]["color"] == fig["data"][tf32]["line"]["color"]


# -----------------------------------------------------------------------------------------------
# Op names: label_place.place_labels.


# A 400 x 300 px plot: 4 decades wide, 3 high, 100 px per decade on both axes.
PPD = (100.0, 100.0)
BOUNDS = ((0.0, 4.0), (0.0, 3.0))


def place(points, texts, radii, weights=None, fixed=()):
    return place_labels(points, texts, radii, PPD, BOUNDS, weights, fixed)


def test_a_lone_op_keeps_above():
    # "aten::mm" is 8 characters: 56 x 16 px, its bottom edge r + GAP_PX above the centre
    assert place([(2.0, 1.5)], ["aten::mm"], [5.0]) == [Spot("above", 0.0, 7.0)]
    assert label_box(Spot("above", 0.0, 7.0), 200.0, 150.0, text_size("aten::mm")) == (
        172.0,
        157.0,
        228.0,
        173.0,
    )


def test_two_ops_at_one_point_get_different_spots():
    # the larger share goes first and takes "above"; the other goes below
    spots = place([(2.0, 1.5), (2.0, 1.5)], ["a::x", "b::y"], [5.0, 5.0], [0.1, 0.3])
    assert spots == [Spot("below", 0.0, -7.0), Spot("above", 0.0, 7.0)]


def test_a_name_inside_a_larger_marker_gets_none():
    # b's marker sits inside a's: every spot around b reaches into a's circle, so b goes
    # unnamed even though it goes first; a still finds its spot above
    spots = place([(2.0, 1.5), (2.0, 1.5)], ["a::x", "b::y"], [10.0, 5.0], [0.1, 0.3])
    assert spots == [Spot("above", 0.0, 12.0), None]


def test_largest_share_wins_the_contested_spot():
    # markers 10 px apart: both names want "above" and their boxes would overlap
    points, texts, radii = [(2.0, 1.5), (2.1, 1.5)], ["aten::aa", "aten::bb"], [3.0, 3.0]
    assert place(points, texts, radii, [0.2, 0.1]) == [
        Spot("above", 0.0, 5.0),
        Spot("below", 0.0, -5.0),
    ]
    assert place(points, texts, radii, [0.1, 0.2]) == [
        Spot("below", 0.0, -5.0),
        Spot("above", 0.0, 5.0),
    ]
    # without weights the input order decides
    assert place(points, texts, radii)[0] == Spot("above", 0.0, 5.0)


def test_names_stay_inside_the_plot():
    # at the top edge "above" would leave the plot: below
    assert place([(2.0, 2.95)], ["aten::mm"], [5.0]) == [Spot("below", 0.0, -7.0)]
    # at the right edge "above" slides left until it fits, still over its marker
    assert place([(3.9, 1.5)], ["aten::mm"], [5.0]) == [Spot("above", -18.0, 7.0)]
    assert place([(0.1, 1.5)], ["aten::mm"], [5.0]) == [Spot("above", 18.0, 7.0)]
    # in the top right corner: below, slid left
    assert place([(3.95, 2.95)], ["aten::mm"], [5.0]) == [Spot("below", -23.0, -7.0)]
    # a plot narrower than the name: no spot
    tiny = place_labels([(0.25, 0.1)], ["aten::mm"], [2.0], PPD, ((0.0, 0.5), (0.0, 0.2)))
    assert tiny == [None]


def test_a_corner_spot_when_the_sides_are_taken():
    # other markers right above, below, left and right of the op block its four sides
    r = 4.0
    points = [(2.0, 1.5), (2.0, 1.7), (2.0, 1.3), (2.35, 1.5), (1.65, 1.5)]
    spots = place(points, ["aten::mm", "", "", "", ""], [r] * 5)
    d = (r + GAP_PX) / math.sqrt(2)
    assert spots == [Spot("above right", d, d), None, None, None, None]


def test_other_text_on_the_plot_is_kept_clear_of():
    # a 100 x 16 px text whose lower-left corner is 10 px above the marker takes "above"
    spots = place([(2.0, 1.5)], ["aten::mm"], [5.0], fixed=[((1.5, 1.6), (100.0, 16.0))])
    assert spots == [Spot("below", 0.0, -7.0)]


def test_a_leader_line_when_no_spot_beside_the_marker_is_free():
    # an op in the plot's lower-left corner (px 20, 20) has "above", "right" and "above right"
    # inside the plot; an unnamed marker at (40, 35), radius 8, reaches into all three, so the
    # name goes 20 px farther up, joined by a leader from the marker's edge to its anchor
    points = [(0.2, 0.2), (0.4, 0.35)]
    spots = place(points, ["a::x", ""], [5.0, 8.0])
    assert spots == [Spot("above", 0.0, 27.0, 20.0), None]
    assert leader(spots[0], 20.0, 20.0, 5.0) == (20.0, 25.0, 20.0, 47.0)
    assert leader(Spot("above", 0.0, 7.0), 20.0, 20.0, 5.0) is None  # beside: no line


def test_a_leader_line_never_crosses_another_marker():
    # as above, plus a small marker on the way up (20, 38): the line would cross it, so the
    # name goes 20 px out to the right instead
    points = [(0.2, 0.2), (0.4, 0.35), (0.2, 0.38)]
    spots = place(points, ["a::x", "", ""], [5.0, 8.0, 3.0])
    assert spots[0] == Spot("right", 27.0, 0.0, 20.0)


def test_segment_geometry():
    box = (10.0, 10.0, 20.0, 20.0)
    assert _segment_hits_box((0.0, 15.0, 30.0, 15.0), box)  # straight through
    assert _segment_hits_box((15.0, 15.0, 30.0, 30.0), box)  # starts inside
    assert not _segment_hits_box((0.0, 0.0, 9.0, 30.0), box)  # passes by on the left
    assert not _segment_hits_box((0.0, 10.0, 30.0, 10.0), box)  # grazes its edge
    assert not _segment_hits_box((0.0, 25.0, 25.0, 0.0), (0.0, 0.0, 10.0, 10.0))  # corner miss
    assert _segments_cross((0.0, 0.0, 10.0, 10.0), (0.0, 10.0, 10.0, 0.0))
    assert not _segments_cross((0.0, 0.0, 10.0, 10.0), (20.0, 0.0, 30.0, 10.0))
    assert not _segments_cross((0.0, 0.0, 10.0, 10.0), (10.0, 10.0, 20.0, 0.0))  # share an end


def test_crowded_random_plots_never_overlap_nor_leave_the_plot():
    rng = random.Random(7)
    size = (BOUNDS[0][1] * PPD[0], BOUNDS[1][1] * PPD[1])
    placed_total = led_total = 0
    for _ in range(40):
        n = rng.randint(2, 25)
        points = [(rng.uniform(0.0, 4.0), rng.uniform(0.0, 3.0)) for _ in range(n)]
        texts = [rng.choice(["", "aten::mm", "aten::convolution_backward"]) for _ in range(n)]
        radii = [rng.uniform(4.0, 25.0) for _ in range(n)]
        spots = place(points, texts, radii, [rng.random() for _ in range(n)])
        centres = [(x * PPD[0], y * PPD[1]) for x, y in points]
        boxes = [
            label_box(s, *c, text_size(t))
            for s, c, t in zip(spots, centres, texts, strict=True)
            if s is not None
        ]
        lines = [
            (i, leader(s, *centres[i], radii[i]))
            for i, s in enumerate(spots)
            if s is not None and s.lead
        ]
        placed_total += len(boxes)
        led_total += len(lines)
        for i, line in lines:  # a leader crosses no name, no other marker, no other leader
            assert not any(_segment_hits_box(line, b) for b in boxes)
            for j, ((cx, cy), r) in enumerate(zip(centres, radii, strict=True)):
                if j != i:
                    t = max(0.0, min(1.0, _closest(line, cx, cy)))
                    px, py = line[0] + t * (line[2] - line[0]), line[1] + t * (line[3] - line[1])
                    assert (px - cx) ** 2 + (py - cy) ** 2 >= r * r - 1e-6
        for (_, a), (_, b) in itertools.combinations(lines, 2):
            assert not _segments_cross(a, b)
        assert all(
            s is None or (t and s.position in POSITIONS) for s, t in zip(spots, texts, strict=True)
        )
        for b in boxes:
            assert min(b[0], b[1]) >= 0 and b[2] <= size[0] and b[3] <= size[1]
            for (cx, cy), r in zip(centres, radii, strict=True):  # no marker under a name
                nx, ny = min(max(cx, b[0]), b[2]), min(max(cy, b[1]), b[3])
                assert (nx - cx) ** 2 + (ny - cy) ** 2 >= r * r - 1e-6
        for a, b in itertools.combinations(boxes, 2):
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])
    assert placed_total > 40  # the check saw names, not only empty plots
    assert led_total > 5  # and leader lines


def _closest(seg, x, y):
    """Where along the segment (0..1, unclamped) the point nearest (x, y) lies."""
    dx, dy = seg[2] - seg[0], seg[3] - seg[1]
    return ((x - seg[0]) * dx + (y - seg[1]) * dy) / (dx * dx + dy * dy)


def test_unknown_position_is_an_error():
    with pytest.raises(ValueError, match="unknown label position 'middle'"):
        shift("middle", 3.0)


def test_a_flagged_op_without_room_is_named_in_its_legend_entry(make_record, monkeypatch):
    rec = build_record(make_record)
    set_ceilings(rec, peak=quantity(1e9, "FLOP/s", "measured", "deliberately low"))
    monkeypatch.setattr(op_names, "place_labels", lambda points, *a: [None] * len(points))
    fig = figures.roofline_figure(roofline(rec)).to_plotly_json()
    (flagged,) = [t for t in fig["data"] if str(t.get("name", "")).startswith("ABOVE")]
    assert flagged["name"].endswith("<br>no room on the chart for the name of aten::mm")
    assert not [a for a in fig["layout"]["annotations"] if a.get("name") == "op-name"]


def test_names_are_annotations_at_their_ops_with_the_chosen_shift(make_record):
    rec = build_record(make_record)
    res = roofline(rec)
    fig = figures.roofline_figure(res).to_plotly_json()
    names = {a["text"]: a for a in fig["layout"]["annotations"] if a.get("name") == "op-name"}
    assert names  # the test record's ops are few and far apart: every top op is named
    for o in res.ops:
        if o.op in names:
            a = names[o.op]
            assert a["x"] == pytest.approx(math.log10(o.placement.intensity))
            assert a["y"] == pytest.approx(math.log10(o.placement.achieved_flops))
            assert (a["xanchor"], a["yanchor"]) == ("center", "bottom")  # above: first choice
            assert a["yshift"] == pytest.approx(op_names.op_size(o.time_share) / 2 + GAP_PX)
    # the x axis range is fixed, so px per decade is known (it was autoranged)
    assert fig["layout"]["xaxis"]["range"] is not None
    assert all("text" not in t or not any(t["text"]) for t in fig["data"])  # no trace text


def test_a_name_on_a_leader_is_an_arrow_from_its_anchor_to_the_marker_edge(
    make_record, monkeypatch
):
    rec = build_record(make_record)
    res = roofline(rec)
    spot = Spot("below left", -30.0, -40.0, 20.0)
    monkeypatch.setattr(op_names, "place_labels", lambda points, *a: [spot] * len(points))
    fig = figures.roofline_figure(res).to_plotly_json()
    names = {a["text"]: a for a in fig["layout"]["annotations"] if a.get("name") == "op-name"}
    o = next(o for o in res.ops if o.op in names)
    a = names[o.op]
    assert a["showarrow"] is True and a["arrowhead"] == 0
    assert (a["ax"], a["ay"]) == (-30.0, 40.0)  # plotly's ay is px down
    assert a["standoff"] == pytest.approx(op_names.op_size(o.time_share) / 2)
    assert (a["xanchor"], a["yanchor"]) == ("right", "top")
    assert "xshift" not in a and "yshift" not in a


def test_narrow_plot_height_counts_legend_rows():
    import plotly.graph_objects as go

    fig = go.Figure([go.Scatter(x=[1], y=[1], name=f"t{i}") for i in range(4)])
    assert op_names.narrow_plot_height(fig, 360.0) == 360.0  # the margin holds four rows
    fig.add_trace(go.Scatter(x=[1], y=[1], name="ABOVE its roof"))
    # a fifth row, and one more for the names a flagged op may have to put there
    assert op_names.narrow_plot_height(fig, 360.0) == 360.0 - 2 * 16
    fig.add_trace(go.Scatter(x=[1], y=[1], name="two<br>lines"))
    assert op_names.narrow_plot_height(fig, 360.0) == 360.0 - 4 * 16
