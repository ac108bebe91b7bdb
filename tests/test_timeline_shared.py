"""Trace analysis on every real trace in ../shared/data/traces.

Expected values were computed independently of perfsuite.analyzers.timeline: a brute-force script on
json.load output (endpoint sweep for unions, linear search for the enclosing cpu_op) and,
where HTA can parse the trace, HTA itself (see test_timeline_hta.py).
"""

from __future__ import annotations

from functools import cache

import pytest

from perfsuite.analyzers.timeline import analyze_file
from tests.conftest import shared_path

pytestmark = pytest.mark.shared
US = 1e-6

AMD = "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
CPU = "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
ALEXNET = "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
CUPTI = "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz"
RANK0 = "trace_filter__sampled_rank-0.json.gz"
RANK1 = "trace_filter__sampled_rank-1.json.gz"


@cache
def _analysis(name: str):
    return analyze_file(shared_path("traces", name), top=0)


def analysis(name: str):
    shared_path("traces", name)  # skip (or fail in CI) when the data is absent
    return _analysis(name)


def cats(dev):
    return {c.category: (c.count, c.total_s, c.busy_s) for c in dev.categories}


def test_a100_alexnet():
    a = analysis(ALEXNET)
    assert a.rank == 0 and a.events == 1408
    (dev,) = a.devices
    assert dev.name == "NVIDIA A100-PG509-200"
    assert dev.events == 98
    c = cats(dev)
    assert c["compute"] == (79, pytest.approx(10692 * US), pytest.approx(10630 * US))
    assert c["memcpy"] == (16, pytest.approx(55503 * US), pytest.approx(55503 * US))
    assert c["memset"] == (3, pytest.approx(8 * US), pytest.approx(8 * US))
    assert dev.busy_s == pytest.approx(66141 * US)
    assert dev.span_s == pytest.approx(12920244 * US)
    assert dev.idle_s == pytest.approx(12854103 * US)
    assert dev.idle.gaps == 95
    assert dev.idle.host_wait_s == pytest.approx(9796030 * US)
    # A 3,055,567 µs cudaLaunchKernel (the first cuDNN kernel's lazy load) sits in a 10 s gap:
    # that is time inside the launch call, not work waiting on the device (it was all counted
    # as queued, 3,058,073 µs, before the in-launch bucket).
    assert dev.idle.in_launch_s == pytest.approx(3057927 * US)
    assert dev.idle.queued_s == pytest.approx(146 * US)
    assert {s.stream: s.events for s in dev.streams} == {7: 91, 20: 7}
    assert dev.sync_records == 41
    ops = {o.name: o for o in a.ops}
    assert ops["aten::copy_"].device_time_s == pytest.approx(55503 * US)
    assert ops["aten::cudnn_convolution"].device_time_s == pytest.approx(5375 * US)
    assert ops["aten::addmm"].device_time_s == pytest.approx(2664 * US)
    assert a.unmapped_device_time_s == 0


def test_nccl_ranks():
    r0, r1 = analysis(RANK0), analysis(RANK1)
    assert (r0.rank, r1.rank) == (0, 1)
    d0, d1 = r0.devices[0], r1.devices[0]
    assert (d0.device, d1.device) == (0, 1)
    c0 = cats(d0)
    assert c0["compute"] == (1144, pytest.approx(210320 * US), pytest.approx(210320 * US))
    assert c0["communication"] == (10, pytest.approx(396199 * US), pytest.approx(396199 * US))
    assert c0["memcpy"][:2] == (40, pytest.approx(1297 * US))
    assert c0["memset"][:2] == (10, pytest.approx(28 * US))
    assert d0.busy_s == pytest.approx(547656 * US)
    assert d0.idle_s == pytest.approx(675191 * US)
    assert d0.compute_comm_overlap_s == pytest.approx(59216 * US)
    assert d0.idle.gaps == 930
    assert d0.idle.host_wait_s == pytest.approx(281106 * US)
    assert d0.idle.in_launch_s == pytest.approx(1945 * US)
    assert d0.idle.queued_s == pytest.approx(392140 * US)  # NCCL kernels wait on the peers
    assert {s.stream: s.events for s in d0.streams} == {7: 1052, 23: 126, 25: 16, 84: 8, 203: 2}
    c1 = cats(d1)
    assert c1["communication"][:2] == (10, pytest.approx(379053 * US))
    assert d1.idle_s == pytest.approx(651136 * US)
    assert d1.compute_comm_overlap_s == pytest.approx(75530 * US)
    top = r0.top_kernels[0]
    assert top.name.startswith("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t")
    assert top.category == "communication" and top.count == 10
    ops = {o.name: o for o in r0.ops}
    assert ops["record_param_comms"].device_time_s == pytest.approx(290059 * US)
    assert ops["c10d::_allgather_base_"].device_time_s == pytest.approx(106140 * US)
    # collectives recorded as cpu_op are flagged like the nccl: annotations
    assert ops["record_param_comms"].communication and ops["c10d::allreduce_"].communication
    assert not ops["aten::mm"].communication
    assert r0.unmapped_device_time_s == pytest.approx(619 * US)
    assert r0.steps.count == 2


def test_rocm_mi250():
    a = analysis(AMD)
    (dev,) = a.devices
    assert dev.device == 2 and dev.name == "AMD Radeon Graphics"
    c = cats(dev)
    assert c["compute"][:2] == (14, pytest.approx(110.881 * US))
    assert c["memcpy"][:2] == (2, pytest.approx(38.161 * US))
    assert dev.span_s == pytest.approx(8911.8867 * US)
    assert dev.idle.gaps == 15
    assert dev.idle.host_wait_s == pytest.approx(2019.2949 * US)
    # one 6,633 µs gap is ended by a hipLaunchKernel that starts 85 µs into it and runs
    # 6,543 µs: in launch, not queued (queued was 6.74 of 8.76 ms idle before)
    assert dev.idle.idle_s == pytest.approx(8762.8442 * US)
    assert dev.idle.in_launch_s == pytest.approx(6651.2295 * US)
    assert dev.idle.queued_s == pytest.approx(92.3198 * US)
    # hipLaunchKernel / hipExtModuleLaunchKernel / hipMemcpyWithStream all correlate
    assert a.unmapped_device_time_s == 0
    ops = {o.name: o for o in a.ops}
    assert ops["aten::copy_"].device_time_s == pytest.approx(38.161 * US)
    assert ops["aten::addmm"].device_time_s == pytest.approx(24.48 * US)
    assert a.steps.count == 2


def test_cpu_only():
    a = analysis(CPU)
    assert a.rank == 34 and not a.has_device and a.devices == []
    assert any("CPU-only" in n for n in a.notes)
    assert [(o.name, o.calls) for o in a.ops] == [("aten::empty", 4)]
    (gloo,) = a.annotations
    assert (gloo.name, gloo.count, gloo.communication) == ("gloo:all_reduce", 10, True)
    assert gloo.total_s == pytest.approx(2.135455918, rel=1e-9)
    assert len(a.threads) == 3


def test_cupti_profiler_ranges():
    a = analysis(CUPTI)
    assert not a.has_device and a.devices == []
    pr = a.profiler_ranges
    assert pr is not None and pr.count == 77
    assert len(pr.metrics) == 9
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" in pr.metrics
    assert any("cuda_profiler_range" in n for n in a.notes)


def test_text_kernel_names_drop_shared_noise_as_the_report_does():
    """`void at::native::` fills the 60 cut characters of every kernel row otherwise."""
    from perfsuite.cli.timeline_cmd import render

    text = render(analysis(AMD))
    table = text.split("top kernels", 1)[1].split("\n\n", 1)[0]
    assert "reduce_kernel<128, 4, " in table and "void " not in table and "at::native" not in table
