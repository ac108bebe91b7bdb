"""Per-op times reconciled with the measured step: the rows always add up to it."""

from __future__ import annotations

import math
import statistics

import pytest

from perfsuite.analyzers.roofline.reconcile import (
    OTHER,
    is_device_row,
    own_time,
    own_times,
    reconcile,
    reconcile_timeline,
)
from perfsuite.record import quantity


def _record(step_s, measured_in_epoch=None):
    rec = {
        "throughput": {"step_time": quantity(step_s, "s", "measured", "run clock")},
        "timeline": {
            "steps": 2,
            "ops": [
                {
                    "op": "aten::mm",
                    "calls": 4,
                    "self_time_s": 0.01,
                    "total_time_s": 0.3,
                    "device_time_s": 0.25,
                    "device_total_time_s": 0.25,
                },
                {
                    "op": "aten::add",
                    "calls": 2,
                    "self_time_s": 0.01,
                    "total_time_s": 0.02,
                    "device_time_s": 0.125,
                    "device_total_time_s": 0.125,
                },
                # a kernel row of key_averages: device time, no host time; not an op
                {
                    "op": "ampere_sgemm_128x64_tn",
                    "calls": 4,
                    "self_time_s": 0.0,
                    "total_time_s": 0.0,
                    "device_time_s": 0.25,
                    "device_total_time_s": 0.25,
                },
            ],
        },
    }
    if measured_in_epoch is not None:
        rec["timeline"]["measured_step_time"] = quantity(measured_in_epoch, "s", "measured")
    return rec


def test_rows_sum_to_measured_exactly_with_other():
    r = reconcile_timeline(_record(0.25))
    assert [t.name for t in r.rows] == ["aten::mm", "aten::add", OTHER]
    assert [t.time_s for t in r.rows] == [0.125, 0.0625, 0.0625]
    assert [t.share for t in r.rows] == [0.5, 0.25, 0.25]
    assert sum(t.time_s for t in r.rows) == 0.25  # exactly: dyadic values
    assert r.scale == 1.0 and r.rows[0].provenance == "measured"
    assert r.other.provenance == "derived"


def test_measured_step_time_of_the_window_epoch_is_preferred():
    r = reconcile_timeline(_record(0.25, measured_in_epoch=0.5))
    assert r.measured_step_s == 0.5 and r.other.time_s == 0.3125
    assert r.measured_source.startswith("timeline.measured_step_time")


def test_profiled_sum_above_measured_is_scaled_and_labeled_modeled():
    r = reconcile_timeline(_record(0.125))  # profiled 0.1875 s per step > 0.125 s measured
    assert r.scale == pytest.approx(0.125 / 0.1875)
    assert [t.provenance for t in r.rows[:-1]] == ["modeled", "modeled"]
    assert r.rows[0].time_s == pytest.approx(0.125 * 2 / 3)
    assert r.rows[0].profiled_s == 0.125
    assert r.other.time_s == 0.0
    assert math.fsum(t.time_s for t in r.rows) == pytest.approx(0.125, rel=1e-15)
    assert "scaled" in r.notes[0]


def test_realistic_values_add_up():
    times = {"a": 0.0031, "b": 0.00173, "c": 1.1e-5}
    r = reconcile(times, 0.016012205448979612)
    assert math.fsum(t.time_s for t in r.rows) == pytest.approx(0.016012205448979612, rel=1e-15)
    assert math.fsum(t.share for t in r.rows) == pytest.approx(1.0, rel=1e-15)
    with pytest.raises(ValueError, match="positive"):
        reconcile(times, 0.0)


class _Ev:
    """The FunctionEvent attributes step_cvs reads."""

    def __init__(self, name, start_us, end_us, cpu_us=0.0, device_us=0.0, on_device=False):
        from torch.autograd import DeviceType

        self.name, self.cpu_time_total, self.device_time_total = name, cpu_us, device_us
        self.time_range = type("R", (), {"start": start_us, "end": end_us})()
        self.device_type = DeviceType.CUDA if on_device else DeviceType.CPU


def test_step_cv_is_the_spread_of_an_ops_time_across_the_window_steps():
    from perfsuite.runner.engine.profile_window import step_cvs

    events = [_Ev("ProfilerStep#3", 0, 100), _Ev("ProfilerStep#4", 100, 200)]
    events += [_Ev("ProfilerStep#5", 200, 300)]
    # aten::mm: 10, 20, 30 us in steps 3, 4, 5 (two calls in step 4): mean 20, stdev 10
    events += [_Ev("aten::mm", 5, 15, 10), _Ev("aten::mm", 110, 120, 10)]
    events += [_Ev("aten::mm", 150, 160, 10), _Ev("aten::mm", 210, 240, 30)]
    events += [_Ev("aten::add", 20, 25, 6)]  # one step only: times 6, 0, 0
    events += [_Ev("aten::mm", 400, 500, 1000)]  # after the last step: not counted
    cvs = step_cvs(events, on_gpu=False)
    assert cvs["aten::mm"] == pytest.approx(0.5)
    assert cvs["aten::add"] == pytest.approx(math.sqrt(3))  # stdev(6,0,0)=sqrt(12), mean 2
    # on GPUs the device time is the op's time
    gpu = [_Ev("ProfilerStep#1", 0, 10), _Ev("ProfilerStep#2", 10, 20)]
    gpu += [_Ev("k", 1, 2, cpu_us=5, device_us=4), _Ev("k", 11, 12, cpu_us=5, device_us=8)]
    assert step_cvs(gpu, on_gpu=True)["k"] == pytest.approx(math.sqrt(8) / 6)
    assert step_cvs(gpu[:1], on_gpu=False) == {}  # one step: no spread


def test_step_cv_on_a_gpu_keeps_host_and_device_copies_of_the_steps_apart():
    """On a GPU every ProfilerStep appears twice: the host range and its device copy
    (`gpu_user_annotation`), which starts later and overlaps the next host step. Mixed into one
    list they split each op between alternate half-steps and every CV read ~100% (seen on an
    H200 run); kept apart, an op that takes the same time every step has no spread."""
    from perfsuite.runner.engine.profile_window import step_cvs

    events = []
    for k in range(4):
        t = 100.0 * k
        events += [_Ev(f"ProfilerStep#{k}", t, t + 100)]
        events += [_Ev(f"ProfilerStep#{k}", t + 60, t + 150, on_device=True)]
        # the host op starts inside the host step; its kernel runs in the device copy
        events += [_Ev("aten::convolution", t + 70, t + 80, cpu_us=10, device_us=40 + k % 2)]
        events += [
            _Ev("sm90_xmma_fprop", t + 100, t + 140 + k % 2, device_us=40 + k % 2, on_device=True)
        ]
        events += [_Ev("sm90_xmma_fprop", t + 141, t + 142, device_us=1, on_device=True)]
    cvs = step_cvs(events, on_gpu=True)
    spread = statistics.stdev([40, 41, 40, 41]) / 40.5
    assert cvs["aten::convolution"] == pytest.approx(spread)
    # the kernel: 41, 42, 41, 42 us per device step (two launches each)
    assert cvs["sm90_xmma_fprop"] == pytest.approx(statistics.stdev([41, 42, 41, 42]) / 41.5)
    assert "ProfilerStep#0" not in cvs


def test_step_cv_reaches_the_roofline_rows():
    from perfsuite.analyzers.roofline.ops import op_rooflines

    rec = _record(1.0)
    rec["timeline"]["ops"][0]["step_cv"] = 0.25
    rec["work"] = {
        "per_op": [{"op": "aten::mm", "phase": "forward", "calls": 2, "flops": 1e9, "bytes": 1e6}]
    }
    rows, _, _ = op_rooflines(rec)
    assert next(r for r in rows if r.op == "aten::mm").step_cv == 0.25


@pytest.mark.parametrize(("window_s", "apart"), [(0.2, None), (0.01, "25.0x apart")])
def test_a_window_far_from_the_clock_is_said(window_s, apart):
    """Window steps far faster than the clock's (a digits run: 15 ms against 381 ms) leave
    most of the step "not attributed": said in a note; 1.25x apart is normal (profiler cost)."""
    rec = _record(0.25)
    rec["timeline"]["step_time"] = quantity(window_s, "s", "measured", "profiled steps")
    notes = reconcile_timeline(rec).notes
    if apart is None:
        assert notes == []
    else:
        (note,) = notes
        assert apart in note and "the clock's steps were slowed" in note
        assert note.startswith("the profile window's steps took 10 ms each,")
        assert "the clock's 250 ms" in note and note.endswith("takes the rest")
    rec["timeline"]["step_time"] = quantity(1.0, "s", "measured", "profiled steps")
    (note,) = reconcile_timeline(rec).notes
    assert "the window's steps were slowed" in note and note.endswith("past it (modeled)")


# -----------------------------------------------------------------------------------------------
# One own (self) time per op row, perfsuite.analyzers.reconcile.own_time: per row for the roofline's
# per-op rows (next to that row's time), one basis per record for the reconciled step sum (host
# and device times are never added together).


GPU_OP = {"op": "aten::mm", "calls": 2, "self_time_s": 0.01, "total_time_s": 0.3,
          "device_time_s": 0.25, "device_total_time_s": 0.5}  # fmt: skip
HOST_OP = {"op": "aten::empty", "calls": 2, "self_time_s": 0.125, "total_time_s": 0.25,
           "device_time_s": None, "device_total_time_s": None}  # fmt: skip
KERNEL = {"op": "sm90_gemm", "calls": 2, "self_time_s": 0.0, "total_time_s": 0.0,
          "device_time_s": 0.25, "device_total_time_s": 0.25}  # fmt: skip


def _ops_record(*ops):
    return {
        "throughput": {"step_time": quantity(1.0, "s", "measured", "run clock")},
        "timeline": {"steps": 2, "ops": [dict(o) for o in ops]},
    }


def test_own_time_by_basis():
    assert own_time(GPU_OP) == own_time(GPU_OP, "device") == 0.25
    assert own_time(GPU_OP, "host") == 0.01
    assert own_time(HOST_OP) == own_time(HOST_OP, "host") == 0.125
    assert own_time(HOST_OP, "device") == 0.0  # no device time recorded: none of its own
    # device time recorded only inclusively: nothing of its own on the device
    assert own_time({**GPU_OP, "device_time_s": None}) == 0.0
    with pytest.raises(ValueError, match="basis"):
        own_time(GPU_OP, "self")  # type: ignore[arg-type]


def test_own_times_skip_kernel_rows_and_keep_zero_ops():
    assert is_device_row(KERNEL) and not is_device_row(GPU_OP) and not is_device_row(HOST_OP)
    rec = _ops_record(GPU_OP, HOST_OP, KERNEL, {**GPU_OP, "device_time_s": 0.0})
    assert own_times(rec) == {"aten::mm": 0.125, "aten::empty": 0.0625}
    assert own_times(rec, "device") == {"aten::mm": 0.125, "aten::empty": 0.0}
    assert own_times({"timeline": {"steps": 0, "ops": [GPU_OP]}}) == {}


def test_reconciled_sum_takes_one_basis_per_record():
    """A GPU record with an op row without device time: the reconciled rows add device self
    times only (the host op counts 0 and is left out), the roofline row keeps its host self
    time next to its host time."""
    from perfsuite.analyzers.roofline.ops import op_rooflines

    rec = _ops_record(GPU_OP, HOST_OP, KERNEL)
    r = reconcile_timeline(rec)
    assert r.time_kind == "device self"
    assert [(t.name, t.time_s) for t in r.rows] == [("aten::mm", 0.125), (OTHER, 0.875)]
    cpu = _ops_record(HOST_OP, {**GPU_OP, "device_time_s": None, "device_total_time_s": None})
    r = reconcile_timeline(cpu)
    assert r.time_kind == "host self"
    assert [(t.name, t.time_s) for t in r.rows[:-1]] == [
        ("aten::empty", 0.0625),
        ("aten::mm", 0.005),
    ]

    rows = {o.op: o for o in op_rooflines(rec)[0]}
    assert rows["aten::empty"].time_kind == "total" and rows["aten::empty"].time_s == 0.125
    assert rows["aten::empty"].own_time_s == 0.0625 and not rows["aten::empty"].wrapper
    assert rows["aten::mm"].own_time_s == 0.125 and rows["aten::mm"].time_s == 0.25
    assert "sm90_gemm" not in rows
