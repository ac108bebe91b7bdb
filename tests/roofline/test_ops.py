"""The roofline's per-op rows (mostly on the real H100 cifar10 run): wrapper rows kept out of
the per-op table's ranking, one note per op above its roof, and which ops and kernel groups are
points on the hierarchical roofline (none at 0 FLOP)."""

from __future__ import annotations

import json
import re

import pytest

from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.cli import main
from perfsuite.record import load_record
from tests.conftest import extract_h100_run, shared_path
from tests.helpers import build_record, table_rows

FLAGGED = ["aten::add", "aten::threshold_backward", "aten::relu"]  # 204%, 111%, 110%


def _caption(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("Per-op, per step"))


def test_wrapper_rows_do_not_crowd_out_ops(h100, capsys):
    """127 rows, 90 of them with no FLOP model and no device time of their own (43 only their
    children's, 47 none): they are left out of the ranking, so fill_, index and copy_ (their
    own kernels) are in a table of 20 rows, and the caption counts what it leaves out."""
    from perfsuite.analyzers.roofline.ops import ranked_ops

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
    # the caption counts what it shows and leaves out (its wording: tests/golden/roofline_h100)
    assert {"20", "37", "90", "43", "47"} <= set(re.findall(r"\d+", _caption(out)))
    rows = table_rows(out, "Per-op, per step")
    assert len(rows) == 20 and "wrapper" not in {r[1] for r in rows}
    names = [r[0] for r in rows]
    assert {"aten::fill_", "aten::index", "aten::copy_"} <= set(names)
    assert names.index("aten::fill_") < names.index("aten::add")  # 150 us before 89 us
    assert rows[names.index("aten::index")][2] == "47.4 µs own"
    assert main(["roofline", h100["_path"], "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert {"37", "90"} <= set(re.findall(r"\d+", _caption(out)))
    assert "--top 0" not in _caption(out)  # nothing left out, nothing to point to
    rows = table_rows(out, "Per-op, per step")
    assert len(rows) == 127 and [r[1] for r in rows[37:]] == ["wrapper"] * 90


def test_an_op_above_its_roof_is_noted_once_with_its_cause(h100, capsys):
    """aten::add, aten::relu and aten::threshold_backward beat the copy roof: each has the
    roofline's note (its likely cause) and no second note from utilization."""
    assert main(["roofline", h100["_path"], "--explain"]) == 0
    out = capsys.readouterr().out
    notes = out[out.index("\nNotes (all ") :].splitlines()
    for op in FLAGGED:
        (note,) = [n for n in notes if n.startswith(f"  - {op} ") or n.startswith(f"  - {op}:")]
        assert "of its roof: not a result" in note and "likely bytes over-counted" in note
    from perfsuite.analyzers.roofline.utilization import utilization

    u = utilization(h100)
    assert not [n for n in u.notes if n.split(":")[0] in FLAGGED]
    add = next(r for r in u.ops if r.scope == "aten::add")
    assert add.of_measured_bandwidth is None and add.of_spec_bandwidth is None


def test_an_op_over_a_ceiling_the_roofline_does_not_flag_keeps_its_note(make_record):
    """A spec bandwidth below the measured copy roof: add_ at 3 GB/s is 0.3 of the measured
    roof (no flag) and 1.5x the spec: utilization's note is the only one, so it stays."""
    from perfsuite.analyzers.roofline.utilization import utilization

    rec = build_record(make_record)
    rec["ceilings"]["spec"] = {"memory_bandwidth": 2e9}
    res = roofline(rec)
    assert not any(o.placement.flag for o in res.ops)
    notes = utilization(rec).notes
    (note,) = [n for n in notes if n.startswith("aten::add_:")]
    assert "1.50x" in note and "spec" in note


def test_zero_flop_ops_are_left_off_the_flop_roofline(h100, capsys):
    """aten::ones_like (0 FLOP, 4 bytes) has no place on a chart of FLOP/s: left off, named."""
    h = roofline(h100).hierarchical
    assert len(h.points) == 25 and h.zero_flop == ["aten::ones_like"]
    assert "aten::ones_like" not in {p.name for p in h.points}
    assert all(p.placement.flops and p.placement.achieved_flops for p in h.points)
    assert [n for n in h.notes if n.endswith(": aten::ones_like")]  # the note names it
    assert main(["roofline", h100["_path"], "--json"]) == 0
    hier = json.loads(capsys.readouterr().out)["roofline"]["hierarchical"]
    assert len(hier["points"]) == 25 and hier["zero_flop"] == ["aten::ones_like"]


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
    assert [n for n in h.notes if n.startswith("7 ")]  # a note counts the groups left out


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
