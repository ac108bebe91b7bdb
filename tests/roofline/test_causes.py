"""The cause named for a point above its roof follows the record's evidence: a CPU peak measured
on a busy machine, with fewer threads than the run, or by a smaller matmul comes first; a wrong
math only when a faster roof would hold the point."""

from __future__ import annotations

import copy

import pytest

from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.record import quantity
from perfsuite.record.migrate import migrate
from tests.helpers import cpu_record

LOADED = {
    "threads": 2,
    "size": 2048,
    "mode": "quick",
    "load_before": 15.2,
    "load_after": 15.6,
    "cpus": 2,
    "busy_limit": 0.5,
    "busy": True,
    "cached": False,
}


def _threads_2_vs_1(note: str) -> bool:
    """The note says the roof's thread count (2) and the run's (1)."""
    return ("2 threads" in note and note.rstrip().endswith("used 1")) or "used 1 " in note


def _mm(res):
    return next(o for o in res.ops if o.op == "aten::mm").placement


def test_loaded_peak_is_named_first_and_no_math_blamed(make_record):
    res = roofline(cpu_record(make_record, LOADED))
    mm = _mm(res)
    assert mm.frac_of_roof is None and mm.over_roof == pytest.approx(32.0)
    assert "measured peak is too low" in mm.flag  # with the load it was measured at
    assert all(v in mm.flag for v in ("15.20", "15.60", "2 CPUs", "2 threads"))
    assert mm.flag.index("peak is too low") < mm.flag.index("FLOPs over-counted")
    assert "wrong math" not in mm.flag and "a low roof" not in mm.flag
    assert "fp32 peak is too low" in res.run.flag and "15.20" in res.run.flag
    assert "wrong math" not in res.run.flag
    assert any("fp32 roof: measured on a busy machine" in n for n in res.notes)


def test_quiet_peak_keeps_the_model_first(make_record):
    quiet = {**LOADED, "load_before": 0.1, "load_after": 0.3, "busy": False, "cached": True}
    mm = _mm(roofline(cpu_record(make_record, quiet)))
    assert "peak is too low" not in mm.flag and "wrong math" not in mm.flag
    assert mm.flag.index("FLOPs over-counted") < mm.flag.index("or a low roof")
    assert "load at measurement not recorded" not in mm.flag


def test_old_record_without_load_says_unknown_not_busy(make_record):
    res = roofline(cpu_record(make_record, None))
    mm = _mm(res)
    assert "peak is too low" not in mm.flag
    assert mm.flag.endswith("(load at measurement not recorded)") and "a low roof" in mm.flag
    assert any("load at measurement not recorded" in n for n in res.notes)
    # memory-bound: the same for the copy roof (bytes 1000x the model: above the bandwidth)
    rec = cpu_record(make_record, None, peak=1e15)
    for row in rec["work"]["per_op"]:
        row["bytes"] *= 1000
    mm = _mm(roofline(rec))
    assert mm.bound == "memory" and mm.flag.startswith(
        "6000% of its roof"
    )  # 3e10 byte / 0.05 s / 1e10
    assert mm.flag.endswith("(load at measurement not recorded)")


def test_fewer_threads_than_the_run_and_a_smaller_benchmark(make_record):
    few = {**LOADED, "busy": False, "load_before": 0.1, "threads": 1, "size": 256}
    res = roofline(cpu_record(make_record, few, run_threads=2))
    flag = _mm(res).flag
    head = flag.split("likely ", 1)[1]
    assert head.startswith("the measured peak is too low") and "1 thread" in head
    # 2 x 256^3 = 3.36e7 FLOP per benchmark product; aten::mm does 1.6e9 / 6 per call
    assert "n=256 matmul, 3.36e+07 FLOP" in flag
    assert "this op 2.67e+08 FLOP per call" in flag


def test_one_thread_run_judged_by_a_two_thread_peak_is_said(make_record):
    """Peaks are per thread count; a record mixing them (e.g. a --peaks file) must say so."""
    quiet = {**LOADED, "busy": False, "load_before": 0.1}
    res = roofline(cpu_record(make_record, quiet, run_threads=1, peak=1e12))
    assert [n for n in res.notes if n.startswith("fp32 roof: ") and _threads_2_vs_1(n)]
    assert _mm(res).flag is None  # under its roof: not a cause, only the note
    # a version-3 record named the threads only in the roof's source text: migrated at load
    older = {**cpu_record(make_record, None, run_threads=1, peak=1e12), "schema_version": 3}
    assert not [n for n in roofline(older).notes if _threads_2_vs_1(n)]
    assert [n for n in roofline(migrate(older)).notes if _threads_2_vs_1(n)]


def test_wrong_math_only_when_a_faster_roof_would_hold_it(make_record):
    rec = cpu_record(make_record, None)
    rec["environment"] = {"device": "cuda:0"}
    rec["math"] = {
        "source": "test policy",
        "param_dtype": "float32",
        "cudnn_allow_tf32": True,
        "matmul_allow_tf32": False,
        "float32_matmul_precision": "highest",
    }
    gpu = copy.deepcopy(rec)
    gpu["ceilings"]["roofs"]["tf32"] = {"peak_flops": quantity(1e11, "FLOP/s", "spec", "datasheet")}
    flag = _mm(roofline(gpu)).flag
    assert "wrong math assumed" in flag and "a tf32 roof would hold it" in flag
    assert "peak is too low" not in flag  # a GPU: the host load says nothing
    gpu["ceilings"]["roofs"]["tf32"]["peak_flops"]["value"] = 2e10  # below 32 x 1e9
    assert "wrong math" not in _mm(roofline(gpu)).flag


@pytest.mark.parametrize(
    ("measured", "says"),
    [
        (8e8, ("(0.50x)", "over-counts", "1600%")),  # half the counted FLOP: still above
        (1.6e9, ("(1.00x)", "not the FLOP model")),
    ],
)  # fmt: skip
def test_op_counters_weigh_the_model_cause(make_record, measured, says):
    """With hardware counters attributed to the op (emit_nvtx ranges), the note of a point
    above its roof says whether the FLOP model over-counts, and where the point would sit on
    the measured FLOP; without op ranges nothing is added."""
    rec = cpu_record(make_record, None)  # 3.2e10 FLOP/s against a 1e9 roof: 3200%
    kernel = {"name": "gemm", "ranges": ["perfsuite.steps", "aten::mm"], "flops": measured * 2,
              "flops_tensor": 0.0, "dram_bytes": 1e7}  # fmt: skip
    rec["counters"] = {"window_steps": 2, "kernels": [kernel]}
    note = next(n for n in roofline(rec).notes if n.startswith("aten::mm ("))
    assert all(v in note[note.index("counters (ncu") :] for v in says)
    seen = "800 MFLOP" if measured < 1e9 else "1.6 GFLOP"
    assert f"{seen} per step against 1.6 GFLOP" in note
    kernel["ranges"] = ["perfsuite.steps"]
    note = next(n for n in roofline(rec).notes if n.startswith("aten::mm ("))
    assert "counters (ncu" not in note
