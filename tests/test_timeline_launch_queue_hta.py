"""Launch statistics and queue length per stream against HTA 0.5 on the same real traces.

HTA (`get_cuda_kernel_launch_stats`, `get_queue_length_time_series`,
`get_time_spent_blocked_on_full_queue`) and perfsuite (`perfsuite.trace(...).launches`,
`.queue_length`, `.queues`, `analysis.launches`) read one copy of each trace. The copy renames
ProfilerStep#N ranges: with two or more steps HTA keeps only the work launched before the last
step starts, perfsuite the whole trace. HTA_DISABLE_NS_ROUNDING=1 keeps HTA from rounding
fractional microseconds (start up, end down), so both see the same times. Nothing else is
changed. Definitions that differ, and how each test accounts for them:
- HTA's launch statistics count cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync and
  cudaMemsetAsync only; perfsuite counts HTA's queue-length list, which adds cuLaunchKernel
  (the H100 trace's 6 Triton launches) and the HIP calls (all 16 launches of the MI250 trace,
  where HTA has none). The comparison keeps the launches of HTA's calls, and checks that the
  rest are exactly those extra calls.
- HTA keeps one queue row per event, in the order of an unstable sort where a launch and a
  start share a timestamp; perfsuite keeps the value after all changes at a time. HTA's rows
  are compared as the last value at each timestamp.
- HTA's times start at its own origin (the trace's first kept event): one offset, common to
  every stream of a trace, is allowed between the two series.
"""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import perfsuite
from tests.conftest import extract_h100_run, shared_path
from tests.helpers import hta_in_process

pytestmark = pytest.mark.shared
HTA_LAUNCH_CALLS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"}
TRACES = {
    "alexnet": "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "rank0": "trace_filter__sampled_rank-0.json.gz",
    "rank1": "trace_filter__sampled_rank-1.json.gz",
    "mi250": "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
}
# launches whose call is not in HTA's launch-statistics list, by trace
EXTRA = {
    "h100": {"cuLaunchKernel": 6},
    "mi250": {"hipLaunchKernel": 12, "hipExtModuleLaunchKernel": 2, "hipMemcpyWithStream": 2},
}


def _copy(src: Path, folder: Path) -> Path:
    with gzip.open(src, "rt") as fh:
        doc = json.load(fh)
    for ev in doc["traceEvents"]:
        name = ev.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep"):
            ev["name"] = "Step" + name[len("ProfilerStep") :]
    folder.mkdir()
    dst = folder / src.name
    with gzip.open(dst, "wt") as fh:
        json.dump(doc, fh)
    return dst


def _source(case: str, tmp: Path) -> Path:
    if case == "h100":
        return next(extract_h100_run(tmp / "h100-run").glob("trace.json.gz"))
    return shared_path("traces", TRACES[case])


@pytest.fixture(scope="module")
def hta_results(tmp_path_factory):
    """Per case: (perfsuite Trace, HTA launch stats, HTA queue series, the HTA object)."""
    hta = pytest.importorskip("hta.trace_analysis", reason="holistictraceanalysis not installed")

    logging.getLogger("hta").setLevel(logging.ERROR)
    cache: dict[str, tuple] = {}

    def get(case: str):
        if case in cache:
            return cache[case]
        tmp = tmp_path_factory.mktemp(case)
        path = _copy(_source(case, tmp), tmp / "traces")
        with pytest.MonkeyPatch.context() as mp, hta_in_process():
            mp.setenv("HTA_DISABLE_NS_ROUNDING", "1")
            ta = hta.TraceAnalysis(trace_dir=str(path.parent))
            (rank,) = ta.t.traces
            launches = ta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
            queues = ta.get_queue_length_time_series(ranks=[rank]).get(rank)
        cache[case] = (perfsuite.trace(path), launches, queues, ta, rank)
        return cache[case]

    return get


CASES = ["alexnet", "rank0", "rank1", "mi250", "h100"]


@pytest.mark.parametrize("case", CASES)
def test_launch_statistics_equal_htas(case, hta_results):
    t, theirs, _, _, _ = hta_results(case)
    mine = t.launches
    ours = mine[mine.launch_call.isin(HTA_LAUNCH_CALLS)].set_index("correlation").sort_index()
    theirs = theirs.set_index("correlation").sort_index()
    assert list(ours.index) == list(theirs.index)  # the same launches, each once
    us = 1e-6
    np.testing.assert_allclose(ours.cpu_s, theirs.cpu_duration * us, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.gpu_s, theirs.gpu_duration * us, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.delay_s, theirs.launch_delay * us, rtol=1e-9, atol=1e-12)
    # HTA's short-kernel and outlier rules (visualize_cuda_launch_kernel_info), its cutoffs
    cpu, gpu, delay = theirs.cpu_duration, theirs.gpu_duration, theirs.launch_delay
    assert int(ours.short.sum()) == int(((cpu <= 50) & (gpu < cpu)).sum())
    assert int(ours.runtime_outlier.sum()) == int((cpu > 50).sum())
    assert int(ours.delay_outlier.sum()) == int((delay > 100).sum())
    extra = mine[~mine.launch_call.isin(HTA_LAUNCH_CALLS)].launch_call.value_counts().to_dict()
    assert extra == EXTRA.get(case, {})
    # the analysis' summary counts the same launches as the per-launch table
    s = t.analysis.launches
    assert s.launches == len(mine)
    assert (s.short, s.runtime_outliers, s.delay_outliers) == (
        int(mine.short.sum()),
        int(mine.runtime_outlier.sum()),
        int(mine.delay_outlier.sum()),
    )
    assert s.overall.delay.max_s == pytest.approx(mine.delay_s.max(), rel=1e-12)
    assert s.overall.cpu.p50_s == pytest.approx(mine.cpu_s.median(), rel=1e-12)


def test_launch_summary_figures_alexnet(hta_results):
    """Values a wrong join, clip or rule would change (all launches are in HTA's list)."""
    s = hta_results("alexnet")[0].analysis.launches
    assert (s.launches, s.unmatched_calls) == (98, 2)
    assert (s.short, s.runtime_outliers, s.delay_outliers) == (23, 11, 43)
    assert {(g.stream, g.launches) for g in s.streams} == {(7, 91), (20, 7)}


@pytest.mark.parametrize("case", CASES)
def test_queue_length_equals_htas(case, hta_results):
    t, _, theirs, ta, rank = hta_results(case)
    mine = t.queue_length
    assert sorted(theirs.stream.unique()) == sorted(mine.stream.unique())
    offsets = set()
    stats = t.queues.set_index("stream")
    for stream, rows in theirs.groupby("stream"):
        last = rows.groupby("ts", sort=True)["queue_length"].last()
        ours = mine[mine.stream == stream]
        assert list(ours.length) == list(last.to_numpy())
        their_t = last.index.to_numpy(dtype=float) * 1e-6
        offset = their_t[0] - ours.t_s.iloc[0]
        np.testing.assert_allclose(their_t - offset, ours.t_s, rtol=0, atol=1e-9)
        offsets.add(round(offset, 9))
        row = stats.loc[stream]
        assert row.max_length == rows.queue_length.max()
        assert 2 * row.launches == len(rows)  # one row per launch and one per start
        full = ta.get_time_spent_blocked_on_full_queue({rank: rows.copy()}, int(row.max_length))
        (at_max,) = full.duration_at_max_queue_length
        assert row.time_at_max_s == pytest.approx(at_max * 1e-6, rel=1e-6)
    assert len(offsets) == 1  # one time origin for the whole trace


def test_queue_summary_figures_rank0(hta_results):
    q = hta_results("rank0")[0].queues.set_index("stream")
    assert q.max_length.to_dict() == {7: 80, 23: 4, 25: 8, 84: 2, 203: 1}
    # time-weighted mean over stream 7's first to last change: an independent integral
    series = hta_results("rank0")[0].queue_length
    s7 = series[series.stream == 7]
    area = float((s7.length.to_numpy()[:-1] * np.diff(s7.t_s.to_numpy())).sum())
    span = s7.t_s.iloc[-1] - s7.t_s.iloc[0]
    assert q.loc[7, "mean_length"] == pytest.approx(area / span, rel=1e-9)
    assert q.loc[7, "mean_length"] == pytest.approx(16.1025, abs=1e-4)


def test_cpu_only_and_cupti_traces_have_no_launches():
    for name in (
        "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz",
    ):
        t = perfsuite.trace(shared_path("traces", name))
        assert t.analysis.launches is None and t.analysis.queues == []
        assert t.launches.empty and t.queue_length.empty and t.queues.empty
        assert isinstance(t.launch_streams, pd.DataFrame) and t.launch_streams.empty
