"""Per-op times reconciled with the measured step: the rows always add up to it."""

from __future__ import annotations

import math

import pytest

from analyzers.reconcile import OTHER, reconcile, reconcile_timeline
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
