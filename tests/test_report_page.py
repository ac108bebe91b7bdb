"""The single-run report page: overview first, roofline annotations on log
axes, SI ticks, labelled and flagged points, telemetry on separate axes, the trace timeline
with a Perfetto pointer, and a smaller self-contained page."""

from __future__ import annotations

import html
import json
import math
import re

import pytest

from perfsuite import fmt
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.figures import runs as figures
from perfsuite.record import quantity, write_record
from perfsuite.report import html as h
from perfsuite.report.build import report_html
from perfsuite.report.inference_section import inference_rows
from perfsuite.report.overview_section import overview_section
from perfsuite.report.timeline_section import kernel_cell
from perfsuite.views.roofline_view import answer, lost_time_sentences
from tests.conftest import shared_path
from tests.helpers import build_record, set_ceilings
from tests.test_timeline_synthetic import scenario, write_trace


def _run(tmp_path, make_record, trace=True):
    rec = build_record(make_record)
    rec["status"] = "reached"
    rec["time_to_accuracy"].update(reached=True, time_s=10.0, epoch=1, evaluation_index=0)
    rec["throughput"] = {
        "step_time": quantity(0.1, "s", "measured", "t"),
        "samples_per_s": quantity(320.0, "sample/s", "derived", "t"),
    }
    d = tmp_path / "run1"
    d.mkdir()
    if trace:
        write_trace(d / "trace.json.gz", scenario(), gz=True)
        rec["timeline"]["trace"] = "trace.json.gz"
    write_record(d, rec)
    from perfsuite.record import load_record

    return load_record(d)


def _figs(text):
    return {i: json.loads(f) for i, f in re.findall(r'psDraw\("([^"]+)",(.*?)\);</script>', text)}


def test_overview_comes_first_with_tta_throughput_and_lost_time(tmp_path, make_record):
    rec = _run(tmp_path, make_record)
    text = report_html([rec])
    ids = re.findall(r'<section id="([^"]+)">', text)
    assert ids[0] == "overview" and "timeline" in ids
    overview = text[text.index('id="overview"') : text.index('id="summary"')]
    assert "Reached top-1 &gt;= 90% in 10.00 s" in overview  # worded as the summary words it
    assert "320 sample/s" in overview
    res = roofline(rec)
    places = lost_time_sentences(res, 3)
    assert len(places) == min(3, len(res.ranking)) and places
    top = res.ranking[0]
    assert places[0].startswith(f"{top.op}, {fmt.si(top.lost_time_s, 's')} per step of its ")
    assert places[0].endswith(
        f"; {fmt.pct(top.lost_time_s / res.reconciled_step_time_s)} of the step"
    )
    # the answer of `perfsuite roofline` names the same op in the same words
    assert answer(res)[1].startswith(f"Most time lost: {top.op}, {fmt.si(top.lost_time_s, 's')}")
    assert all(p in overview or p.replace("'", "&#x27;") in overview for p in places)


def test_multi_run_page_has_no_single_run_sections(tmp_path, make_record):
    rec = _run(tmp_path, make_record, trace=False)
    other = dict(rec, run_id="roof2")
    ids = re.findall(r'<section id="([^"]+)">', report_html([rec, other]))
    assert "overview" not in ids and "timeline" not in ids


def test_roofline_annotations_sit_at_log10_of_their_value(make_record):
    rec = build_record(make_record)
    res = roofline(rec)
    fig = figures.roofline_figure(res).to_plotly_json()
    layout = fig["layout"]
    ridge = res.run.peak_flops.value / res.run.memory_bandwidth.value
    (label,) = [a for a in layout["annotations"] if a["text"].startswith("ridge")]
    assert label["x"] == math.log10(ridge)  # not the raw value: that is 10^x on a log axis
    xs = [x for t in fig["data"] for x in (t.get("x") or [])]
    assert all(10 ** a["x"] <= max(xs) for a in layout["annotations"] if a.get("xref") != "paper")
    assert layout["xaxis"]["exponentformat"] == layout["yaxis"]["exponentformat"] == "SI"
    roofs = [a["text"] for a in layout["annotations"]]
    assert any(t.startswith("memory ") and "B/s" in t for t in roofs)
    assert any("FLOP/s" in t and not t.startswith(("ridge", "memory")) for t in roofs)


def test_ops_above_their_roof_are_drawn_apart_and_top_ops_named(make_record):
    rec = build_record(make_record)
    set_ceilings(rec, peak=quantity(1e9, "FLOP/s", "measured", "deliberately low"))
    res = roofline(rec)
    fig = figures.roofline_figure(res).to_plotly_json()
    traces, layout = fig["data"], fig["layout"]
    (flagged,) = [t for t in traces if str(t.get("name", "")).startswith("ABOVE")]
    assert flagged["marker"]["symbol"] == "x"
    assert any(h.startswith("aten::mm<br>") for h in flagged["hovertext"])
    normal = [t for t in traces if t.get("name") == "ops (size = time share)"]
    assert all(not h.startswith("aten::mm<br>") for t in normal for h in t["hovertext"])
    # the flagged op is named on the chart, in the flag's colour
    names = [a for a in layout["annotations"] if a.get("name") == "op-name"]
    (mm,) = [a for a in names if a["text"] == "aten::mm"]
    assert mm["font"]["color"] == "crimson"


def test_telemetry_panels_have_their_own_axes_and_units():
    cols = {
        "t_s": [0.0, 1.0],
        "cpu_util_pct": [150.0, 190.0],
        "rss_bytes": [1e8, 2e8],
        "gpu_util_pct": [None, None],
    }
    fig = figures.telemetry_figure(cols).to_plotly_json()
    axes = {t["yaxis"] for t in fig["data"]}
    assert axes == {"y", "y2"}  # CPU % and RSS bytes on separate axes
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == [
        "CPU utilization, machine-wide: every process (% of all cores)",
        "resident memory (B)",
    ]
    # plotted in MB with the prefix in the suffix: ticks read "200 MB", not plotly's "200M B"
    assert fig["layout"]["yaxis2"]["ticksuffix"] == " MB"
    assert fig["layout"]["yaxis2"]["exponentformat"] == "none"
    assert fig["data"][1]["y"] == [100.0, 200.0]
    assert fig["data"][1]["hovertext"] == ["100 MB", "200 MB"]
    clock = figures.telemetry_figure({"t_s": [0.0], "gpu_sm_clock_hz": [1.98e9]})
    assert clock.to_plotly_json()["layout"]["yaxis"]["ticksuffix"] == " GHz"


def test_telemetry_summary_values_carry_units():
    from perfsuite.report.telemetry_section import _telemetry_value

    assert _telemetry_value("rss_bytes_max", 515031040.0) == "515 MB"
    assert _telemetry_value("sm_clock_hz_mean", 1.41e9) == "1.41 GHz"
    assert _telemetry_value("power_w_mean", 250.0) == "250 W"
    assert _telemetry_value("util_pct_mean", 37.25) == "37.2 %"


def test_timeline_section_shows_idle_breakdown_and_perfetto(tmp_path, make_record):
    text = report_html([_run(tmp_path, make_record)])
    part = text[text.index('id="timeline"') : text.index('id="telemetry"')]
    assert "host had not launched the work yet" in part and "kernel category" in part
    assert "https://ui.perfetto.dev/" in part and "trace.json.gz" in part


def test_page_is_self_contained_and_smaller(tmp_path, make_record):
    text = report_html([_run(tmp_path, make_record)])
    from plotly.offline import get_plotlyjs

    assert len(text) < len(get_plotlyjs()) / 2  # was plotly.js (4.8 MB) plus the figures
    assert text.count('id="plotly-gz"') == 1 and "DecompressionStream" in text
    assert all("src=" not in tag for tag in re.findall(r"<script[^>]*>", text))
    figs = _figs(text)
    assert len(figs) >= 3 and all("template" not in f["layout"] for f in figs.values())
    assert text.count('"plot_bgcolor"') <= 2  # one shared template, not one per figure


def test_data_and_environment_cells_read_as_text_not_python(tmp_path, make_record):
    from perfsuite.report import html as h

    assert [h.cell_text(v) for v in (None, True, False, [], {}, 0, "x")] == [
        "n/a", "yes", "no", "none", "none", "0", "x"
    ]  # fmt: skip
    assert h.cell_text({"a": 1, "b": {"c": None, "d": [1, 2]}}) == "a: 1, b: (c: n/a, d: (1, 2))"
    rec = _run(tmp_path, make_record, trace=False)
    rec["data"] = {"kind": "in-memory", "num_workers": None, "pinned_memory": False}
    rec["switches"] = {"effect": {"tf32": {"cudnn_allow_tf32": True, "applies": False}}}
    rec["config"] = {"overrides": [], "capture": True, "recipe": None}
    rec["environment"] = {"gpus": [], "frameworks": {"torch": "2.13.0+cpu", "numpy": "2.4.6"}}
    text = report_html([rec])
    rows = dict(re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", text))
    assert rows["data.num_workers"] == "n/a" and rows["data.pinned_memory"] == "no"
    assert rows["effect.tf32"] == "cudnn_allow_tf32: yes, applies: no"
    assert rows["config.overrides"] == "none" and rows["config.capture"] == "yes"
    assert rows["config.recipe"] == "n/a" and rows["environment.gpus"] == "none"
    assert rows["environment.frameworks"] == "torch: 2.13.0+cpu, numpy: 2.4.6"
    for raw in ("None", "True", "False", "[]", "{"):
        assert not any(raw in v for v in rows.values()), raw


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\x00\x01\x02binary", "is binary or not UTF-8 text"),
        (b"a,b\n1,2\n", "has no t_s column"),
        (b"t_s,cpu_util_pct\n", "holds no sample"),
        (
            b"t_s,cpu_util_pct\n" + b"0,1\n" * 2000 + b"1," + b"2" * 200_000 + b"\n",
            "is damaged after",
        ),
    ],
)
def test_an_unreadable_telemetry_csv_gives_a_note_not_an_empty_chart(
    tmp_path, make_record, content, words
):
    from perfsuite.report.telemetry_section import telemetry_section

    (tmp_path / "telemetry.csv").write_bytes(content)
    rec = make_record([(1, 1.0, 0.5)])
    rec.update(telemetry={"file": "telemetry.csv", "cpu": {}}, _dir=str(tmp_path))
    html = telemetry_section([rec])
    assert f"Telemetry CSV: telemetry.csv {words}" in html
    assert ("fig-tel-0" in html) == (words == "is damaged after")  # rows before the damage


# -----------------------------------------------------------------------------------------------
# Presentation rules of the report: tables that scroll instead of
# widening the page, kernel names shortened with the full name on hover, labels that say what the
# number is, --peaks on `perfsuite report`, colours keyed by item, flags in the headline.


LONG = (
    "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, "
    "float, float, cudnnTensorStruct, float const*, cudnnTensorStruct, float const*)"
)


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
    # the H100 run is a version-1 record whose latency is a median of 100 calls: the loader
    # names its rule
    assert h100["_migrated_from"] == 1 and h100["inference"]["rule"] == "older rule"
    labels = [r[0] for r in inference_rows(h100)]
    assert "latency (median of a few calls, batch 1; older rule)" in labels
    assert not any("mean" in label for label in labels)
    new = {"inference": {"rule": "dawnbench", "latency": {"value": 0.004, "unit": "s"}}}
    assert "latency (mean, batch 1)" in [r[0] for r in inference_rows(new)]


def test_overview_names_frac_of_roof_and_the_records_throughput_source(tmp_path, make_record):
    rec = _run(tmp_path, make_record, trace=False)
    rec["throughput"]["samples_per_s"]["source"] = "batch_size / step_time"
    from perfsuite.analyzers.roofline.roofline import roofline

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
    from perfsuite.__main__ import main

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
    from perfsuite.figures.compare import overlay_figure

    assert figures.item_colour("g2") == figures.item_colour("g2")
    curves = [
        {"item": i, "label": i, "time_s": [1.0], "values": [0.5], "threshold": None}
        for i in ("run-a", "g1", "g2")
    ]
    fig = overlay_figure(curves, ["run-a", "g1", "g2"], "top1")
    by_item = {t.name: t.line.color for t in fig.data if t.name}
    assert by_item == {i: figures.item_colour(i) for i in ("run-a", "g1", "g2")}


def test_flagged_op_bars_are_grey_and_times_read_in_ms(h100):
    from perfsuite.analyzers.roofline.roofline import roofline

    res = roofline(h100)
    fig = figures.ops_bar_figure(res, 20)
    bar = fig.data[0]
    from perfsuite.analyzers.roofline.ops import rank_time, ranked_ops

    ops = [o for o in ranked_ops(res.ops)[0] if rank_time(o)][:20]
    for o, colour, hover in zip(ops, bar.marker.color, bar.hovertext, strict=True):
        if o.placement.flag or o.placement.frac_of_roof is None:
            assert colour == figures.FLAGGED_GREY
        if o.placement.flag:
            assert "flagged >100%" in hover
    assert fig.layout.xaxis.ticksuffix == " ms" and max(bar.x) > 1  # not "0.001s"
    assert -0.1 not in list(bar.marker.color)


def test_op_bars_are_the_tables_ops_in_its_order_without_wrappers(h100):
    """The bar chart's bars are the per-op table's ops in its order (no wrapper row, whose
    time is its children's counted again), and the page says how many wrapper rows it left
    out."""
    from perfsuite.analyzers.roofline.roofline import roofline
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
