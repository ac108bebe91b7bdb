"""perfsuite.trace against `perfsuite timeline --json --top 0` on two real shared traces.

The CLI's JSON and the API both keep the analyzer's seconds, so every
`*_s` column must equal the JSON's `*_s` exactly (both in seconds).
"""

from __future__ import annotations

import pytest

import perfsuite
from perfsuite.analyzers.timeline import TraceError
from tests.api_compare import assert_rows, cli_json, dig, same_value
from tests.conftest import shared_path

pytestmark = pytest.mark.shared

ALEXNET = "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
RANK0 = "trace_filter__sampled_rank-0.json.gz"
US = 1.0  # the JSON speaks seconds, as the API does

TEMPORAL = {
    "device": "device",
    "name": "name",
    "events": "events",
    "span_s": "span_s",
    "busy_s": "busy_s",
    "busy_compute_s": "busy_compute_s",
    "busy_non_compute_s": "busy_non_compute_s",
    "idle_s": "idle_s",
    "compute_comm_overlap_s": "compute_comm_overlap_s",
    "sync_records": "sync_records",
    "sync_total_s": "sync_total_s",
}
IDLE = {
    "device": "device",
    "idle_s": "idle.idle_s",
    "gaps": "idle.gaps",
    "host_wait_s": "idle.host_wait_s",
    "host_sync_s": "idle.host_sync_s",
    "in_launch_s": "idle.in_launch_s",
    "queued_s": "idle.queued_s",
    "unattributed_s": "idle.unattributed_s",
}
CATEGORIES = {
    "device": "device",
    "category": "category",
    "count": "count",
    "total_s": "total_s",
    "busy_s": "busy_s",
}
STREAMS = {
    "device": "device",
    "stream": "stream",
    "events": "events",
    "total_s": "total_s",
    "busy_s": "busy_s",
    "idle_s": "idle_s",
    "host_wait_s": "host_wait_s",
}
KERNELS = {
    "name": "name",
    "category": "category",
    "count": "count",
    "total_s": "total_s",
    "mean_s": "mean_s",
    "min_s": "min_s",
    "max_s": "max_s",
}
OPS = {
    "name": "name",
    "calls": "calls",
    "total_s": "total_s",
    "self_s": "self_s",
    "kernels": "kernels",
    "device_time_s": "device_time_s",
    "communication": "communication",
}
ANNOTATIONS = {
    "name": "name",
    "count": "count",
    "total_s": "total_s",
    "communication": "communication",
}
THREADS = {"pid": "pid", "tid": "tid", "ops": "ops", "annotations": "annotations",
           "top_level_s": "top_level_s"}  # fmt: skip
ROOFLINE = {
    "op": "op",
    "input_dims": "input_dims",
    "input_types": "input_types",
    "calls": "calls",
    "flops_per_call": "flops",
    "bytes_per_call": "bytes",
    "device_time_s": "device_time_s",
    "time_s": "time_s",
    "time_kind": "time_kind",
    "achieved_flop_per_s": "flops_per_s",
    "achieved_byte_per_s": "bytes_per_s",
    "intensity_flop_per_byte": "intensity",
}


def _seconds(columns: dict[str, str]) -> dict[str, float]:
    return {c: US for c in columns if c.endswith("_s") and not c.endswith("_per_s")}


@pytest.mark.parametrize("name", [ALEXNET, RANK0])
def test_trace_tables_equal_timeline_json(name):
    path = shared_path("traces", name)
    ref = cli_json("timeline", str(path), "--top", "0")
    assert ref["time_unit"] == "s"
    ref = ref["traces"][0]
    t = perfsuite.trace(path)
    devices = [*ref["devices"], ref["overall"]]
    assert t.temporal["device"].iloc[-1] == -1
    for df, rows, cols in [
        (t.temporal, devices, TEMPORAL),
        (t.idle, devices, IDLE),
        (t.categories, [{"device": d["device"], **c} for d in devices for c in d["categories"]],
         CATEGORIES),
        (t.streams, [{"device": d["device"], **s} for d in ref["devices"] for s in d["streams"]],
         STREAMS),
        (t.kernels, ref["top_kernels"], KERNELS),
        (t.ops, ref["ops"], OPS),
        (t.annotations, ref["annotations"], ANNOTATIONS),
        (t.threads, ref["threads"], THREADS),
        (t.roofline, ref["roofline"], ROOFLINE),
    ]:  # fmt: skip
        assert_rows(df, rows, cols, _seconds(cols))
    assert t.profiler_ranges.empty and ref["profiler_ranges"] is None
    s = t.summary
    for col, key, scale in [
        ("events", "events", 1), ("window_s", "window_s", US), ("rank", "rank", 1),
        ("has_device", "has_device", 1), ("steps", "steps.count", 1),
        ("step_mean_s", "steps.mean_s", US), ("steps_total_s", "steps.total_s", US),
        ("mapped_device_time_s", "mapped_device_time_s", US),
        ("unmapped_device_time_s", "unmapped_device_time_s", US),
    ]:  # fmt: skip
        assert same_value(s[col], dig(ref, key), scale), (col, s[col], dig(ref, key))
    assert t.notes == ref["notes"]
    # what the CLI text prints first: the kernels exist and are real (not an empty conversion)
    assert len(t.kernels) > 10 and t.kernels["total_s"].iloc[0] > 0


def test_trace_of_a_non_trace_is_a_one_line_error(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": 1}')
    with pytest.raises(TraceError, match=r"x\.json: field traceEvents: missing"):
        perfsuite.trace(bad)
    with pytest.raises(TraceError, match="file not found"):
        perfsuite.trace(tmp_path / "absent.json.gz")
