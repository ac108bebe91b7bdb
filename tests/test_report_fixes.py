"""Presentation rules of the report: tables that scroll instead of
widening the page, kernel names shortened with the full name on hover, labels that say what the
number is, --peaks on `perfsuite report`, colours keyed by item, flags in the headline."""

from __future__ import annotations

import html
import json
import re

import pytest

from perfsuite.record import load_record
from perfsuite.report import figures
from perfsuite.report import html as h
from perfsuite.report.build import report_html
from perfsuite.report.inference_section import inference_rows
from perfsuite.report.overview_section import overview_section
from perfsuite.report.timeline_section import kernel_cell
from tests.conftest import extract_h100_run, shared_path
from tests.test_report_page import _run

LONG = (
    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, "
    "float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*)"
)


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    return load_record(extract_h100_run(tmp_path_factory.mktemp("h100")))


def test_every_table_scrolls_inside_its_box():
    out = h.table(["a"], [["x"]])
    assert out.startswith('<div class="tbl"><table>') and out.endswith("</table></div>")
    assert ".tbl{max-width:100%;overflow-x:auto}" in h._CSS


def test_kernel_names_are_short_with_the_full_name_on_hover():
    cell = h.table(["kernel"], [[kernel_cell(LONG)]])
    shown = html.unescape(re.search(r"<td[^>]*>([^<]*)</td>", cell).group(1))
    assert not shown.startswith("void ") and "cudnn::" not in shown and len(shown) <= 60
    assert f'title="{h.esc(LONG)}"' in cell


def test_latency_label_names_the_rules_statistic(h100, make_record):
    # the H100 run predates the dawnbench rule: its latency is a median of 100 calls
    assert h100["inference"].get("rule") is None
    labels = [r[0] for r in inference_rows(h100)]
    assert "latency (median of a few calls, batch 1; older rule)" in labels
    assert not any("mean" in label for label in labels)
    new = {"inference": {"rule": "dawnbench", "latency": {"value": 0.004, "unit": "s"}}}
    assert "latency (mean, batch 1)" in [r[0] for r in inference_rows(new)]


def test_overview_names_frac_of_roof_and_the_records_throughput_source(tmp_path, make_record):
    rec = _run(tmp_path, make_record, trace=False)
    rec["throughput"]["samples_per_s"]["source"] = "batch_size / step_time"
    from analyzers.roofline.roofline import roofline

    text = overview_section(rec, roofline(rec), None)
    assert "achieved of attainable" not in text
    assert "roof time / step time (time-weighted blend of the per-op roofs)" in text
    assert "derived: batch_size / step_time" in text
    assert "batch size / measured step time" not in text


def test_headline_names_the_partial_run_and_links_the_other_flags(tmp_path, make_record):
    rec = _run(tmp_path, make_record, trace=False)
    rec["flags"] = [
        "trained on a subset: train_limit=5000; the time ranks with nothing",
        "clock throttled",
        "other flag",
    ]
    page = report_html([rec])
    overview = page[page.index('id="overview"') : page.index('id="summary"')]
    assert "Partial run: trained on a subset: train_limit=5000." in overview
    assert '<a href="#flags-0">2 other flags</a>' in overview
    assert '<h4 id="flags-0">Flags (3)</h4>' in page
    rec["flags"] = []
    assert "flags-0" not in report_html([rec])


def test_report_peaks_flag_names_another_machine_first(h100, tmp_path):
    from perfsuite.cli import main

    other = json.loads(shared_path("gpu", "h100-peaks.json").read_text())
    other["device_name"] = "NVIDIA A100-SXM4-40GB"
    (tmp_path / "a100.json").write_text(json.dumps(other))
    out = tmp_path / "r.html"
    assert (
        main(["report", h100["_dir"], "--peaks", str(tmp_path / "a100.json"), "-o", str(out)]) == 0
    )
    text = out.read_text()
    overview = text[text.index('id="overview"') :]
    assert overview.startswith('id="overview"><h2>Overview</h2><p><b>WRONG MACHINE: the peaks')
    roof = text[text.index('id="roofline"') : text.index('id="fig-roof-0"')]
    assert "WRONG MACHINE: the peaks file&#x27;s roofs were measured on NVIDIA A100" in roof
    same = tmp_path / "same.html"
    peaks = str(shared_path("gpu", "h100-peaks.json"))
    assert main(["report", h100["_dir"], "--peaks", peaks, "-o", str(same)]) == 0
    assert "WRONG MACHINE" not in same.read_text()


def test_a_group_has_one_colour_in_every_chart():
    from perfsuite.report.compare_figures import overlay_figure

    assert figures.item_colour("g2") == figures.item_colour("g2")
    curves = [
        {"item": i, "label": i, "time_s": [1.0], "values": [0.5], "threshold": None}
        for i in ("run-a", "g1", "g2")
    ]
    fig = overlay_figure(curves, ["run-a", "g1", "g2"], "top1")
    by_item = {t.name: t.line.color for t in fig.data if t.name}
    assert by_item == {i: figures.item_colour(i) for i in ("run-a", "g1", "g2")}


def test_flagged_op_bars_are_grey_and_times_read_in_ms(h100):
    from analyzers.roofline.roofline import roofline

    res = roofline(h100)
    fig = figures.ops_bar_figure(res, 20)
    bar = fig.data[0]
    from analyzers.roofline.ops import rank_time, ranked_ops

    ops = [o for o in ranked_ops(res.ops)[0] if rank_time(o)][:20]
    for o, colour, hover in zip(ops, bar.marker.color, bar.hovertext, strict=True):
        if o.placement.flag or o.placement.frac_of_roof is None:
            assert colour == figures.FLAGGED_GREY
        if o.placement.flag:
            assert "flagged >100%" in hover
    assert fig.layout.xaxis.ticksuffix == " ms" and max(bar.x) > 1  # not "0.001s"
    assert -0.1 not in list(bar.marker.color)


def test_op_bars_are_the_tables_ops_in_its_order_without_wrappers(h100):
    """The bar chart once took res.ops in status order: 16 wrapper rows (their children's time
    counted again) came before fill_. Now its bars are the per-op table's ops, and the page
    says how many wrapper rows it left out."""
    from analyzers.roofline.roofline import roofline
    from perfsuite.report.build import report_html
    from perfsuite.views.roofline_rows import op_table

    res = roofline(h100)
    shown = [o for o in op_table(res, 20)[0] if not o.wrapper]
    bars = figures.ops_bar_figure(res, 20).data[0]
    assert list(bars.y) == [o.op for o in shown]
    assert not any(o.wrapper for o in res.ops if o.op in set(bars.y))
    assert "aten::fill_" in bars.y
    page = report_html([h100])
    assert "wrapper rows (no FLOP model and no device time of their own" in page
