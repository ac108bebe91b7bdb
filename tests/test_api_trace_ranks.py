"""perfsuite.api.ranks / trace_diff against `perfsuite timeline DIR --json` and
`perfsuite timeline --diff A B --json` on the shared two-rank NCCL job: every column equals
its JSON field (both in seconds)."""

from __future__ import annotations

import shutil

import pytest

from perfsuite import api
from perfsuite.analyzers.timeline import TraceError
from tests.api_compare import assert_rows, cli_json
from tests.conftest import shared_path

pytestmark = pytest.mark.shared
NCCL = ["trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"]
RANKS = {c: c for c in [
    "rank", "rank_source", "trace", "path", "events", "window_s", "devices", "steps",
    "step_mean_s", "span_s", "busy_s", "busy_compute_s", "compute_share", "busy_non_compute_s",
    "communication_busy_s", "compute_comm_overlap_s", "idle_s", "idle_share", "host_wait_s",
    "launches", "launch_delay_mean_s", "launch_delay_p50_s", "launch_delay_p90_s",
    "launch_delay_p99_s", "launch_delay_max_s", "short_kernels", "short_share",
    "runtime_outliers", "delay_outliers", "queue_max_length", "queue_max_device",
    "queue_max_stream", "memory_peak_bytes", "memory_peak_t_s", "memory_peak_device",
]}  # fmt: skip
EXTREMES = {c: c for c in ["metric", "label", "unit", "rank", "value", "median", "ranks"]}
STRAGGLERS = {c: c for c in [
    "rank", "metric", "value_s", "median_s", "excess_s", "excess_share", "comm_wait_caused_s",
]}  # fmt: skip
DIFF = {c: c for c in [
    "kind", "name", "status", "count_a", "count_b", "count_delta", "total_a_s", "total_b_s",
    "total_delta_s", "mean_a_s", "mean_b_s", "mean_delta_s",
]}  # fmt: skip


@pytest.fixture
def folder(tmp_path):
    dest = tmp_path / "job"
    dest.mkdir()
    for n in NCCL:
        shutil.copy(shared_path("traces", n), dest / n)
    return dest


def test_rank_tables_equal_timeline_json(folder):
    ref = cli_json("timeline", str(folder))
    r = api.ranks(folder)
    assert_rows(r.table, ref["ranks"], RANKS)
    assert_rows(r.stragglers, ref["stragglers"]["ranks"], STRAGGLERS)
    assert_rows(r.extremes, ref["extremes"], EXTREMES)
    assert list(r.extremes["metric"]) == ["launch_delay_p50_s", "launch_delay_p99_s",
                                          "queue_max_length"]  # fmt: skip
    assert list(r.table["queue_max_length"]) == [80, 91]
    assert len(r.stragglers) == 1 and r.stragglers["rank"].iloc[0] == 1
    assert r.rule == ref["stragglers"]["rule"] and r.notes == ref["stragglers"]["notes"]
    assert r.table["busy_compute_s"].iloc[1] > r.table["busy_compute_s"].iloc[0] > 0


def test_diff_table_equals_timeline_json(folder):
    a, b = (str(folder / n) for n in NCCL)
    ref = cli_json("timeline", "--diff", a, b)
    d = api.trace_diff(a, b)
    assert_rows(d.table, ref["rows"], DIFF)
    assert d.counts == ref["counts"] and d.notes == ref["notes"]
    assert len(d.table) == 364 and d.table["total_delta_s"].abs().is_monotonic_decreasing


def test_bad_folder_is_a_one_line_error(tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}')
    with pytest.raises(TraceError, match=r"a\.json: field traceEvents: missing"):
        api.ranks(tmp_path)
    with pytest.raises(TraceError, match=r"no readable rank trace \(1 skipped\)"):
        api.ranks(tmp_path, keep_going=True)
