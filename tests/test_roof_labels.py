"""Roof labels on the roofline chart never overlap: spread_labels keeps labels of roofs a
fraction of a decade apart at least one label height apart, each beside its own line."""

from __future__ import annotations

import itertools
import math

import pytest

from analyzers.roofline.roofline import roofline
from analyzers.roofline.utilization import utilization
from perfsuite.record import load_record
from perfsuite.report import figures
from perfsuite.report.figures import spread_labels
from tests.conftest import extract_h100_run, shared_path
from tests.test_roofline import build_record

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
