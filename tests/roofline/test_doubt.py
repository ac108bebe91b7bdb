"""The real H100 cifar10 run: its whole-run frac_of_roof (39.0%) is in doubt (aten::add,
aten::threshold_backward and aten::relu sit above the memory roof it is made of), and every
view says so, not only the roofline's field table and utilization lines: the Overview, the
Summary table, the roofline figure's hover, `perfsuite compare` (table, side by side, positions
figure), the Python API and `report --json`. Also: `Run.ops` has the per-op table's own time
and wrapper columns and its order, and an unmodeled child's own time (aten::cudnn_convolution,
1.97 ms own inside aten::convolution's 1.97 ms) does not read as more time."""

from __future__ import annotations

import html
import json

import pytest

from perfsuite.__main__ import main
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.record import quantity
from tests.helpers import build_record, set_ceilings, table_rows

SHOWN = "39.0% DOUBT (see notes)"
ABOVE = "aten::add, aten::threshold_backward, aten::relu"  # largest ratio first
FLAGGED = ["aten::add", "aten::threshold_backward", "aten::relu"]  # 204%, 111%, 110%


def test_one_helper_renders_a_whole_run_fraction():
    """One cell for a whole-run fraction, whatever carries it: a run's roofline (flagged in
    `flag`), a compared run (`roof_flag`), an item's mean (neither), or no roofline."""
    from types import SimpleNamespace as Run

    from perfsuite.views.roofline_rows import run_fraction_cell

    doubted = {"frac_of_roof": ["memory"]}
    assert run_fraction_cell(Run(frac_of_roof=0.38986, flag=None, doubts={})) == "39.0%"
    assert run_fraction_cell(Run(frac_of_roof=0.38986, flag=None, doubts=doubted)) == SHOWN
    assert run_fraction_cell(Run(frac_of_roof=0.38986, doubts=doubted)) == SHOWN  # a mean
    assert run_fraction_cell(Run(frac_of_roof=None, flag="above", doubts={})) == (
        "FLAGGED (see notes)"
    )
    assert run_fraction_cell(Run(frac_of_roof=None, roof_flag="above", doubts={})) == (
        "FLAGGED (see notes)"
    )
    # no fraction, nothing to doubt; frac_of_peak is not in doubt where frac_of_roof is
    assert run_fraction_cell(Run(frac_of_roof=None, flag=None, doubts=doubted)) == "n/a"
    peak = Run(frac_of_roof=0.39, frac_of_peak=0.152, flag=None, doubts=doubted)
    assert run_fraction_cell(peak, "frac_of_peak") == "15.2%"
    assert run_fraction_cell(None) == "n/a"


def test_report_marks_the_doubt_in_overview_summary_hover_and_json(h100, tmp_path, capsys):
    from perfsuite.figures import runs as figures
    from perfsuite.report.build import _summary, report_page
    from perfsuite.report.overview_section import FRAC_OF_ROOF_LABEL, overview_section

    res = roofline(h100)
    ov = overview_section(h100, res, None)
    assert f'{FRAC_OF_ROOF_LABEL}</td><td class="num">{SHOWN}</td>' in ov
    summary = _summary([h100], [(res, None, None)])
    assert f'<td class="num">{SHOWN}</td>' in summary
    star = next(t for t in figures.roofline_figure(res).data if t.name == "whole run")
    (hover,) = star.hovertext
    assert "72.9 TFLOP/s" in hover and hover.endswith(SHOWN)
    page = report_page([h100]).html
    # overview, summary and field table: each 39.0% carries its doubt, none is plain
    assert page.count(f'<td class="num">{SHOWN}</td>') == 3
    assert '<td class="num">39.0%</td>' not in page
    out = tmp_path / "r.html"
    assert main(["report", h100["_path"], "-o", str(out), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["doubts"] == {"frac_of_roof": ["memory"]} and run["roofline_flag"] is None


def test_compare_carries_the_doubt(h100, capsys):
    from perfsuite.analyzers.runs.compare import compare
    from perfsuite.figures.compare import positions_figure
    from perfsuite.views import compare_rows as rows

    c = compare([("base", [h100]), ("again", [h100])])
    for r in c.runs:
        assert r.doubts == {"frac_of_roof": ["memory"]}
        assert r.doubted_roofs == {"memory": ABOVE.split(", ")}
    assert [s.doubts for s in c.items] == [{"frac_of_roof": ["memory"]}] * 2
    assert [row[-1] for row in rows.run_rows(c)] == [SHOWN, SHOWN]
    side = {row[0]: row[1:] for row in rows.side_rows(c)[1]}
    assert side["of roof (time-weighted)"] == [SHOWN, SHOWN]
    note = (
        f"{h100['run_id']}: of roof 39.0% is in doubt, an upper bound: ops are flagged above "
        f"roofs it is made of ({ABOVE} above the memory roof); `perfsuite roofline` names the "
        "likely causes"
    )
    assert c.notes.count(note) == 2
    (pts,) = [t for t in positions_figure(c.runs).data if t.name == "base"]
    assert pts.text[0].endswith(f", memory-bound, of its roofs: {SHOWN}")
    assert main(["compare", h100["_path"], h100["_path"], "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["comparison"]["runs"]
    assert runs[0]["doubts"] == {"frac_of_roof": ["memory"]}


def test_compare_without_doubt_shows_the_plain_fraction(make_record):
    from perfsuite.analyzers.runs.compare import compare
    from perfsuite.views import compare_rows as rows

    rec = build_record(make_record)
    c = compare([("a", [rec]), ("b", [rec])])
    assert c.runs[0].doubts == {} and c.items[0].doubts == {}
    assert rows.run_rows(c)[0][-1] == f"{c.runs[0].frac_of_roof:.1%}"
    assert not any("in doubt" in n for n in c.notes)


def test_api_has_doubt_columns(h100):
    import perfsuite

    run = perfsuite.open(h100["_path"])
    s = run.summary
    assert s["frac_of_roof"] == pytest.approx(0.3899, abs=5e-4)
    assert s["frac_of_roof_doubt"] is True and s["frac_of_peak_doubt"] is False
    block = run.roofline()
    assert block.loc["frac_of_roof", "doubt"] == f"memory roof: {ABOVE}"
    assert [f for f, d in block["doubt"].items() if d is not None] == ["frac_of_roof"]
    util = run.utilization()
    assert util.loc[0, "scope"] == "run"
    assert (util.loc[0, "peak_doubt"], util.loc[0, "bandwidth_doubt"]) == (False, True)
    assert not util["peak_doubt"][1:].any() and not util["bandwidth_doubt"][1:].any()


def test_api_ops_are_the_cli_tables_rows_with_own_time_and_wrapper(h100, capsys):
    import perfsuite

    ops = perfsuite.open(h100["_path"]).ops
    assert main(["roofline", h100["_path"], "--top", "0"]) == 0
    table = table_rows(capsys.readouterr().out, "Per-op, per step")
    assert list(ops["op"]) == [r[0] for r in table]  # ranked ops, then the 90 wrapper rows
    assert ops["wrapper"].tolist() == [False] * 37 + [True] * 90
    assert str(ops["own_time_s"].dtype) == "float64"
    index = ops.set_index("op").loc["aten::index"]
    assert index["own_time_s"] == pytest.approx(0.00014208399999999507 / 3)
    assert index["time_s"] == pytest.approx(0.00020832399999999417 / 3)
    conv2d = ops.set_index("op").loc["aten::conv2d"]
    assert conv2d["wrapper"] and conv2d["own_time_s"] == 0.0 and conv2d["time_s"] > 0


def test_nested_times_are_said_once_an_unmodeled_op_is_shown(h100):
    from perfsuite.figures import runs as figures
    from perfsuite.views.roofline_rows import op_caption

    res = roofline(h100)
    # the top 3 are modeled ops (convolution_backward, batch-norm backward, convolution); the
    # 4th is aten::cudnn_convolution, 1.97 ms own: inside aten::convolution's 1.97 ms. Only a
    # table that shows an unmodeled op says that times nest (wording: tests/golden/).
    top3, top4 = op_caption(res, 3), op_caption(res, 4)
    assert "top 3 of 37" in top3 and "top 4 of 37" in top4
    assert "nest" not in top3 and "nest" in top4
    assert top4.replace("top 4", "top 3").startswith(top3[: top3.index(";")])
    bar = figures.ops_bar_figure(res, 20).data[0]
    hover = dict(zip(bar.y, bar.hovertext, strict=True))
    for op, time in (("aten::cudnn_convolution", "1.97 ms own"), ("aten::index", "47.4 µs own")):
        assert time in hover[op] and "no_flop_model" in hover[op]
    conv = hover["aten::convolution"]  # a modeled op: inclusive time and its fraction
    assert "1.97 ms" in conv and "own" not in conv and "39.8%" in conv


def test_whole_run_fraction_carries_the_doubt_of_ops_above_its_roof(h100, capsys):
    """frac_of_roof 39.0% is made of the memory roof three ops are flagged above: in doubt.
    frac_of_peak uses only compute roofs, none of them exceeded: clean."""
    res = roofline(h100)
    r = res.run
    assert r.frac_of_roof == pytest.approx(0.3899, abs=5e-4) and r.frac_of_peak is not None
    assert r.doubts == {"frac_of_roof": ["memory"]}
    assert r.doubted_roofs == {"memory": FLAGGED}
    (note,) = [n for n in res.notes if n.startswith("whole-run ")]
    named = ("frac_of_roof 39.0%", "aten::add (204%)", "aten::threshold_backward (111%)",
             "aten::relu (110%)", "memory")  # fmt: skip
    assert all(v in note for v in named) and "frac_of_peak" not in note
    assert main(["roofline", h100["_path"]]) == 0
    out = capsys.readouterr().out
    block = {row[0]: row[1] for row in table_rows(out, "field")}
    assert block["frac_of_roof"] == "39.0% DOUBT (see notes)"
    assert block["frac_of_peak"] == "15.2%"
    # the mark stands after "bandwidth", over both its figures, not after the last one only
    (line,) = [x for x in out.splitlines() if x.startswith("utilization: ")]
    peak, bandwidth = line.split(";")  # the compute fractions: no doubt (no measured TF32 peak)
    assert "15.1%" in peak and "DOUBT" not in peak
    assert bandwidth.count("DOUBT") == 1
    assert bandwidth.index("DOUBT") < bandwidth.index("30.7%") < bandwidth.index("25.4%")
    # the report's utilization line is the command's, marks and all
    from perfsuite.report.build import report_html

    assert f"<p>{html.escape(line)}</p>" in report_html([h100])
    assert main(["roofline", h100["_path"], "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["roofline"]["run"]
    assert run["doubts"] == {"frac_of_roof": ["memory"]}


def test_a_flagged_compute_bound_op_puts_both_run_fractions_in_doubt(make_record):
    """mm at 107% of a 3e10 FLOP/s fp32 roof: frac_of_roof (0.697) and frac_of_peak (0.667)
    both use that roof, and neither is above 1, so both are shown, in doubt."""
    rec = build_record(make_record)
    set_ceilings(rec, peak=quantity(3e10, "FLOP/s", "measured", "matmul"))
    res = roofline(rec)
    mm = next(o for o in res.ops if o.op == "aten::mm").placement
    assert mm.over_roof == pytest.approx(3.2e10 / 3e10)
    r = res.run
    assert r.frac_of_roof == pytest.approx((1.6e9 / 3e10 + 3e7 / 1e10 + 4e8 / 3e10) / 0.1)
    assert r.frac_of_peak == pytest.approx(2e10 / 3e10)
    assert r.doubts == {"frac_of_roof": ["fp32"], "frac_of_peak": ["fp32"]}
    assert r.doubted_roofs == {"fp32": ["aten::mm"]}
    (note,) = [n for n in res.notes if n.startswith("whole-run ")]
    named = ("frac_of_roof 69.7%", "frac_of_peak 66.7%", "aten::mm (107%)", "fp32")
    assert all(v in note for v in named)
    clean = roofline(build_record(make_record))
    assert clean.run.doubts == {} and not any(n.startswith("whole-run ") for n in clean.notes)
