"""Roofline arithmetic on records built by hand: every number checked exactly."""

from __future__ import annotations

import copy

import pytest

from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.points import place
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.record import quantity
from tests.helpers import build_record, set_ceilings

APPROX = {"rel": 1e-12}


def test_whole_run_compute_bound(make_record):
    r = roofline(build_record(make_record)).run
    assert r.achieved_flops.value == pytest.approx(2e10, **APPROX)
    assert r.achieved_bandwidth.value == pytest.approx(1e9, **APPROX)
    assert r.intensity.value == pytest.approx(20.0, **APPROX)
    assert r.ridge.value == pytest.approx(10.0, **APPROX)
    assert r.bound == "compute"
    assert r.attainable.value == pytest.approx(1e11, **APPROX)
    # blend: sum of max(flops/peak, bytes/bw) per op = mm 0.016 + add_ 0.003 + foo 0.004 s
    assert r.roof_time.value == pytest.approx(0.023, **APPROX)
    assert r.frac_of_roof == pytest.approx(0.23, **APPROX)
    assert r.frac_of_peak == pytest.approx(0.2, **APPROX)
    assert r.flops_per_step.provenance == "counted"
    assert r.bytes_per_step.provenance == "modeled"
    assert r.step_time.provenance == "measured"
    assert r.peak_flops.provenance == "derived"
    assert r.roofs_used["fp32"].provenance == "measured"
    assert r.achieved_flops.provenance == "derived"
    assert r.achieved_flops.source == "counted FLOP / measured s"


def test_whole_run_memory_bound(make_record):
    r = roofline(build_record(make_record, bytes_per_step=4e8)).run
    assert r.intensity.value == pytest.approx(5.0, **APPROX)
    assert r.bound == "memory"
    assert r.attainable.value == pytest.approx(5e10, **APPROX)  # 5 FLOP/byte x 1e10 byte/s
    assert r.frac_of_roof == pytest.approx(0.23, **APPROX)  # per-op blend, as above
    assert r.frac_of_peak == pytest.approx(0.2, **APPROX)


def test_ridge_point_itself_is_compute_bound():
    p = place(10.0, 1.0, 1.0, 100.0, 10.0)  # intensity 10 == ridge 10
    assert p.bound == "compute"
    assert p.attainable == 100.0


def test_per_op_join(make_record):
    res = roofline(build_record(make_record))
    ops = {o.op: o for o in res.ops}
    assert [o.op for o in res.ops] == ["aten::mm", "aten::add_", "aten::foo", "aten::copy_"]
    assert set(ops) == {"aten::mm", "aten::add_", "aten::copy_", "aten::foo"}
    mm = ops["aten::mm"]
    assert mm.status == "joined"
    assert mm.time_kind == "device"
    assert mm.time_s == pytest.approx(0.05, **APPROX)  # 0.1 s over 2 steps
    assert mm.calls == pytest.approx(6.0)
    assert mm.time_share == pytest.approx(0.5, **APPROX)
    assert mm.placement.flops == pytest.approx(1.6e9)  # forward + backward
    assert mm.placement.bytes == pytest.approx(3e7)
    assert mm.placement.achieved_flops == pytest.approx(3.2e10, **APPROX)
    assert mm.placement.bound == "compute"
    assert mm.placement.frac_of_roof == pytest.approx(0.32, **APPROX)
    add = ops["aten::add_"]
    assert add.time_kind == "total"
    assert add.time_s == pytest.approx(0.01, **APPROX)
    assert add.placement.bound == "memory"
    assert add.placement.frac_of_roof == pytest.approx(0.3, **APPROX)  # 3e9 / 1e10
    assert ops["aten::copy_"].status == "no_flop_model"
    assert ops["aten::copy_"].time_kind == "self"
    assert ops["aten::copy_"].time_s == pytest.approx(0.003, **APPROX)
    assert ops["aten::foo"].status == "no_time"
    assert ops["aten::foo"].time_s is None
    # per-op FLOPs (2.001e9) vs 2e9 per step: within 1%, no coverage note
    assert not any("do not cover" in n for n in res.notes)
    assert any("inclusive host times" in n for n in res.notes)


def test_time_weighted_ranking(make_record):
    res = roofline(build_record(make_record))
    assert [o.op for o in res.ranking] == ["aten::mm", "aten::add_"]
    assert res.ranking[0].lost_time_s == pytest.approx(0.05 * 0.68, **APPROX)
    assert res.ranking[1].lost_time_s == pytest.approx(0.01 * 0.7, **APPROX)
    # make add_ much slower: it must now come first
    rec = build_record(make_record)
    rec["timeline"]["ops"][1]["total_time_s"] = 2.0
    rec["throughput"]["step_time"] = quantity(2.0, "s", "measured")  # so no scaling applies
    res = roofline(rec)
    assert [o.op for o in res.ranking] == ["aten::add_", "aten::mm"]


def test_hierarchical_modeled_without_counters(make_record):
    h = roofline(build_record(make_record)).hierarchical
    assert h.source == "modeled"
    assert {p.name for p in h.points} == {"aten::mm", "aten::add_"}
    assert all(p.level == "DRAM" and p.bytes_provenance == "modeled" for p in h.points)


def test_hierarchical_with_counters(make_record):
    rec = build_record(make_record)
    rec["ceilings"]["spec"] = {"l2_bandwidth": 5e10}
    rec["counters"] = {
        "tool": "ncu",
        "provenance": "measured",
        "window_steps": 2,
        "file": "c.json",
        "kernels": [
            {
                "name": "sgemm",
                "op": "aten::mm",
                "calls": 6,
                "time_s": 0.06,
                "flops": 1e9,
                "flops_tensor": 2e9,
                "dram_bytes": 5e7,
                "l2_bytes": 2e8,
            },
            {
                "name": "sgemm2",
                "op": "aten::mm",
                "calls": 6,
                "time_s": 0.04,
                "flops": None,
                "flops_tensor": None,
                "dram_bytes": None,
                "l2_bytes": None,
            },
            {
                "name": "elementwise",
                "op": None,
                "calls": 2,
                "time_s": 0.02,
                "flops": 1e6,
                "flops_tensor": None,
                "dram_bytes": 6e7,
                "l2_bytes": None,
            },
        ],
        "totals": {},
        "metrics": [],
        "notes": [],
    }
    h = roofline(rec).hierarchical
    assert h.source == "counters"
    assert h.levels == {"DRAM": 1e10, "L2": 5e10}
    pts = {(p.name, p.level): p for p in h.points}
    assert set(pts) == {("aten::mm", "DRAM"), ("aten::mm", "L2"), ("elementwise", "DRAM")}
    dram = pts[("aten::mm", "DRAM")].placement
    assert dram.time_s == pytest.approx(0.1)
    assert dram.intensity == pytest.approx(60.0, **APPROX)  # 3e9 / 5e7
    assert dram.bound == "compute"
    assert dram.frac_of_roof == pytest.approx(0.3, **APPROX)  # 3e10 / 1e11
    l2 = pts[("aten::mm", "L2")].placement
    assert l2.intensity == pytest.approx(15.0, **APPROX)
    assert pts[("aten::mm", "L2")].ceiling_bandwidth == 5e10
    assert pts[("elementwise", "DRAM")].placement.bound == "memory"
    assert all(p.bytes_provenance == "measured" for p in h.points)


def test_missing_ceilings_give_no_roof(make_record):
    rec = build_record(make_record)
    rec["ceilings"] = None
    res = roofline(rec)
    assert res.run.achieved_flops.value == pytest.approx(2e10)
    assert res.run.bound is None and res.run.frac_of_roof is None
    assert res.ranking == []
    assert any("ceilings missing" in n for n in res.notes)


def test_missing_flops_names_file_and_field(make_record):
    rec = build_record(make_record)
    rec["_path"] = "runs/x/run.json"
    rec["work"] = copy.deepcopy(rec["work"])
    del rec["work"]["flops_per_step"]
    with pytest.raises(RooflineInputError, match=r"runs/x/run.json: field work.flops_per_step"):
        roofline(rec)


def test_gpu_op_time_uses_inclusive_device_time_of_nested_kernels():
    """On CUDA the conv kernel belongs to aten::cudnn_convolution (a child of the modeled
    aten::convolution); the modeled op must be timed by its inclusive device time."""
    from perfsuite.analyzers.roofline.ops import op_rooflines

    rec = {
        "work": {
            "per_op": [
                {
                    "op": "aten::convolution",
                    "family": "convolution",
                    "phase": "forward",
                    "calls": 2,
                    "flops": 4e9,
                    "bytes": 1e8,
                }
            ]
        },
        "timeline": {
            "steps": 2,
            "ops": [
                {
                    "op": "aten::convolution",
                    "calls": 4,
                    "self_time_s": 1e-4,
                    "total_time_s": 2e-3,
                    "device_time_s": 0.0,
                    "device_total_time_s": 0.004,
                },
                {
                    "op": "aten::cudnn_convolution",
                    "calls": 4,
                    "self_time_s": 5e-4,
                    "total_time_s": 1e-3,
                    "device_time_s": 0.004,
                    "device_total_time_s": 0.004,
                },
            ],
        },
    }
    rows, _, _ = op_rooflines(rec)
    conv = next(r for r in rows if r.op == "aten::convolution")
    assert conv.time_s == 0.002  # 4 ms over 2 steps
    assert conv.placement.achieved_flops == 4e9 / 0.002


def test_too_low_roof_is_flagged_not_shown_as_fact(make_record):
    rec = build_record(make_record)
    # a roof 100x too low: mm reaches 3.2e10 FLOP/s against a 1e9 "peak"
    set_ceilings(rec, peak=quantity(1e9, "FLOP/s", "measured", "deliberately low"))
    res = roofline(rec)
    mm = next(o for o in res.ops if o.op == "aten::mm").placement
    assert mm.frac_of_roof is None and mm.frac_of_peak is None
    assert mm.over_roof == pytest.approx(32.0, **APPROX)
    assert "not a result" in mm.flag and "FLOPs over-counted" in mm.flag
    assert res.run.frac_of_roof is None and res.run.over_roof > 1.0
    assert "not a result" in res.run.flag
    assert any(n.startswith("whole run:") for n in res.notes)
    assert "aten::mm" not in [o.op for o in res.ranking]


def test_too_low_roof_in_cli_text(make_record, tmp_path, capsys):
    from perfsuite.cli import main
    from perfsuite.record import write_record

    rec = build_record(make_record)
    set_ceilings(rec, peak=quantity(1e9, "FLOP/s", "measured", "deliberately low"))
    path = write_record(tmp_path, rec)
    assert main(["roofline", str(path)]) == 0
    out = capsys.readouterr().out
    assert "FLAG >100%" in out and "FLAGGED (see notes)" in out
    assert "3200.0%" not in out


def test_recorded_math_policy_picks_the_roof_without_a_trace(make_record):
    from perfsuite.ceilings import match_spec

    rec = build_record(make_record)
    spec = {k: v for k, v in match_spec("NVIDIA H100 80GB HBM3").items() if k != "match"}
    rec["ceilings"] = {
        "device": "NVIDIA H100 80GB HBM3",
        "dtype": "float32",
        "spec": spec,
    }
    peak = quantity(5e13, "FLOP/s", "measured", "matmul fp32")
    set_ceilings(rec, peak=peak, bandwidth=quantity(3e12, "byte/s", "measured", "copy"))
    rec["math"] = {
        "cudnn_allow_tf32": True,
        "matmul_allow_tf32": True,
        "float32_matmul_precision": "high",
        "autocast_dtype": None,
        "param_dtype": "float32",
        "activation_dtype": "float32",
        "source": "read from torch at run time",
        "provenance": "measured",
    }
    res = roofline(rec)
    assert res.math_source == "read from torch at run time"
    mm = next(o for o in res.ops if o.op == "aten::mm").placement
    assert (mm.math, mm.math_evidence, mm.peak) == ("tf32", "policy", 494.5e12)  # spec TF32
    add = next(o for o in res.ops if o.op == "aten::add_").placement
    assert (add.math, add.peak) == ("fp32", 5e13)  # measured CUDA-core roof
    assert res.run.roofs_used["tf32"].provenance == "spec"
    assert res.run.flops_by_math == {"tf32": 1.6e9, "fp32": 1e6 + 4e8}
    # blend: mm max(1.6e9/494.5e12, 3e7/3e12) + add_ max(1e6/5e13, 3e7/3e12)
    #        + foo max(4e8/5e13, 1e7/3e12)
    roof_t = max(1.6e9 / 494.5e12, 1e-5) + max(2e-8, 1e-5) + max(8e-6, 1e7 / 3e12)
    assert res.run.roof_time.value == pytest.approx(roof_t, **APPROX)
    assert res.run.frac_of_roof == pytest.approx(roof_t / 0.1, **APPROX)


def _cpu_bf16(make_record, **math):
    rec = build_record(make_record)
    rec["math"] = {
        "cudnn_allow_tf32": True,
        "matmul_allow_tf32": False,
        "float32_matmul_precision": "highest",
        "autocast_dtype": "bfloat16",
        "param_dtype": "float32",
        "activation_dtype": "bfloat16",
        "source": "read from torch at run time",
        "provenance": "measured",
        **math,
    }
    return rec


def test_ops_in_a_math_without_a_roof_leave_the_whole_run_fraction_out(make_record):
    from perfsuite.analyzers.roofline.utilization import utilization
    from perfsuite.views.roofline_rows import roof_rows

    res = roofline(_cpu_bf16(make_record))  # bf16 instructions unknown: judged as bf16
    mm = next(o for o in res.ops if o.op == "aten::mm").placement
    assert mm.math == "bf16" and mm.frac_of_roof is None
    r = res.run
    assert r.unroofed_flops == {"bf16": 1.6e9}
    assert r.frac_of_roof is None and r.peak_flops.value is None and r.roof_time.value is None
    note = next(n for n in res.notes if n.startswith("no bf16 roof in the record or --peaks"))
    assert "80.0% of the counted FLOPs" in note and "--dtype bfloat16" in note
    assert roof_rows(res)[0][:4] == ["bf16 peak", "none", "80.0%", "absent"]
    assert utilization(_cpu_bf16(make_record)).measured_peak is None


def test_autocast_on_a_cpu_without_its_instructions_is_judged_in_fp32(make_record):
    res = roofline(_cpu_bf16(make_record, autocast_native=False))
    mm = next(o for o in res.ops if o.op == "aten::mm").placement
    assert (mm.math, mm.peak) == ("fp32", 1e11)
    assert res.run.unroofed_flops == {}
    assert res.run.roof_time.value == pytest.approx(0.023, **APPROX)  # as the fp32 run
    assert res.run.frac_of_roof == pytest.approx(0.23, **APPROX)
    assert any("without bfloat16 instructions" in n and "fp32 roof" in n for n in res.notes)


def test_a_rate_above_the_peak_is_flagged_without_intensity():
    """No bytes (so no ridge and no bound): 10x the peak is still flagged, never a fraction."""
    from perfsuite.analyzers.roofline.points import place

    p = place(1e12, None, 1.0, 1e11, 1e9)
    assert p.frac_of_peak is None and p.frac_of_roof is None
    assert p.over_roof == pytest.approx(10.0) and p.flag.startswith("1000% of its roof")
    assert place(1e10, None, 1.0, 1e11, 1e9).frac_of_peak == pytest.approx(0.1)


def test_hierarchical_group_with_an_untimed_kernel_has_no_rate(make_record):
    rec = build_record(make_record)
    kernel = {"name": "sgemm", "op": "aten::mm", "calls": 1, "flops": 1e9, "flops_tensor": None,
              "dram_bytes": 5e7, "l2_bytes": None}  # fmt: skip
    rec["counters"] = {"tool": "ncu", "provenance": "measured", "window_steps": 1, "file": "c",
                       "kernels": [{**kernel, "time_s": 0.01}, {**kernel, "time_s": None}],
                       "totals": {}, "metrics": [], "notes": []}  # fmt: skip
    (pt,) = roofline(rec).hierarchical.points
    assert pt.placement.flops == 2e9 and pt.placement.time_s is None
    assert pt.placement.achieved_flops is None and pt.placement.flag is None


def test_an_older_record_without_counted_calls_keeps_its_joins(make_record):
    """`calls` is optional in work.per_op: without it no op can be told to differ."""
    rec = build_record(make_record)
    rec["work"] = copy.deepcopy(rec["work"])
    for op in rec["work"]["per_op"]:
        op.pop("calls", None)
    res = roofline(rec)
    assert {o.op: o.status for o in res.ops if o.op in ("aten::mm", "aten::add_")} == {
        "aten::mm": "joined",
        "aten::add_": "joined",
    }
    assert sorted(o.op for o in res.ranking) == ["aten::add_", "aten::mm"]


def test_no_bandwidth_roof_keeps_the_compute_roof(make_record):
    """A record with a compute roof but no bandwidth still has its blended peak (a digits
    record: peak_flops 73.1 GFLOP/s, frac_of_peak 8.0%); only roof time, ridge, bound go."""
    rec = build_record(make_record)
    set_ceilings(rec, bandwidth=None)
    res = roofline(rec)
    r = res.run
    # every op's math is fp32 with a 1e11 roof: the blend is 1e11, achieved 2e9 / 0.1 s
    assert r.peak_flops.value == pytest.approx(1e11, **APPROX)
    assert r.frac_of_peak == pytest.approx(0.2, **APPROX)
    # mm 1.6e9 + add_ 1e6 + foo 4e8, all fp32
    assert r.flops_by_math == {"fp32": pytest.approx(2.001e9, **APPROX)}
    assert list(r.roofs_used) == ["fp32"]
    assert r.ridge.value is None and r.bound is None and r.roof_time.value is None
    assert r.frac_of_roof is None and r.memory_bandwidth.value is None
    assert r.peak_flops.source == "blend of roofs: fp32 measured"
    missing = next(n for n in res.notes if n.startswith("ceilings missing:"))
    assert "no memory bandwidth roof" in missing


def test_no_bandwidth_roof_still_flags_a_run_above_its_peak(make_record):
    rec = build_record(make_record)
    set_ceilings(rec, bandwidth=None)
    set_ceilings(rec, peak=quantity(1e10, "FLOP/s", "measured", "matmul"))
    r = roofline(rec).run
    # 2e10 FLOP/s achieved over a 1e10 peak: 200%, a flag, never a fraction
    assert r.frac_of_peak is None and r.over_roof == pytest.approx(2.0, **APPROX)
    assert r.flag.startswith("the step would take 200% of its measured time")


def test_blended_peak_source_names_compute_roofs_only(make_record):
    r = roofline(build_record(make_record)).run
    assert r.peak_flops.source == "blend of roofs: fp32 measured"  # no "memory measured"
    assert set(r.roofs_used) == {"fp32", "memory"}
