"""A user trial of `perfsuite roofline` on the real H100 cifar10 run: wrapper rows crowding
the per-op table, an op above its roof noted twice, zero-FLOP ops on the FLOP roofline, and a
whole-run fraction shown clean while ops were flagged above one of its roofs."""

from __future__ import annotations

import json
import re

import pytest

from analyzers.roofline.roofline import roofline
from perfsuite.cli import main
from perfsuite.record import load_record, quantity
from tests.conftest import extract_h100_run, shared_path
from tests.test_roofline import build_record

FLAGGED = ["aten::add", "aten::threshold_backward", "aten::relu"]  # 204%, 111%, 110%


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    return load_record(extract_h100_run(tmp_path_factory.mktemp("h100")))


def _table(text: str, caption: str) -> list[list[str]]:
    """The rows of the fixed-width table under the line starting with `caption`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(caption)) + 3
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start:end]]


def test_wrapper_rows_do_not_crowd_out_ops(h100, capsys):
    """127 rows, 90 of them with no FLOP model and no device time of their own (43 only their
    children's, 47 none): the table said "top 20 of 127" and kept fill_, index and copy_ (their
    own kernels) out of any table shorter than all rows."""
    from analyzers.roofline.ops import ranked_ops

    res = roofline(h100)
    ranked, wrappers = ranked_ops(res.ops)
    assert (len(res.ops), len(ranked), len(wrappers)) == (127, 37, 90)
    assert sum(1 for o in wrappers if o.time_s) == 43
    ops = {o.op: o for o in res.ops}
    for name in ("autograd::engine::evaluate_function: ConvolutionBackward0",
                 "ConvolutionBackward0", "aten::conv2d", "Optimizer.step#SGD.step"):  # fmt: skip
        assert ops[name].wrapper and ops[name].own_time_s == 0.0 and ops[name].time_s > 0
    # device self time (kernels launched by the op itself) over the 3 window steps
    assert ops["aten::fill_"].own_time_s == pytest.approx(0.0004503450000000148 / 3)
    assert ops["aten::index"].own_time_s == pytest.approx(0.00014208399999999507 / 3)
    assert ops["aten::index"].time_s == pytest.approx(0.00020832399999999417 / 3)
    for name in ("aten::fill_", "aten::index", "aten::copy_"):
        assert ops[name].status == "no_flop_model" and not ops[name].wrapper
    # modeled ops by their (inclusive) time, unmodeled ones by their own: index 47 us, not 69
    key = [o.own_time_s if o.status == "no_flop_model" else o.time_s for o in ranked]
    assert key == sorted(key, reverse=True)

    assert main(["roofline", h100["_path"]]) == 0
    out = capsys.readouterr().out
    assert (
        "top 20 of 37 ops by time, unmodeled ones by their own time; an unmodeled op's own time "
        "can lie inside a modeled op's: times nest; 90 wrapper rows (no FLOP model and no device "
        "time of their own: 43 with only their children's time, 47 with none) left out, --top 0 "
        "lists them):"
    ) in out
    rows = _table(out, "Per-op, per step")
    assert len(rows) == 20 and "wrapper" not in {r[1] for r in rows}
    names = [r[0] for r in rows]
    assert {"aten::fill_", "aten::index", "aten::copy_"} <= set(names)
    assert names.index("aten::fill_") < names.index("aten::add")  # 150 us before 89 us
    assert rows[names.index("aten::index")][2] == "47.4 µs own"
    assert main(["roofline", h100["_path"], "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert (
        "all 37 ops by time, unmodeled ones by their own time; an unmodeled op's own time can lie "
        "inside a modeled op's: times nest; then the 90 wrapper rows ("
    ) in out
    rows = _table(out, "Per-op, per step")
    assert len(rows) == 127 and [r[1] for r in rows[37:]] == ["wrapper"] * 90


def test_an_op_above_its_roof_is_noted_once_with_its_cause(h100, capsys):
    """aten::add, aten::relu and aten::threshold_backward beat the copy roof: each had the
    roofline's note (its likely cause) and utilization's "achieved 2.04x ..." note."""
    assert main(["roofline", h100["_path"]]) == 0
    out = capsys.readouterr().out
    notes = out[out.index("\nNotes:\n") :].splitlines()
    for op in FLAGGED:
        (note,) = [n for n in notes if n.startswith(f"  - {op} ") or n.startswith(f"  - {op}:")]
        assert "of its roof: not a result" in note and "likely bytes over-counted" in note
    from analyzers.roofline.utilization import utilization

    u = utilization(h100)
    assert not [n for n in u.notes if n.split(":")[0] in FLAGGED]
    add = next(r for r in u.ops if r.scope == "aten::add")
    assert add.of_measured_bandwidth is None and add.of_spec_bandwidth is None


def test_an_op_over_a_ceiling_the_roofline_does_not_flag_keeps_its_note(make_record):
    """A spec bandwidth below the measured copy roof: add_ at 3 GB/s is 0.3 of the measured
    roof (no flag) and 1.5x the spec: utilization's note is the only one, so it stays."""
    from analyzers.roofline.utilization import utilization

    rec = build_record(make_record)
    rec["ceilings"]["spec"] = {"memory_bandwidth": 2e9}
    res = roofline(rec)
    assert not any(o.placement.flag for o in res.ops)
    notes = utilization(rec).notes
    assert any(n.startswith("aten::add_: achieved 1.50x the spec bandwidth") for n in notes)


def test_zero_flop_ops_are_left_off_the_flop_roofline(h100, capsys):
    """aten::ones_like (0 FLOP, 4 bytes) sat on the hierarchical roofline at 0 FLOP/s."""
    h = roofline(h100).hierarchical
    assert len(h.points) == 25 and h.zero_flop == ["aten::ones_like"]
    assert "aten::ones_like" not in {p.name for p in h.points}
    assert all(p.placement.flops and p.placement.achieved_flops for p in h.points)
    assert (
        "1 op with 0 counted FLOP left out of the hierarchical roofline (no place on a chart "
        "of FLOP/s over FLOP/byte): aten::ones_like"
    ) in h.notes
    assert main(["roofline", h100["_path"]]) == 0
    assert "Hierarchical roofline: modeled bytes, 25 points;" in capsys.readouterr().out


def test_zero_flop_kernel_groups_are_left_off_with_counters(tmp_path):
    """With the H100's ncu capture attached, 7 kernel groups measured 0 FLOP (max-pool, fill,
    threshold: comparisons and stores): 72 points, none at 0 FLOP/s."""
    run_dir = extract_h100_run(tmp_path)
    ncu = shared_path("gpu", "h100-resnet9-2steps-tf32.ncu.csv")
    assert main(["counters", str(ncu), "--into", str(run_dir), "--steps", "2"]) == 0
    h = roofline(load_record(run_dir)).hierarchical
    assert h.source == "counters" and len(h.points) == 72 and len(h.zero_flop) == 7
    assert all(p.placement.flops for p in h.points)
    assert any("FillFunctor" in n for n in h.zero_flop)
    assert any(n.startswith("7 kernel groups with 0 measured FLOP left out") for n in h.notes)


def test_a_group_without_flop_counters_stays_a_point(make_record):
    """None (no FLOP counter) is not 0 FLOP: such a group is still placed, by its bytes."""
    rec = build_record(make_record)
    kernel = {"name": "copy", "op": None, "calls": 1, "time_s": 0.01, "flops": None,
              "flops_tensor": None, "dram_bytes": 5e7, "l2_bytes": None}  # fmt: skip
    zero = {**kernel, "name": "fill", "flops": 0.0}
    rec["counters"] = {"tool": "ncu", "provenance": "measured", "window_steps": 1, "file": "c",
                       "kernels": [kernel, zero], "totals": {}, "metrics": [],
                       "notes": []}  # fmt: skip
    h = roofline(rec).hierarchical
    assert [p.name for p in h.points] == ["copy"] and h.zero_flop == ["fill"]


def test_whole_run_fraction_carries_the_doubt_of_ops_above_its_roof(h100, capsys):
    """frac_of_roof 39.0% is made of the memory roof three ops are flagged above; it was shown
    as a clean fact. frac_of_peak uses only compute roofs, none of them exceeded: clean."""
    res = roofline(h100)
    r = res.run
    assert r.frac_of_roof == pytest.approx(0.3899, abs=5e-4) and r.frac_of_peak is not None
    assert r.doubts == {"frac_of_roof": ["memory"]}
    assert r.doubted_roofs == {"memory": FLAGGED}
    (note,) = [n for n in res.notes if n.startswith("whole-run ")]
    assert note.startswith(
        "whole-run frac_of_roof 39.0% is in doubt: aten::add (204%), aten::threshold_backward "
        "(111%) and aten::relu (110%) sit above the memory roof"
    )
    assert main(["roofline", h100["_path"]]) == 0
    out = capsys.readouterr().out
    block = {row[0]: row[1] for row in _table(out, "field")}
    assert block["frac_of_roof"] == "39.0% DOUBT (see notes)"
    assert block["frac_of_peak"] == "15.2%"
    # the mark stands after "bandwidth", over both its figures (it once read "..., 25.4% of
    # spec DOUBT (see notes)", as if only the spec figure were in doubt)
    (line,) = [x for x in out.splitlines() if x.startswith("utilization: ")]
    assert line == (
        "utilization: peak n/a of measured, 15.1% of spec; bandwidth DOUBT (see notes): 30.7% "
        "of measured, 25.4% of spec"
    )  # the compute fractions: no doubt (no measured TF32 peak: n/a)
    # the report's utilization table carries the same marks as the command's line
    from perfsuite.report.build import report_html

    page = report_html([h100])
    assert "<td>30.7% DOUBT (see notes)</td><td>25.4% DOUBT (see notes)</td>" in page.replace(
        ' class="num"', ""
    )
    assert "<td>15.1%</td>" in page.replace(' class="num"', "")
    assert main(["roofline", h100["_path"], "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["roofline"]["run"]
    assert run["doubts"] == {"frac_of_roof": ["memory"]}


def test_a_flagged_compute_bound_op_puts_both_run_fractions_in_doubt(make_record):
    """mm at 107% of a 3e10 FLOP/s fp32 roof: frac_of_roof (0.697) and frac_of_peak (0.667)
    both use that roof, and neither is above 1, so both are shown, in doubt."""
    rec = build_record(make_record)
    rec["ceilings"]["peak_flops"] = quantity(3e10, "FLOP/s", "measured", "matmul")
    res = roofline(rec)
    mm = next(o for o in res.ops if o.op == "aten::mm").placement
    assert mm.over_roof == pytest.approx(3.2e10 / 3e10)
    r = res.run
    assert r.frac_of_roof == pytest.approx((1.6e9 / 3e10 + 3e7 / 1e10 + 4e8 / 3e10) / 0.1)
    assert r.frac_of_peak == pytest.approx(2e10 / 3e10)
    assert r.doubts == {"frac_of_roof": ["fp32"], "frac_of_peak": ["fp32"]}
    assert r.doubted_roofs == {"fp32": ["aten::mm"]}
    (note,) = [n for n in res.notes if n.startswith("whole-run ")]
    assert note.startswith(
        "whole-run frac_of_roof 69.7% and frac_of_peak 66.7% are in doubt: aten::mm (107%) "
        "sits above the fp32 peak (frac_of_roof and frac_of_peak)"
    )
    clean = roofline(build_record(make_record))
    assert clean.run.doubts == {} and not any(n.startswith("whole-run ") for n in clean.notes)
