"""One own (self) time per op row, analyzers.roofline.reconcile.own_time: per row for the roofline's
per-op rows (next to that row's time), one basis per record for the reconciled step sum (host
and device times are never added together)."""

from __future__ import annotations

import pytest

from analyzers.roofline.reconcile import (
    OTHER,
    is_device_row,
    own_time,
    own_times,
    reconcile_timeline,
)
from perfsuite.record import quantity

GPU_OP = {"op": "aten::mm", "calls": 2, "self_time_s": 0.01, "total_time_s": 0.3,
          "device_time_s": 0.25, "device_total_time_s": 0.5}  # fmt: skip
HOST_OP = {"op": "aten::empty", "calls": 2, "self_time_s": 0.125, "total_time_s": 0.25,
           "device_time_s": None, "device_total_time_s": None}  # fmt: skip
KERNEL = {"op": "sm90_gemm", "calls": 2, "self_time_s": 0.0, "total_time_s": 0.0,
          "device_time_s": 0.25, "device_total_time_s": 0.25}  # fmt: skip


def _record(*ops):
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
    rec = _record(GPU_OP, HOST_OP, KERNEL, {**GPU_OP, "device_time_s": 0.0})
    assert own_times(rec) == {"aten::mm": 0.125, "aten::empty": 0.0625}
    assert own_times(rec, "device") == {"aten::mm": 0.125, "aten::empty": 0.0}
    assert own_times({"timeline": {"steps": 0, "ops": [GPU_OP]}}) == {}


def test_reconciled_sum_takes_one_basis_per_record():
    """A GPU record with an op row without device time: the reconciled rows add device self
    times only (the host op counts 0 and is left out), the roofline row keeps its host self
    time next to its host time."""
    from analyzers.roofline.ops import op_rooflines

    rec = _record(GPU_OP, HOST_OP, KERNEL)
    r = reconcile_timeline(rec)
    assert r.time_kind == "device self"
    assert [(t.name, t.time_s) for t in r.rows] == [("aten::mm", 0.125), (OTHER, 0.875)]
    cpu = _record(HOST_OP, {**GPU_OP, "device_time_s": None, "device_total_time_s": None})
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
