"""Utilization over measured and spec ceilings, SM-clock throttling, CPU summary."""

from __future__ import annotations

import pytest

from perfsuite.analyzers.roofline.utilization import clock_summary, utilization
from perfsuite.ceilings import match_spec
from perfsuite.record import quantity
from perfsuite.record.maths import assumed_math
from tests.helpers import build_record, set_ceilings


def _gpu_record(make_record, clock_mean):
    rec = build_record(make_record)
    spec = {k: v for k, v in match_spec("NVIDIA A100-SXM4-80GB").items() if k != "match"}
    peak = quantity(2e14, "FLOP/s", "measured", "matmul")
    bandwidth = quantity(1.6e12, "byte/s", "measured", "copy")
    rec["ceilings"] = {
        "device": "NVIDIA A100-SXM4-80GB",
        "dtype": "bfloat16",
        "peak_flops": peak,
        "memory_bandwidth": bandwidth,
        "spec": spec,
        "roofs": {"bf16": {"peak_flops": peak}, "memory": {"bandwidth": bandwidth}},
    }
    rec["math"] = assumed_math(rec)  # PyTorch's defaults, matrix ops in the bf16 dtype
    rec["throughput"]["step_time"] = quantity(1e-4, "s", "measured")
    rec["telemetry"] = {
        "sampler": "nvml",
        "interval_s": 0.5,
        "samples": 10,
        "file": None,
        "cpu": {
            "util_pct_mean": 95.0,
            "util_pct_max": 100.0,
            "rss_bytes_mean": 1e9,
            "rss_bytes_max": 2e9,
        },
        "gpu": {
            "name": "NVIDIA A100-SXM4-80GB",
            "util_pct_mean": 88.0,
            "sm_clock_hz_mean": clock_mean,
            "sm_clock_hz_min": 9e8,
            "sm_clock_hz_max_spec": None,
            "power_w_mean": 390.0,
            "mem_used_bytes_max": 3e10,
        },
        "notes": [],
    }
    return rec


def test_rates_over_measured_and_spec(make_record):
    u = utilization(_gpu_record(make_record, 1.41e9))
    # mm is matrix work in the record's dtype (bf16: measured 2e14), add_ and foo are not
    # (fp32: spec only), so there is no all-measured blend; spec: FLOP-weighted harmonic blend
    spec_blend = 2.001e9 / (1.6e9 / 312e12 + 4.01e8 / 19.5e12)
    assert u.measured_peak is None and u.spec_peak == pytest.approx(spec_blend)
    assert u.measured_bandwidth == 1.6e12 and u.spec_bandwidth == 2039e9
    # 2e9 FLOP / 1e-4 s = 2e13 FLOP/s; 1e8 byte / 1e-4 s = 1e12 byte/s
    assert u.run.achieved_flops == pytest.approx(2e13)
    assert u.run.of_measured_peak is None
    assert u.run.of_spec_peak == pytest.approx(2e13 / spec_blend)
    assert u.run.of_measured_bandwidth == pytest.approx(1e12 / 1.6e12)
    assert u.run.of_spec_bandwidth == pytest.approx(1e12 / 2039e9)
    mm = next(r for r in u.ops if r.scope == "aten::mm")
    # profiled mm 0.05 s + add_ 0.01 s per step exceed the measured 1e-4 s step: op times are
    # scaled to their shares of the measured step (mm: 0.05/0.06 of 1e-4 s)
    assert mm.achieved_flops == pytest.approx(1.6e9 / (1e-4 * 0.05 / 0.06))
    assert {r.scope for r in u.ops} == {"aten::mm", "aten::add_"}
    assert u.gpu_util_pct_mean == 88.0 and u.gpu_power_w_mean == 390.0
    assert u.cpu.util_pct_mean == 95.0 and u.cpu.rss_bytes_max == 2e9


def test_full_clock_is_not_throttled(make_record):
    u = utilization(_gpu_record(make_record, 1.41e9))
    assert u.clock.sm_clock_hz_max_spec == 1410e6  # from the spec table
    assert u.clock.mean_of_max == pytest.approx(1.0)
    assert u.clock.min_of_max == pytest.approx(9e8 / 1.41e9)
    assert u.clock.throttled is False
    assert not any("throttled" in n for n in u.notes)


def test_throttled_clock_is_visible(make_record):
    u = utilization(_gpu_record(make_record, 1.1e9))
    assert u.clock.mean_of_max == pytest.approx(1.1e9 / 1.41e9)
    assert u.clock.throttled is True
    assert any("throttled" in n and "78%" in n for n in u.notes)


def test_telemetry_max_clock_wins_and_missing_is_unknown():
    c = clock_summary(
        {
            "gpu": {
                "sm_clock_hz_mean": 1.5e9,
                "sm_clock_hz_min": 1.4e9,
                "sm_clock_hz_max_spec": 1.98e9,
            }
        },
        {"max_sm_clock_hz": 1.41e9},
    )
    assert c.sm_clock_hz_max_spec == 1.98e9 and c.throttled is True
    c = clock_summary({"gpu": {"sm_clock_hz_mean": 1.5e9}}, None)
    assert c.throttled is None
    assert clock_summary({"gpu": None}, None) is None


def test_cpu_run_with_only_measured_ceilings(make_record):
    u = utilization(build_record(make_record))
    assert u.spec_peak is None and u.clock is None and u.cpu is None
    assert u.run.of_measured_peak == pytest.approx(0.2)
    assert u.run.of_spec_peak is None


def test_spec_provenance_peak_counts_as_spec(make_record):
    rec = build_record(make_record)
    set_ceilings(rec, peak=quantity(4e10, "FLOP/s", "spec", "user-set"))
    u = utilization(rec)
    assert u.measured_peak is None and u.spec_peak == 4e10
    assert u.run.of_spec_peak == pytest.approx(0.5)
