"""Measured GPU counters: metric formulas, the real A100 CUPTI trace, the CLI and --into."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from perfsuite.counters import CountersError, counters_from_trace, default_metrics
from perfsuite.devices.counter_metrics import (
    BASE_METRICS,
    TENSOR_INST,
    TENSOR_REQUEST_AMPERE,
    TENSOR_REQUEST_HOPPER,
    derive,
)
from tests.conftest import shared_path

CUPTI_TRACE = "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz"
S = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"


def test_flops_from_instruction_counts_hand_checked():
    values = {
        S.format("ffma"): 3.0,
        S.format("fadd"): 5.0,
        S.format("fmul"): 7.0,  # fp32: 2*3 + 5 + 7 = 18
        S.format("dfma"): 1.0,  # fp64: 2*1 = 2 (add/mul absent count as 0)
        S.format("hfma"): 2.0,
        S.format("hadd"): 1.0,  # fp16: 2*2 + 1 = 5
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum": 4096.0,  # alone: an incomplete formula
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum": 1024.0,
        "dram__bytes_read.sum": 100.0,
        "dram__bytes_write.sum": 28.0,
        "lts__t_bytes.sum": 512.0,
    }
    d = derive(values)
    assert d["flops_by_precision"] == {"fp64": 2.0, "fp32": 18.0, "fp16": 5.0}
    assert d["flops"] == 25.0
    assert d["flops_tensor"] == 1024.0
    assert d["flops_tensor_by_precision"] == {
        "fp16": None,  # only dst_fp32 collected: the Ampere formula needs both, so unknown
        "bf16": None,
        "tf32": 1024.0,
        "fp8": None,
        "fp64": None,
    }
    assert d["dram_bytes"] == 128.0
    assert d["l2_bytes"] == 512.0
    assert d["tensor_inst"] is None


def test_derive_marks_uncollected_as_none_not_zero():
    d = derive({S.format("ffma"): 10.0, "dram__bytes.sum": 64.0})
    assert d["flops_by_precision"] == {"fp64": None, "fp32": 20.0, "fp16": None}
    assert d["flops"] == 20.0
    assert d["flops_tensor"] is None
    assert d["dram_bytes"] == 64.0  # dram__bytes.sum used when read/write are absent
    assert d["l2_bytes"] is None


def test_default_metrics_gated_by_compute_capability():
    assert default_metrics(None) == BASE_METRICS
    volta = default_metrics((7, 0))
    assert TENSOR_INST in volta and not set(TENSOR_REQUEST_AMPERE) & set(volta)
    ampere = default_metrics((8, 0))
    assert set(TENSOR_REQUEST_AMPERE) <= set(ampere)
    assert "sm__ops_path_tensor_src_fp8.sum" not in ampere
    assert "sm__ops_path_tensor_src_fp8.sum" in default_metrics((8, 9))  # Ada
    hopper = default_metrics((9, 0))
    assert set(TENSOR_REQUEST_HOPPER) <= set(hopper)
    # Hopper has no combined fp16 names with a destination type: asking CUPTI for one fails
    assert "sm__ops_path_tensor_src_fp16_dst_fp32.sum" not in hopper
    for m in ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"):
        assert m in BASE_METRICS
    assert len(BASE_METRICS) == 12 and len(set(BASE_METRICS)) == 12


def test_profiler_experimental_config_builds_without_gpu():
    torch = pytest.importorskip("torch")
    from perfsuite.counters import profiler_experimental_config

    cfg = profiler_experimental_config()
    assert isinstance(cfg, torch.profiler._ExperimentalConfig)
    cfg2 = profiler_experimental_config(["dram__bytes_read.sum"])
    assert isinstance(cfg2, torch.profiler._ExperimentalConfig)


def _independent(path):
    """Per-kernel FLOP computed with plain json, separately from the package's reader."""
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    per_kernel = defaultdict(float)
    calls = defaultdict(int)
    for e in events:
        if e.get("cat") != "cuda_profiler_range":
            continue
        a = e["args"]
        fl = 0.0
        for c in "fdh":
            fl += 2 * a[S.format(c + "fma")] + a[S.format(c + "add")] + a[S.format(c + "mul")]
        per_kernel[e["name"]] += fl
        calls[e["name"]] += 1
    return per_kernel, calls


def test_real_cupti_trace_exact_totals():
    path = shared_path("traces", CUPTI_TRACE)
    sec = counters_from_trace(path, window_steps=4)
    per_kernel, calls = _independent(path)
    assert sec["tool"] == "cupti-profiler" and sec["provenance"] == "measured"
    assert sec["window_steps"] == 4
    # 2*39142369720 ffma + 964651656 fadd + 430063616 fmul + 2*275791872 hfma (dfma.. all 0)
    assert sec["totals"]["flops"] == 80_231_038_456.0 == sum(per_kernel.values())
    assert sec["totals"]["calls"] == 77
    assert sec["totals"]["time_s"] is None  # synthetic range timestamps are not kernel times
    assert sec["totals"]["flops_tensor"] is None
    assert sec["totals"]["dram_bytes"] is None and sec["totals"]["l2_bytes"] is None
    assert len(sec["metrics"]) == 9 and all(m.startswith("smsp__sass") for m in sec["metrics"])
    by_name = defaultdict(float)
    by_calls = defaultdict(int)
    for k in sec["kernels"]:
        by_name[k["name"]] += k["flops"]
        by_calls[k["name"]] += k["calls"]
    assert dict(by_name) == dict(per_kernel)
    assert dict(by_calls) == dict(calls)
    assert any("synthetic" in n for n in sec["notes"])


def test_real_cupti_trace_op_attribution():
    sec = counters_from_trace(shared_path("traces", CUPTI_TRACE))
    ops = {k["name"]: k["op"] for k in sec["kernels"] if k["name"] != "__missing__"}
    assert ops["ampere_sgemm_32x32_sliced1x4_tn"] == "aten::addmm"
    assert ops["ampere_gcgemm_64x64_nt"] == "aten::cudnn_convolution"
    clamp = [k for k in sec["kernels"] if "launch_clamp_scalar" in k["name"]]
    assert [(k["op"], k["calls"]) for k in clamp] == [("aten::clamp_min_", 14)]
    top = sec["kernels"][0]
    assert (top["name"], top["calls"], top["flops"]) == (
        "ampere_sgemm_32x32_sliced1x4_tn",
        6,
        30_160_191_488.0,
    )


def test_trace_without_counters_is_a_one_line_error():
    path = shared_path("traces", "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    with pytest.raises(CountersError, match=r"cpu_only.*field traceEvents: no 'cuda_profiler"):
        counters_from_trace(path)


def test_empty_and_broken_json(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    with pytest.raises(CountersError, match=r"empty\.json: field traceEvents: missing"):
        counters_from_trace(empty)
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [ {"ph": ')
    with pytest.raises(CountersError, match=r"broken\.json: not a readable JSON trace"):
        counters_from_trace(broken)


def test_cli_into_round_trip_keeps_record_valid(tmp_path, make_record, capsys):
    from perfsuite.cli import main
    from perfsuite.record import load_record, quantity, write_record

    trace = shared_path("traces", CUPTI_TRACE)
    work = {"flops_per_step": quantity(1.5e9, "FLOP", "counted"), "batch_size": 128}
    rec = make_record([(1, 10.0, 0.5)], work=work, status="not_reached")
    write_record(tmp_path, rec)
    rc = main(["counters", str(trace), "--into", str(tmp_path), "--steps", "2", "--json"])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    loaded = load_record(tmp_path)  # validates against the schema
    sec = loaded["counters"]
    assert sec["totals"]["flops"] == 80_231_038_456.0 == printed["totals"]["flops"]
    assert sec["window_steps"] == 2
    assert loaded["work"] == work  # counted numbers stay beside the measured ones
    assert sec["file"].endswith(CUPTI_TRACE) and not sec["file"].startswith("/")
    assert loaded["evaluations"] == rec["evaluations"]


def test_cli_text_and_errors(tmp_path, capsys):
    from perfsuite.cli import main

    rc = main(["counters", str(shared_path("traces", CUPTI_TRACE)), "--top", "3", "--steps", "4"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "80.2 GFLOP" in out and "per step: CUDA-core FLOP 20.1 GFLOP" in out
    assert "... 13 more kernels" in out
    cpu = shared_path("traces", "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    assert main(["counters", str(cpu)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("perfsuite: error: ") and "field traceEvents" in err[-1]
    assert main(["counters", str(tmp_path / "nope.csv")]) == 2
    assert "nope.csv: file not found" in capsys.readouterr().err


def test_truncated_gzip_is_a_one_line_error(tmp_path, capsys):
    from perfsuite.cli import main
    from perfsuite.counters import load_counters

    full = gzip.compress(b'{"traceEvents": []}' * 200)
    bad = tmp_path / "trunc.json.gz"
    bad.write_bytes(full[: len(full) // 2])
    with pytest.raises(CountersError, match=r"trunc\.json\.gz: cannot read"):
        load_counters(bad)
    assert main(["counters", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("perfsuite: error: ") and "trunc.json.gz: cannot read" in err[-1]
    assert not any("Traceback" in line for line in err)


def test_metric_missing_in_one_launch_stays_none_for_the_group():
    from perfsuite.counters.section import Launch, build_section

    m = "dram__bytes_read.sum"
    x = "lts__t_bytes.sum"
    launches = [
        Launch("k", {m: 100.0, x: 1.0}),
        Launch("k", {m: None, x: 2.0}),  # unknown here: no partial sum afterwards
        Launch("k", {m: 50.0, x: 3.0}),
        Launch("j", {x: 1.0}),
        Launch("j", {x: 1.0, m: 7.0}),  # absent in the first launch of "j"
    ]
    sec = build_section(launches, tool="t", file="f", metrics=[m, x])
    by = {k["name"]: k["raw"] for k in sec["kernels"]}
    assert by["k"] == {m: None, x: 6.0}
    assert by["j"] == {m: None, x: 2.0}


def _range_trace(n):
    evs = [
        {"ph": "X", "cat": "cuda_profiler_range", "name": f"k{i % 3}", "pid": 0, "tid": 1,
         "ts": float(i), "dur": 1.0, "args": {"dram__bytes_read.sum": 10.0 * i}}
        for i in range(n)
    ]  # fmt: skip
    return evs


def test_trace_read_through_timeline_reader_bare_list_and_truncated_gzip(tmp_path):
    evs = _range_trace(6)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(evs))  # bare top-level list: the timeline reader accepts it
    sec = counters_from_trace(bare)
    by = {k["name"]: k["raw"]["dram__bytes_read.sum"] for k in sec["kernels"]}
    assert by == {"k0": 30.0, "k1": 50.0, "k2": 70.0}
    assert sec["totals"]["calls"] == 6
    big = gzip.compress(json.dumps({"traceEvents": _range_trace(20000)}).encode())
    trunc = tmp_path / "trunc.json.gz"
    trunc.write_bytes(big[: len(big) * 2 // 3])
    with pytest.raises(CountersError, match=r"trunc\.json\.gz: not a readable JSON trace \(cannot"):
        counters_from_trace(trunc)
    with pytest.raises(CountersError, match=r"nope\.json: file not found"):
        counters_from_trace(tmp_path / "nope.json")


# -- what the file is, before a reader names the wrong thing ----------------------------------

ELF_LIKE = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8  # NUL at offset 7
NOT_A_SOURCE = "not an ncu CSV, CUPTI trace or .ncu-rep"


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("empty.csv", b"", "empty file"),
        ("blank.csv", b" \n\n", "empty file (whitespace only)"),
        ("empty.json.gz", gzip.compress(b"", mtime=0), "empty file"),
        ("empty.ncu-rep", b"", "empty file"),
        ("rnd.bin", ELF_LIKE, f"{NOT_A_SOURCE} (binary data, NUL byte at offset 7; an ncu "
         "report must be named *.ncu-rep)"),
        ("hi.bin", bytes(range(128, 256)) * 4, f"{NOT_A_SOURCE} (binary data, mostly not UTF-8; "
         "an ncu report must be named *.ncu-rep)"),
    ],
)  # fmt: skip
def test_empty_or_binary_source_is_named_so(tmp_path, capsys, name, body, message):
    from perfsuite.cli import main
    from perfsuite.counters import load_counters

    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(CountersError) as info:
        load_counters(path)
    assert str(info.value) == f"{path}: {message}"
    assert main(["counters", str(path)]) == 2
    assert (
        capsys.readouterr().err.strip().splitlines()[-1] == f"perfsuite: error: {path}: {message}"
    )


def test_ncu_csv_reader_alone_names_empty_and_binary_files(tmp_path):
    from perfsuite.counters.ncu_csv import read_ncu_csv

    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(CountersError, match=r"empty\.csv: empty file$"):
        read_ncu_csv(empty)
    binary = tmp_path / "b.csv"
    binary.write_bytes(ELF_LIKE)
    with pytest.raises(CountersError, match=r"b\.csv: not an ncu CSV \(binary data, NUL byte"):
        read_ncu_csv(binary)


def test_latin1_program_output_before_the_csv_is_still_text(tmp_path):
    from pathlib import Path

    from perfsuite.counters import load_counters

    raw = (Path(__file__).parent / "fixtures" / "ncu" / "raw_page.csv").read_bytes()
    path = tmp_path / "stdout.csv"
    path.write_bytes(b"epoch 1: pr\xe9cision 0.91\n==PROF== Disconnected\n" + raw)
    assert load_counters(path)["kernels"]


def _cupti(**bad: object) -> dict:
    ev = {"ph": "X", "cat": "cuda_profiler_range", "name": "k", "pid": 0, "tid": 1, "ts": 2.0,
          "dur": 1.0, "args": {"dram__bytes_read.sum": 10.0}}  # fmt: skip
    ev.update(bad)
    return ev


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"ts": "x"}, "field traceEvents[1].ts: 'x' is not a number"),
        ({"ts": "nan"}, "field traceEvents[1].ts: 'nan' is not a finite number"),
        ({"ts": [1]}, "field traceEvents[1].ts: '[1]' is not a number"),
        ({"ts": None}, "field traceEvents[1].ts: missing in a 'cuda_profiler_range' event"),
        ({"pid": [0]}, "field traceEvents[1].pid: expected a number or a string"),
        ({"args": [1, 2]}, "field traceEvents[1].args: expected an object"),
    ],
)
def test_malformed_profiler_range_is_a_one_line_error(tmp_path, capsys, bad, message):
    from perfsuite.cli import main

    path = tmp_path / "t3.json"
    path.write_text(json.dumps({"traceEvents": [_cupti(), _cupti(**bad)]}))
    with pytest.raises(CountersError) as info:
        counters_from_trace(path)
    assert str(info.value) == f"{path}: {message}"
    assert main(["counters", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"perfsuite: error: {path}: {message}"


def _host(cat: str, name: str, ts: float, dur: float = 1.0, pid: object = 0) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": 1, "ts": ts, "dur": dur}


def test_numeric_string_ts_still_orders_the_ranges(tmp_path):
    events = [
        _cupti(name="late", ts="5"),  # read as 5.0: after "early", so it gets the 2nd launch
        _cupti(name="early", ts=1),
        _host("cpu_op", "aten::first", 0.5),
        _host("cuda_runtime", "cudaLaunchKernel", 1.0, 0.1),
        _host("cpu_op", "aten::second", 2.5),
        _host("cuda_runtime", "cudaLaunchKernel", 3.0, 0.1),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    ops = {k["name"]: k["op"] for k in counters_from_trace(path)["kernels"]}
    assert ops == {"early": "aten::first", "late": "aten::second"}


def test_launch_with_a_list_as_pid_is_skipped_not_a_traceback(tmp_path):
    events = [
        _cupti(name="a", ts=1),
        _cupti(name="b", ts=2),
        _host("cpu_op", "aten::mm", 0.5, 5.0),
        _host("cuda_runtime", "cudaLaunchKernel", 1.0, 0.1),
        _host("cuda_runtime", "cudaLaunchKernel", 2.0, 0.1, pid=[0]),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    notes = counters_from_trace(path)["notes"]
    assert any(n.startswith("1 kernel launches vs 2 profiler ranges") for n in notes), notes


def test_attaching_prints_the_path_as_given(tmp_path, make_record, capsys):
    """The record keeps the capture's path from its own folder; the text shows the path the
    user typed (it showed ../../../work/... after --into)."""
    from perfsuite.cli import main
    from perfsuite.record import load_record, write_record

    write_record(tmp_path / "r", make_record([(1, 10.0, 0.5)], status="not_reached"))
    trace = shared_path("traces", CUPTI_TRACE)
    assert main(["counters", str(trace), "--into", str(tmp_path / "r"), "--steps", "2"]) == 0
    assert f"from {trace}:" in capsys.readouterr().out
    assert not load_record(tmp_path / "r")["counters"]["file"].startswith("/")
