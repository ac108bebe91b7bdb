"""The real H100 cifar10 run: its whole-run frac_of_roof (39.0%) is in doubt (aten::add,
aten::threshold_backward and aten::relu sit above the memory roof it is made of), and every
view says so, not only the roofline's field table and utilization lines: the Overview, the
Summary table, the roofline figure's hover, `perfsuite compare` (table, side by side, positions
figure), the Python API and `report --json`. Also: `Run.ops` has the per-op table's own time
and wrapper columns and its order, and an unmodeled child's own time (aten::cudnn_convolution,
1.97 ms own inside aten::convolution's 1.97 ms) does not read as more time."""

from __future__ import annotations

import json

import pytest

from analyzers.roofline.roofline import roofline
from perfsuite.cli import main
from perfsuite.record import load_record
from tests.conftest import extract_h100_run
from tests.test_roofline import build_record

SHOWN = "39.0% DOUBT (see notes)"
ABOVE = "aten::add, aten::threshold_backward, aten::relu"  # largest ratio first


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    return load_record(extract_h100_run(tmp_path_factory.mktemp("h100")))


def test_one_helper_renders_a_whole_run_fraction():
    from perfsuite.views.roofline_rows import run_fraction

    assert run_fraction(0.38986, False, False) == "39.0%"
    assert run_fraction(0.38986, False, True) == SHOWN
    assert run_fraction(None, True, False) == "FLAGGED (see notes)"
    assert run_fraction(None, False, True) == "n/a"  # no fraction, nothing to doubt


def test_report_marks_the_doubt_in_overview_summary_hover_and_json(h100, tmp_path, capsys):
    from perfsuite.report import figures
    from perfsuite.report.build import _summary, report_page
    from perfsuite.report.overview_section import FRAC_OF_ROOF_LABEL, overview_section

    res = roofline(h100)
    ov = overview_section(h100, res, None)
    assert f'{FRAC_OF_ROOF_LABEL}</td><td class="num">{SHOWN}</td>' in ov
    summary = _summary([h100], [(res, None, None)])
    assert f'<td class="num">{SHOWN}</td>' in summary
    star = next(t for t in figures.roofline_figure(res).data if t.name == "whole run")
    assert star.hovertext == (f"run: 72.9 TFLOP/s, of its roofs (time-weighted): {SHOWN}",)
    page = report_page([h100]).html
    # overview, summary and field table: each 39.0% carries its doubt, none is plain
    assert page.count(f'<td class="num">{SHOWN}</td>') == 3
    assert '<td class="num">39.0%</td>' not in page
    out = tmp_path / "r.html"
    assert main(["report", h100["_path"], "-o", str(out), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["doubts"] == {"frac_of_roof": ["memory"]} and run["roofline_flag"] is None


def test_compare_carries_the_doubt(h100, capsys):
    from analyzers.runs.compare import compare
    from perfsuite.report.compare_figures import positions_figure
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
    from analyzers.runs.compare import compare
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
    from tests.test_roofline_trial import _table

    ops = perfsuite.open(h100["_path"]).ops
    assert main(["roofline", h100["_path"], "--top", "0"]) == 0
    table = _table(capsys.readouterr().out, "Per-op, per step")
    assert list(ops["op"]) == [r[0] for r in table]  # ranked ops, then the 90 wrapper rows
    assert ops["wrapper"].tolist() == [False] * 37 + [True] * 90
    assert str(ops["own_time_s"].dtype) == "float64"
    index = ops.set_index("op").loc["aten::index"]
    assert index["own_time_s"] == pytest.approx(0.00014208399999999507 / 3)
    assert index["time_s"] == pytest.approx(0.00020832399999999417 / 3)
    conv2d = ops.set_index("op").loc["aten::conv2d"]
    assert conv2d["wrapper"] and conv2d["own_time_s"] == 0.0 and conv2d["time_s"] > 0


def test_nested_times_are_said_once_an_unmodeled_op_is_shown(h100):
    from perfsuite.report import figures
    from perfsuite.views.roofline_rows import op_caption

    res = roofline(h100)
    wrappers = (
        "90 wrapper rows (no FLOP model and no device time of their own: 43 with only their "
        "children's time, 47 with none) left out, --top 0 lists them):"
    )
    # the top 3 are modeled ops (convolution_backward, batch-norm backward, convolution)
    assert op_caption(res, 3) == (
        f"Per-op, per step (top 3 of 37 ops by time, unmodeled ones by their own time; {wrappers}"
    )
    # the 4th is aten::cudnn_convolution, 1.97 ms own: inside aten::convolution's 1.97 ms
    assert op_caption(res, 4) == (
        "Per-op, per step (top 4 of 37 ops by time, unmodeled ones by their own time; an "
        f"unmodeled op's own time can lie inside a modeled op's: times nest; {wrappers}"
    )
    bar = figures.ops_bar_figure(res, 20).data[0]
    hover = dict(zip(bar.y, bar.hovertext, strict=True))
    assert (
        hover["aten::cudnn_convolution"]
        == "aten::cudnn_convolution: 1.97 ms own per step, no_flop_model"
    )
    assert hover["aten::index"] == "aten::index: 47.4 µs own per step, no_flop_model"
    assert hover["aten::convolution"] == "aten::convolution: 1.97 ms per step, 39.8% of roof"
