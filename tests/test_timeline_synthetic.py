"""Trace analysis on small hand-written traces whose answers are computed by hand below."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from perfsuite.analyzers.timeline import TraceError, analyze_file, read_trace

PID = 100


def write_trace(
    path: Path, events: list[dict], gz: bool = False, bare: bool = False, meta: dict | None = None
) -> Path:
    """A Kineto-style trace file: {"traceEvents": [...]} (or a bare list), optionally gzipped."""
    doc: object = events if bare else {"schemaVersion": 1, **(meta or {}), "traceEvents": events}
    text = json.dumps(doc)
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def op(name, ts, dur, tid=PID, shapes=None, cat="cpu_op"):
    args = {"External id": 1}
    if shapes:
        args.update(shapes)
    return {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def call(name, ts, dur, corr=None, tid=PID):
    args = {} if corr is None else {"correlation": corr}
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": tid, "ts": ts,
            "dur": dur, "args": args}  # fmt: skip


def kern(name, ts, dur, stream, corr=None, cat="kernel", device=0):
    args = {"device": device, "stream": stream}
    if corr is not None:
        args["correlation"] = corr
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts,
            "dur": dur, "args": args}  # fmt: skip


MM_SHAPES = {"Input Dims": [[4, 8], [8, 16]], "Input type": ["float", "float"],
             "Concrete Inputs": ["", ""]}  # fmt: skip


def scenario() -> list[dict]:
    """One device, three streams; times in µs. Expected values are derived in the tests."""
    return [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python"}},
        op("ProfilerStep#1", 0, 130, cat="user_annotation"),
        op("aten::mm", 0, 20, shapes=MM_SHAPES),
        call("cudaLaunchKernel", 2, 3, corr=1),
        op("aten::add", 20, 10),
        call("cudaMemcpyAsync", 25, 2, corr=2),
        op("aten::linear", 40, 30),
        op("aten::addmm", 42, 20),
        call("cudaLaunchKernel", 45, 3, corr=3),
        call("cudaStreamSynchronize", 75, 25),
        op("aten::relu", 100, 10),
        call("cudaLaunchKernel", 102, 2, corr=4),
        op("nccl:all_reduce", 110, 10, cat="user_annotation"),
        call("cudaLaunchKernel", 111, 1, corr=5),
        op("aten::mul", 120, 5),
        call("cudaLaunchKernel", 121, 2, corr=6),
        {"ph": "s", "id": 1, "pid": PID, "tid": PID, "ts": 2, "cat": "ac2g", "name": "ac2g"},
        kern("ampere_sgemm_32x32", 10, 30, 7, corr=1),  # [10, 40)
        kern("Memcpy HtoD (Pageable -> Device)", 30, 20, 8, corr=2, cat="gpu_memcpy"),  # [30, 50)
        kern("addmm_kernel", 60, 10, 7, corr=3),  # [60, 70)
        kern("relu_kernel", 105, 5, 7, corr=4),  # [105, 110)
        kern("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", 112, 8, 9, corr=5),
        kern("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 125, 5, 9),  # no corr
        kern("void elementwise_kernel<128>", 127, 6, 7, corr=6),  # [127, 133)
    ]


US = 1e-6


@pytest.fixture
def analysis(tmp_path):
    return analyze_file(write_trace(tmp_path / "t.json", scenario()), top=0)


def test_temporal_breakdown_uses_unions(analysis):
    (dev,) = analysis.devices
    assert dev.device == 0
    assert dev.events == 7
    assert dev.span_s == pytest.approx(123 * US)  # 10 .. 133
    # union: [10,50) + [60,70) + [105,110) + [112,120) + [125,133) = 40+10+5+8+8
    assert dev.busy_s == pytest.approx(71 * US)
    # compute kernels [10,40) [60,70) [105,110) [127,133) = 51; the memcpy overlap is not
    # counted twice
    assert dev.busy_compute_s == pytest.approx(51 * US)
    assert dev.busy_non_compute_s == pytest.approx(20 * US)
    assert dev.idle_s == pytest.approx(52 * US)
    assert dev.compute_comm_overlap_s == pytest.approx(3 * US)  # [127, 130)
    cats = {c.category: (c.count, c.total_s, c.busy_s) for c in dev.categories}
    assert cats["compute"] == (4, pytest.approx(51 * US), pytest.approx(51 * US))
    assert cats["memcpy"] == (1, pytest.approx(20 * US), pytest.approx(20 * US))
    # both NCCL families (ncclDevKernel_*, ncclKernel_*) are communication
    assert cats["communication"] == (2, pytest.approx(13 * US), pytest.approx(13 * US))


def test_idle_attribution(analysis):
    idle = analysis.devices[0].idle
    assert idle.gaps == 4
    # Each gap is cut at the start and the end of the next kernel's launch call:
    # [50,60): launch call [45,48) returned before the gap -> queued 10
    # [70,105): call [102,104) -> host wait 32 (25 of it in cudaStreamSynchronize [75,100)),
    #           in launch 2, queued 1 (the 4 µs the old rule called queued included the call)
    # [110,112): call [111,112) -> host wait 1, in launch 1, queued 0
    # [120,125): next kernel has no correlation -> unattributed 5
    assert idle.idle_s == pytest.approx(52 * US)
    assert idle.host_wait_s == pytest.approx(33 * US)
    assert idle.host_sync_s == pytest.approx(25 * US)
    assert idle.in_launch_s == pytest.approx(3 * US)
    assert idle.queued_s == pytest.approx(11 * US)
    assert idle.unattributed_s == pytest.approx(5 * US)
    parts = idle.host_wait_s + idle.in_launch_s + idle.queued_s + idle.unattributed_s
    assert parts == pytest.approx(idle.idle_s)


def test_slow_launch_call_is_not_queued(tmp_path):
    """The MI250 shape: the launch call starts just after the device goes idle and runs for
    most of the gap (lazy module load); the work was not on the queue until it returned."""
    events = [
        op("aten::add", 0, 20), call("hipLaunchKernel", 2, 3, corr=1),
        kern("k1", 10, 10, 7, corr=1),  # [10, 20)
        op("aten::mul", 100, 5000), call("hipLaunchKernel", 105, 4000, corr=2),  # [105, 4105)
        kern("k2", 4120, 10, 7, corr=2),  # gap [20, 4120)
    ]  # fmt: skip
    idle = analyze_file(write_trace(tmp_path / "slow.json", events)).devices[0].idle
    assert idle.idle_s == pytest.approx(4100 * US)
    assert idle.host_wait_s == pytest.approx(85 * US)  # 20 .. 105
    assert idle.in_launch_s == pytest.approx(4000 * US)  # 105 .. 4105
    assert idle.queued_s == pytest.approx(15 * US)  # 4105 .. 4120, not 4015
    assert idle.unattributed_s == 0


def test_launch_call_covering_the_whole_gap(tmp_path):
    """A call that began before the gap and returned after it: all of the gap is in launch."""
    events = [
        kern("k1", 0, 10, 7), call("cudaMemcpyAsync", 5, 30, corr=2),  # call [5, 35)
        kern("Memcpy HtoD (Pageable -> Device)", 20, 5, 7, corr=2, cat="gpu_memcpy"),
    ]  # fmt: skip
    idle = analyze_file(write_trace(tmp_path / "cover.json", events)).devices[0].idle
    assert (idle.host_wait_s, idle.queued_s) == (0, 0)
    assert idle.in_launch_s == pytest.approx(10 * US) == pytest.approx(idle.idle_s)


def test_pytorch_18_categories_keep_their_launch_calls(tmp_path):
    """PyTorch 1.8 wrote Operator / Runtime / Kernel: the Runtime calls link kernels to ops."""
    events = [
        op("aten::mm", 0, 100, cat="Operator"),
        {**call("cudaLaunchKernel", 10, 5, corr=7), "cat": "Runtime"},
        kern("gemm", 50, 20, 7, corr=7, cat="Kernel"),
        op("aten::add", 200, 100, cat="Operator"),
        {**call("cudaLaunchKernel", 210, 5, corr=8), "cat": "Runtime"},
        kern("add", 250, 20, 7, corr=8, cat="Kernel"),
    ]
    a = analyze_file(write_trace(tmp_path / "old.json", events))
    idle = a.devices[0].idle
    # gap [70, 250): call [210, 215) -> host wait 140, in launch 5, queued 35
    assert idle.unattributed_s == 0
    assert idle.host_wait_s == pytest.approx(140 * US)
    assert idle.in_launch_s == pytest.approx(5 * US)
    assert idle.queued_s == pytest.approx(35 * US)
    assert a.mapped_device_time_s == pytest.approx(40 * US) and a.unmapped_device_time_s == 0
    assert {o.name: o.kernels for o in a.ops} == {"aten::mm": 1, "aten::add": 1}


def test_collective_ops_are_flagged_like_annotations(tmp_path):
    events = [
        op("record_param_comms", 0, 10), op("c10d::allreduce_", 20, 10),
        op("aten::mm", 40, 10), op("nccl:all_reduce", 60, 5, cat="user_annotation"),
    ]  # fmt: skip
    a = analyze_file(write_trace(tmp_path / "comm.json", events))
    flags = {o.name: o.communication for o in a.ops}
    assert flags == {"record_param_comms": True, "c10d::allreduce_": True, "aten::mm": False}
    assert [(r.name, r.communication) for r in a.annotations] == [("nccl:all_reduce", True)]


def test_stream_stats_follow_hta_rule(analysis):
    streams = {s.stream: s for s in analysis.devices[0].streams}
    assert sorted(streams) == [7, 8, 9]
    s7 = streams[7]
    assert (s7.events, s7.total_s, s7.idle_s) == (4, pytest.approx(51 * US), pytest.approx(72 * US))
    # gaps before addmm (launch 45 > prev end 40: 20), relu (102 > 70: 35), mul (121 > 110: 17)
    assert s7.host_wait_s == pytest.approx(72 * US)
    assert streams[9].host_wait_s == 0  # second NCCL kernel has no launch record
    assert streams[9].idle_s == pytest.approx(5 * US)


def test_top_kernels(analysis):
    top = analysis.top_kernels
    assert [k.name for k in top[:2]] == ["ampere_sgemm_32x32", "Memcpy HtoD (Pageable -> Device)"]
    assert top[0].count == 1 and top[0].total_s == pytest.approx(30 * US)
    assert {k.category for k in top if k.name.startswith("nccl")} == {"communication"}


def test_ops_map_to_kernels_and_self_time(analysis):
    ops = {o.name: o for o in analysis.ops}
    assert ops["aten::mm"].device_time_s == pytest.approx(30 * US)
    assert ops["aten::add"].device_time_s == pytest.approx(20 * US)
    # the addmm kernel belongs to the innermost op, aten::addmm, not to aten::linear
    assert ops["aten::addmm"].device_time_s == pytest.approx(10 * US)
    assert ops["aten::linear"].device_time_s == 0
    assert ops["aten::linear"].self_s == pytest.approx(10 * US)  # 30 - child addmm 20
    assert ops["aten::linear"].total_s == pytest.approx(30 * US)
    assert [o.name for o in analysis.ops[:3]] == ["aten::mm", "aten::add", "aten::addmm"]
    # NCCL kernels: one launched under an annotation only, one with no correlation
    assert analysis.mapped_device_time_s == pytest.approx(71 * US)
    assert analysis.unmapped_device_time_s == pytest.approx(13 * US)


def test_annotations_threads_steps(analysis):
    (ann,) = analysis.annotations
    assert (ann.name, ann.count, ann.communication) == ("nccl:all_reduce", 1, True)
    assert analysis.steps.count == 1
    assert analysis.steps.mean_s == pytest.approx(130 * US)
    (th,) = analysis.threads
    assert (th.ops, th.annotations, th.top_level_s) == (6, 2, pytest.approx(130 * US))
    assert analysis.window_s == pytest.approx(133 * US)


def test_roofline_point_from_shapes(analysis):
    pytest.importorskip("perfsuite.flops.registry")
    from perfsuite.analyzers.timeline.roofline import op_work

    if op_work("aten::mm", (((4, 8), (8, 16)), ("float", "float"), ("", ""))) is None:
        pytest.skip("op registry cannot model aten::mm yet")
    (pt,) = [p for p in analysis.roofline if p.op == "aten::mm"]
    assert pt.calls == 1
    assert pt.flops == 2 * 4 * 8 * 16  # a multiply-add is 2 FLOP
    assert pt.device_time_s == pytest.approx(30 * US)
    assert pt.flops_per_s == pytest.approx(1024 / 30e-6)


def test_gz_plain_and_bare_list_agree(tmp_path):
    plain = analyze_file(write_trace(tmp_path / "a.json", scenario()))
    gz = analyze_file(write_trace(tmp_path / "b.json.gz", scenario(), gz=True))
    bare = analyze_file(write_trace(tmp_path / "c.json", scenario(), bare=True))
    for other in (gz, bare):
        assert other.devices == plain.devices
        assert other.ops == plain.ops
    assert read_trace(tmp_path / "c.json").bare_list
    assert plain.reader_backend.startswith(("msgspec", "yajl2_c"))


def test_metadata_before_events(tmp_path):
    meta = {"deviceProperties": [{"id": 0, "name": "Fake GPU"}], "distributedInfo": {"rank": 3}}
    a = analyze_file(write_trace(tmp_path / "m.json", scenario(), meta=meta))
    assert a.rank == 3
    assert a.devices[0].name == "Fake GPU"


def test_device_filter(tmp_path):
    events = [*scenario(), kern("other_dev_kernel", 0, 4, 7, device=1)]
    a = analyze_file(write_trace(tmp_path / "d.json", events), device=1)
    assert [d.device for d in a.devices] == [1]
    assert a.devices[0].busy_s == pytest.approx(4 * US)
    assert [k.name for k in a.top_kernels] == ["other_dev_kernel"]


def test_cpu_only_trace(tmp_path):
    events = [op("aten::empty", 0, 5), op("aten::zeros", 10, 20), op("aten::empty", 12, 4),
              op("gloo:all_reduce", 40, 100, tid=7, cat="user_annotation")]  # fmt: skip
    a = analyze_file(write_trace(tmp_path / "cpu.json", events))
    assert not a.has_device and a.devices == [] and a.overall is None
    assert any("CPU-only" in n for n in a.notes)
    ops = {o.name: o for o in a.ops}
    assert (ops["aten::empty"].calls, ops["aten::empty"].self_s) == (2, pytest.approx(9 * US))
    assert ops["aten::zeros"].self_s == pytest.approx(16 * US)  # 20 minus nested empty 4
    assert a.ops[0].name == "aten::zeros"  # CPU-only: sorted by self time
    assert a.annotations[0].communication
    assert len(a.threads) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("this is not json", "not valid JSON"),
        ('{"foo": 1}', "field traceEvents: missing"),
        ('{"traceEvents": [{"ph": "X", "ts": 1', "not valid JSON"),
        ('{"traceEvents": [1, 2]}', "field traceEvents[0]: expected an object"),
        # empty or non-list events are errors, not a "CPU-only" trace
        ('{"traceEvents": []}', "field traceEvents: empty trace (0 events)"),
        ("[]", ": empty trace (0 events)"),
        ('{"traceEvents": {"a": 1}}', "field traceEvents: is not a list (got an object)"),
        ('{"traceEvents": "x"}', "field traceEvents: is not a list (got a string)"),
    ],
)
def test_bad_input_one_line_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(TraceError) as err:
        analyze_file(path)
    text = str(err.value)
    assert str(path) in text and message in text and "\n" not in text


@pytest.mark.parametrize("gz", [False, True])
def test_utf8_bom_is_skipped(tmp_path, gz):
    text = "\ufeff" + json.dumps({"traceEvents": scenario()})
    path = tmp_path / ("bom.json.gz" if gz else "bom.json")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    a = analyze_file(path)
    assert a.devices[0].busy_s == pytest.approx(71 * US)


def test_metadata_only_trace_is_not_called_cpu_only(tmp_path):
    events = [{"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "py"}}]
    a = analyze_file(write_trace(tmp_path / "m.json", events))
    assert a.events == 1 and not any("CPU-only" in n for n in a.notes)
    assert any("no timed events" in n for n in a.notes)


def test_missing_file(tmp_path):
    with pytest.raises(TraceError, match="file not found"):
        read_trace(tmp_path / "nope.json")


def test_iter_events_bad_gzip_and_missing_file_are_trace_errors(tmp_path):
    import gzip
    import json

    from perfsuite.analyzers.timeline import iter_events

    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "ts": i, "dur": 1} for i in range(9000)
    ]
    big = gzip.compress(json.dumps({"traceEvents": events}).encode())
    path = tmp_path / "t.json.gz"
    path.write_bytes(big)
    assert [e["name"] for e in iter_events(path)][-1] == "op8999"
    path.write_bytes(big[: len(big) // 2])
    with pytest.raises(TraceError, match=r"t\.json\.gz: cannot read") as err:
        list(iter_events(path))
    assert "\n" not in str(err.value)
    with pytest.raises(TraceError, match=r"nope\.json: file not found"):
        list(iter_events(tmp_path / "nope.json"))


def test_a_cpu_trace_has_roofline_points_from_host_self_time(tmp_path):
    """No device events: an op's time is its own host time plus that of the ops inside it
    without a formula; an op inside a modeled one (addmm in linear) keeps its own."""
    addmm = {"Input Dims": [[16], [4, 8], [8, 16]], "Input type": ["float"] * 3,
             "Concrete Inputs": ["", "", ""]}  # fmt: skip
    linear = {"Input Dims": [[4, 8], [16, 8], [16]], "Input type": ["float"] * 3,
              "Concrete Inputs": ["", "", ""]}  # fmt: skip
    events = [
        op("aten::linear", 0, 50, shapes=linear),  # self 50 - 40 = 10 µs
        op("aten::addmm", 5, 40, shapes=addmm),  # self 40 - 6 = 34, + resolve_conj 6
        op("aten::resolve_conj", 10, 6),  # no formula: its time is addmm's
        op("aten::mm", 100, 20, shapes=MM_SHAPES),
        op("aten::mm", 200, 30, shapes=MM_SHAPES),
    ]
    a = analyze_file(write_trace(tmp_path / "cpu.json", events))
    points = {(p.op, p.calls): p for p in a.roofline}
    assert set(points) == {("aten::mm", 2), ("aten::addmm", 1), ("aten::linear", 1)}
    mm = points[("aten::mm", 2)]
    assert mm.time_kind == "host" and mm.device_time_s is None
    assert mm.time_s == pytest.approx(50e-6) and mm.flops == 2 * 4 * 8 * 16
    assert mm.flops_per_s == pytest.approx(2 * mm.flops / 50e-6)
    assert points[("aten::addmm", 1)].time_s == pytest.approx(40e-6)
    assert points[("aten::linear", 1)].time_s == pytest.approx(10e-6)
    assert [p.op for p in a.roofline] == ["aten::mm", "aten::addmm", "aten::linear"]
