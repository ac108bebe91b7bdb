"""Nsight Compute path on REAL H100 output (../shared/data/gpu) and hand-written edge cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.counters import CountersError, counters_from_ncu, load_counters, ncu_command
from perfsuite.counters.calibrate import check_calibration
from tests.conftest import shared_path

FIX = Path(__file__).parent / "fixtures" / "ncu"
GEMM_FLOP = 2 * 4096**3  # 137,438,953,472
GEMM_FILES = ("h100-gemm4096.ncu.csv", "h100-ncu-stdout-gemm4096.csv")


def _gpu(name):
    return shared_path("gpu", name)


def _cli_json(capsys, *argv):
    from perfsuite.cli import main

    assert main(["counters", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ncu_command_uses_start_end_filter_and_union_of_chip_metrics():
    cmd = ncu_command(["python", "train.py"], metrics=["dram__bytes_read.sum"], launch_count=50)
    assert cmd == [
        "ncu", "--csv", "--page", "raw", "--print-units", "base",
        "--metrics", "dram__bytes_read.sum,gpu__time_duration.sum",
        "--nvtx", "--nvtx-include", "perfsuite.steps",  # no "/": matches start/end ranges
        "--launch-count", "50",
        "python", "train.py",
    ]  # fmt: skip
    full = ncu_command(["x"])
    names = full[full.index("--metrics") + 1].split(",")
    for n in ("sm__ops_path_tensor_op_hgmma_src_fp16.sum",  # Hopper fp16 (per instruction)
              "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
              "sm__ops_path_tensor_src_fp16_dst_fp32.sum",  # Ampere combined
              "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "gpu__time_duration.sum",
              "lts__t_bytes.sum", "dram__bytes_write.sum"):  # fmt: skip
        assert n in names
    plain = ncu_command(["./a.out"], metrics=["lts__t_bytes.sum"], nvtx_range=None)
    assert "--nvtx" not in plain and plain[-1] == "./a.out"
    rep = ncu_command(["./a.out"], export="/tmp/r", ncu="/opt/ncu")
    assert rep[:4] == ["/opt/ncu", "--export", "/tmp/r", "--force-overwrite"]
    with pytest.raises(ValueError):
        ncu_command([])


def test_metric_names_exist_on_h100():
    import gzip

    from perfsuite.devices.counter_metrics import TENSOR_REQUEST_HOPPER, default_metrics

    text = gzip.decompress(_gpu("h100-ncu-query-metrics.txt.gz").read_bytes()).decode()
    listed = {line.split()[0] for line in text.splitlines() if line.strip()}
    for name in [*default_metrics((9, 0)), "gpu__time_duration.sum"]:
        assert name.removesuffix(".sum") in listed, name
    assert "sm__ops_path_tensor_src_fp16_dst_fp32" not in listed  # why fp16 needs other names
    assert len(TENSOR_REQUEST_HOPPER) == 9


@pytest.mark.parametrize("name", GEMM_FILES)
def test_gemm_flop_per_precision_exact(name, capsys):
    sec = _cli_json(capsys, _gpu(name))
    by = sec["totals"]["flops_tensor_by_precision"]
    assert by["bf16"] == GEMM_FLOP == 137_438_953_472
    assert by["tf32"] == GEMM_FLOP
    kern = {k["name"][:30]: k["flops_tensor_by_precision"] for k in sec["kernels"]}
    assert kern["nvjet_sm90_tst_256x128_64x4_1x"]["bf16"] == GEMM_FLOP  # bf16 GEMM -> bf16
    assert kern["nvjet_sm90_tst_256x128_64x4_1x"]["tf32"] == 0.0
    assert kern["sm90_xmma_gemm_f32f32_tf32f32_"]["tf32"] == GEMM_FLOP
    assert sec["totals"]["calls"] == 9 and sec["device"]["cc"] == "9.0"
    if name == "h100-gemm4096.ncu.csv":
        # fp16 from the Hopper per-instruction names; bf16 and tf32 are in both the combined
        # and the per-instruction columns and must be counted once: 3 GEMMs, not 5
        assert by["fp16"] == GEMM_FLOP
        assert kern["nvjet_sm90_hsh_256x128_64x4_1x"]["fp16"] == GEMM_FLOP
        assert sec["totals"]["flops_tensor"] == 3 * GEMM_FLOP
    else:
        # the stdout capture asked for the Ampere fp16 names only, which H100 lacks (ncu drops
        # them silently): fp16 is unknown, not zero
        assert by["fp16"] is None
        assert sec["totals"]["flops_tensor"] == 2 * GEMM_FLOP
        assert any("fp16" in n and "not measured" in n for n in sec["notes"])
    # CUDA-core FLOP of the 6 random-fill launches + the TF32 GEMM's epilogue, hand-checked:
    # fill: 2*146,538,496 + 8,650,752 + 68,698,112 per launch (fp32), 2*8,921,088 (fp16)
    fp16_cc = sec["totals"]["flops_by_precision"]["fp16"]
    assert fp16_cc in (6 * 2 * 8_921_088, 5 * 2 * 8_921_088 + 2 * 8_921_089)


@pytest.mark.parametrize("name", GEMM_FILES)
def test_check_calibration_on_real_gemms(name):
    sec = counters_from_ncu(_gpu(name))
    res = check_calibration(sec, 4096, 4096, 4096)
    checks = {c.precision: c for c in res.checks}
    assert res.expected_flops == GEMM_FLOP
    assert checks["bf16"].ok and checks["bf16"].measured_flops == GEMM_FLOP
    assert checks["tf32"].ok and checks["tf32"].detail == "exact"
    if name == "h100-gemm4096.ncu.csv":
        assert res.ok and checks["fp16"].measured_flops == GEMM_FLOP
    else:
        assert not res.ok and checks["fp16"].measured_flops is None
        assert checks["fp16"].detail.startswith("not measured")
    wrong = check_calibration(sec, 4096, 4096, 2048)  # a wrong size must fail
    assert not wrong.checks[0].ok and wrong.checks[0].detail == "measured/expected = 2.000000"


def test_resnet9_start_end_window_matches_counted_flop():
    from perfsuite.flops.torch_counter import count_model
    from perfsuite.models import resolve_model

    sec = load_counters(_gpu("h100-resnet9-2steps-tf32.ncu.csv"), window_steps=2)
    assert sec["nvtx"] == "start/end" and sec["nvtx_range"] == "perfsuite.steps"
    assert sec["has_backward"] and sec["backward_calls"] == 64
    assert sec["totals"]["calls"] == 336
    assert sec["totals"]["flops_tensor_by_precision"]["tf32"] == 2_336_462_209_024
    assert sec["totals"]["flops_tensor_by_precision"]["bf16"] == 0.0
    per_step = sec["per_step"]["flops_tensor"]
    assert per_step == 1_168_231_104_512
    resolved = resolve_model("workload:cifar10")
    counted = count_model(
        resolved.model, [(512, *resolved.input_shape)], train=True, optimizer="sgd", device="meta"
    ).total_flops
    assert counted == pytest.approx(1.17e12, rel=0.01)
    assert abs(per_step / counted - 1) < 0.01
    assert sec["calibrated"]["precisions"]["tf32"] is True


def test_pushpop_window_is_flagged_as_forward_only(capsys):
    from perfsuite.cli import main

    path = _gpu("h100-resnet9-pushpop-ranges.ncu.csv")
    sec = load_counters(path)
    assert sec["nvtx"] == "push/pop" and sec["has_backward"] is False
    assert sec["backward_calls"] == 0 and sec["totals"]["calls"] == 312
    ranges = {r for k in sec["kernels"] for r in k["ranges"]}
    assert ranges == {"step_fp32", "step_bf16cl"}
    assert any("push/pop" in n for n in sec["notes"])
    assert main(["counters", str(path)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: no backward kernels" in out  # an optimizer's kernels, no backward
    by_precision = next(line for line in out.splitlines() if "FLOP by precision" in line)
    assert "fp16 not measured" in by_precision and "bf16 850,470,633,472" in by_precision


def test_a_gemm_capture_without_backward_kernels_is_no_warning(capsys):
    """Forward-only work (the 4096^3 GEMMs) is what it is: a note, not a WARNING."""
    from perfsuite.cli import main

    assert main(["counters", str(_gpu("h100-gemm4096.ncu.csv"))]) == 0
    out = capsys.readouterr().out
    assert "WARNING" not in out
    assert "note: no backward kernels" in out


def test_text_attribute_columns_and_bad_metric_value(tmp_path):
    src = _gpu("h100-gemm4096.ncu.csv").read_text().splitlines()
    sec = counters_from_ncu(_gpu("h100-gemm4096.ncu.csv"))  # 'No-CC' etc. are no error
    assert sec["device"]["name"] == "NVIDIA H100 80GB HBM3"
    header = src[0].split('","')
    col = header.index("dram__bytes_read.sum")
    fields = src[3].split('","')
    fields[col] = "lots"
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([*src[:3], '","'.join(fields), *src[4:]]) + "\n")
    with pytest.raises(CountersError, match=r"bad\.csv: line 4, column dram__bytes_read\.sum: "):
        counters_from_ncu(bad)
    nohead = tmp_path / "log.csv"
    nohead.write_text("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n")
    with pytest.raises(CountersError, match=r"log\.csv: column Kernel Name: no ncu CSV header"):
        counters_from_ncu(nohead)
    short = tmp_path / "short.csv"
    short.write_text("\n".join([*src[:3], src[3][: len(src[3]) // 2]]) + "\n")
    with pytest.raises(CountersError, match=r"short\.csv: line 4: \d+ fields, header has 361"):
        counters_from_ncu(short)


def test_details_page_fixture_scales_units():
    # hand-written (layout from public examples, not real output)
    sec = load_counters(FIX / "details_page.csv")
    sgemm, fill = sec["kernels"]
    assert sgemm["name"] == "ampere_sgemm_64x64_nn"
    assert sgemm["dram_bytes"] == pytest.approx(2.10e6 + 524.29e3, rel=1e-12)  # Mbyte + Kbyte
    assert sgemm["time_s"] == pytest.approx(41.50e-6, rel=1e-12)  # usecond
    assert sgemm["flops"] == 2 * 134_217_728 + 65_536
    assert sgemm["flops_tensor"] is None  # not collected, so unknown rather than 0
    assert fill["time_s"] == pytest.approx(3072e-9, rel=1e-12)


def test_ncu_rep_through_a_stand_in_ncu_report_module(tmp_path, monkeypatch):
    """Exercises our use of the ncu_report API (as documented) with a stand-in module."""
    import sys

    from tests.ncu_report_standin import Action, module

    # emit_nvtx's stack around a cuDNN kernel; ncu_report's push_pop_ranges() gives these
    # names sorted, push_pop_range(i) in stack order
    stack = ["aten::convolution, seq = 7", "aten::_convolution", "aten::cudnn_convolution"]
    dev = {"device__attribute_compute_capability_major": 9,
           "device__attribute_compute_capability_minor": 0}  # fmt: skip
    t = "sm__ops_path_tensor_src_bf16_dst_fp32"
    time = "gpu__time_duration.sum"
    se = ["perfsuite.steps"]
    actions = [
        Action(
            "sm90_xmma_wgrad_k",
            {**dev, f"{t}.sum": 2048, f"{t}.avg": 1, time: 1500},
            stack,
            se,
        ),
        Action("gemm_k", {**dev, f"{t}.sum": 1024, time: 500}, stack, se),
    ]
    monkeypatch.setitem(sys.modules, "ncu_report", module(actions))
    rep = tmp_path / "x.ncu-rep"
    rep.write_bytes(b"\0binary")
    sec = load_counters(rep, window_steps=1)
    assert sec["totals"]["flops_tensor_by_precision"]["bf16"] == 3072.0
    assert sec["totals"]["time_s"] == pytest.approx(2e-6)
    assert sec["nvtx_range"] == "perfsuite.steps" and sec["has_backward"]
    assert sec["device"]["cc"] == "9.0"
    # the stack kept outermost first, suffix dropped: the op is the counted outer one
    assert sec["kernels"][0]["ranges"] == [
        "perfsuite.steps", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution"
    ]  # fmt: skip
    # the same op as the CSV reader names from the same ranges (the innermost aten one)
    assert sec["kernels"][0]["op"] == "aten::cudnn_convolution"
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import fails, and no ncu either
    monkeypatch.setattr("perfsuite.counters.ncu_binary.find_ncu", lambda: None)
    with pytest.raises(CountersError, match=r"x\.ncu-rep: \.ncu-rep needs NVIDIA's ncu_report"):
        load_counters(rep)


def test_into_record_keeps_it_valid(tmp_path, make_record, capsys):
    from perfsuite.cli import main
    from perfsuite.record import load_record, write_record

    write_record(tmp_path, make_record([(1, 10.0, 0.5)], status="not_reached"))
    path = _gpu("h100-resnet9-2steps-tf32.ncu.csv")
    assert main(["counters", str(path), "--into", str(tmp_path), "--steps", "2"]) == 0
    out = capsys.readouterr().out
    per_step = next(line for line in out.splitlines() if "per step:" in line)
    assert "CUDA-core FLOP 10.9 GFLOP" in per_step and "Tensor-Core FLOP 1.17 TFLOP" in per_step
    assert "convolution" in out and "WARNING" not in out
    sec = load_record(tmp_path)["counters"]  # validated against the schema on load
    assert sec["per_step"]["flops_tensor"] == 1_168_231_104_512
    assert sec["file"].endswith("h100-resnet9-2steps-tf32.ncu.csv")
    json.dumps(sec, allow_nan=False)  # JSON-friendly: no NaN/inf, no tuples/objects


def test_incomplete_formula_is_unknown_not_partial():
    # hand-written Ampere-style file holding only src_fp16_dst_fp32 of the two fp16 names
    sec = load_counters(FIX / "raw_page.csv")
    t = sec["totals"]
    assert t["flops_tensor_by_precision"]["fp16"] is None and t["flops_tensor"] is None
    assert t["flops"] == 1_048_576 + 1_835_007  # fadd; 2*262,144 + 1,048,575 + 262,144
    assert t["time_s"] == pytest.approx(56_832e-9, rel=1e-12)  # "nsecond" units
    assert sec["source"]["tensor_fp16"].startswith("not measured")


def test_alternative_fp16_formulas_are_cross_checked_not_added():
    from perfsuite.counters.section import Launch, build_section

    t = "sm__ops_path_tensor_"
    per_inst = {f"{t}op_hgmma_src_fp16.sum": 96.0, f"{t}op_hmma_src_fp16_dst_fp16.sum": 0.0,
                f"{t}op_hmma_src_fp16_dst_fp32.sum": 32.0}  # fmt: skip
    for combined, verdict in ((128.0, "(agree)"), (100.0, "(DISAGREE: the first one is used)")):
        values = {**per_inst, f"{t}src_fp16.sum": combined}
        sec = build_section([Launch("k", values)], tool="ncu", file="f", metrics=list(values),
                            device={"cc": "9.0"})  # fmt: skip
        assert sec["totals"]["flops_tensor_by_precision"]["fp16"] == 128.0  # per instruction
        assert sec["totals"]["flops_tensor"] == 128.0  # not 128 + combined
        note = next(n for n in sec["notes"] if "cross-check" in n)
        assert "per instruction (HGMMA + HMMA) = 128" in note
        assert note.endswith(f"= {combined:,.0f} {verdict}")
    # on a chip without HGMMA counters (Blackwell-like), the combined name alone is used
    values = {f"{t}src_fp16.sum": 64.0}
    sec = build_section([Launch("k", values)], tool="ncu", file="f", metrics=list(values),
                        device={"cc": "10.0"})  # fmt: skip
    assert sec["totals"]["flops_tensor_by_precision"]["fp16"] == 64.0
    assert sec["calibrated"]["precisions"]["fp16"] is False


def test_range_names_keep_colons_in_the_name():
    """ncu writes each NVTX range as `domain:name:PL_Type:...:Msg` (start/end cells lead with
    the id): the name is what lies between the domain and the six fields the header lists after
    `_Range`, so `emit_nvtx`'s `aten::...` names stay whole (split on every colon they read
    `aten`), nested ranges give one name each, outermost first, and `, seq = N` is dropped."""
    from perfsuite.counters.ncu_csv import range_names

    pp = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    se = "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    tail = ":none:none:none:none:none:none"
    assert range_names(pp, f'573  "<default domain>:step_fp32{tail}" ') == ("step_fp32",)
    assert range_names(se, f' "0:<default domain>:perfsuite.steps{tail}" ') == ("perfsuite.steps",)
    cell = (
        f'573  "<default domain>:aten::convolution_backward, seq = 12{tail}" '
        f'"<default domain>:aten::cudnn_convolution_backward_weight{tail}"'
    )
    assert range_names(pp, cell) == (
        "aten::convolution_backward",
        "aten::cudnn_convolution_backward_weight",
    )
    assert range_names(pp, "") == ()


def test_real_h200_emit_nvtx_capture_keeps_each_launch_stack():
    """Ten rows of a real `perfsuite run cifar10 --device cuda --counters ncu` capture (H200,
    2026-11-26): emit_nvtx push/pop stacks, one quoted entry per range and the launching thread
    (forward 693, autograd 750) in front, inside the start/end window. The same copy kernel ran
    under clone and under a pooling backward: two kernel rows, each with its own stack (one
    merged row would carry a union no launch ran in). The window is the start/end range, so no
    'backward left out' warning, and the conv bias add is attributed to aten::convolution."""
    from perfsuite.analyzers.roofline.measured import compare_counted_measured

    sec = load_counters(FIX / "h200_emit_nvtx_sample.csv", window_steps=1)
    assert sec["nvtx"] == "push/pop+start/end" and sec["nvtx_range"] == "perfsuite.steps"
    assert sec["has_backward"] and sec["totals"]["calls"] == 10
    assert sec["device"]["name"] == "NVIDIA H200"
    assert not any("left out" in n for n in sec["notes"])
    assert any("process-wide NVTX start/end" in n for n in sec["notes"])
    copies = [k for k in sec["kernels"] if "direct_copy_kernel" in k["name"]]
    assert sorted(k["ranges"][0] for k in copies) == [
        "aten::contiguous",
        "autograd::engine::evaluate_function: AdaptiveMaxPool2DBackward0",
    ]
    assert all(k["calls"] == 1 and k["ranges"][-1] == "perfsuite.steps" for k in copies)
    conv_ops = ["aten::convolution", "aten::convolution_backward", "aten::add_", "aten::clone",
                "aten::adaptive_max_pool2d_backward", "aten::_foreach_add"]  # fmt: skip
    per_op = [{"op": o, "family": "x", "flops": 1.0, "bytes": 1.0} for o in conv_ops]
    rows = {r.key: r for r in compare_counted_measured({"work": {"per_op": per_op},
                                                         "counters": sec}, by="op")}  # fmt: skip
    assert rows["aten::convolution"].kernels == 2  # the fprop and the bias add inside it
    assert rows["aten::add_"].kernels == 1  # the add_ called on its own (a long counter)
    assert rows["aten::adaptive_max_pool2d_backward"].kernels == 2  # its scatter and its copy
    assert rows["aten::clone"].kernels == 1
    assert rows["aten::convolution_backward"].kernels == 3  # dgrad, wgrad, bias-grad sum


def test_a_shipped_ncu_report_that_fails_to_import_is_named(tmp_path, monkeypatch):
    """A user can tell "missing" from "broken": the folder and the import error are said (a
    shipped module's compiled part can be built for another Python)."""
    import sys

    from perfsuite.counters import ncu_rep

    extras = tmp_path / "extras" / "python"
    extras.mkdir(parents=True)
    (extras / "ncu_report.py").write_text("raise ImportError('built for Python 3.10')\n")
    monkeypatch.setattr(ncu_rep, "shipped_dirs", lambda: [extras])
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)

    class HideInstalled:
        def find_spec(self, name, path=None, target=None):
            if name == "ncu_report" and sys.path[0] != str(extras):
                raise ModuleNotFoundError(name)
            return None

    monkeypatch.setattr(sys, "meta_path", [HideInstalled(), *sys.meta_path])
    assert not ncu_rep.available()
    assert ncu_rep.why_unavailable() == f"{extras}: ImportError: built for Python 3.10"
    assert str(extras) not in sys.path  # the folder is taken back off the path
    sys.modules.pop("ncu_report", None)


def test_ncu_report_is_also_found_in_a_standalone_install(tmp_path, monkeypatch):
    """ncu on PATH can be a wrapper whose tool lives in /opt/nvidia/nsight-compute/<version>:
    that install's extras/python is searched too, newest version first."""
    from perfsuite.counters import ncu_rep

    ncu = tmp_path / "cuda" / "bin" / "ncu"
    ncu.parent.mkdir(parents=True)
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    for version in ("2025.1.0", "2025.3.1"):
        (tmp_path / "opt" / version / "extras" / "python" / "ncu_report").mkdir(parents=True)
    monkeypatch.setenv("PERFSUITE_NCU", str(ncu))
    monkeypatch.setattr(ncu_rep, "INSTALL_GLOBS", (str(tmp_path / "opt" / "*"),))
    assert ncu_rep.shipped_dirs() == [
        tmp_path / "opt" / v / "extras" / "python" for v in ("2025.3.1", "2025.1.0")
    ]


def test_ncu_report_is_found_where_ncu_ships_it(tmp_path, monkeypatch):
    import sys

    from perfsuite.counters import ncu_rep

    # CUDA's layout: bin/ncu is a wrapper script, the tool and its extras in nsight-compute-*/
    root = tmp_path / "cuda"
    (root / "bin").mkdir(parents=True)
    ncu = root / "bin" / "ncu"
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    extras = root / "nsight-compute-2099.1" / "extras" / "python"
    extras.mkdir(parents=True)
    (extras / "ncu_report.py").write_text("def load_report(path):\n    raise OSError('stub')\n")
    monkeypatch.setenv("PERFSUITE_NCU", str(ncu))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "ncu_report", raising=False)

    class HideInstalled:
        """An installed ncu-report (the `ncu` extra) would be found first: not importable
        here until the lookup puts ncu's own extras/python at the head of sys.path."""

        def find_spec(self, name, path=None, target=None):
            if name == "ncu_report" and sys.path[0] != str(extras):
                raise ModuleNotFoundError(name)
            return None

    monkeypatch.setattr(sys, "meta_path", [HideInstalled(), *sys.meta_path])
    assert ncu_rep.shipped_dirs() == [extras]
    assert ncu_rep.available() and ncu_rep.origin() == str(extras / "ncu_report.py")
    rep = tmp_path / "x.ncu-rep"
    rep.write_bytes(b"\0")
    with pytest.raises(CountersError, match=r"x\.ncu-rep: ncu_report cannot load it: stub"):
        load_counters(rep)
    # not monkeypatch.delitem: its undo would put the stub back for every later test
    sys.modules.pop("ncu_report", None)


def test_unmeasured_precision_makes_tensor_flop_lower_bounds(capsys):
    """The stdout capture has no fp16 Tensor-Core counter: its fp16 GEMM's tensor FLOP reads
    ">=0", the totals ">=275 GFLOP", and a line says which precisions were not measured."""
    from perfsuite.cli import main

    assert main(["counters", str(_gpu("h100-ncu-stdout-gemm4096.csv"))]) == 0
    out = capsys.readouterr().out
    hsh = next(line for line in out.splitlines() if line.startswith("nvjet_sm90_hsh"))
    assert "≥0 FLOP" in hsh and "≥0 FLOP/s" in hsh
    assert "Tensor-Core FLOP ≥275 GFLOP" in out
    assert "(fp16, fp8 not measured" in out and "lower bounds" in out
    assert main(["counters", str(_gpu("h100-gemm4096.ncu.csv"))]) == 0
    out = capsys.readouterr().out
    assert "≥" not in out and "Tensor-Core FLOP 412 GFLOP" in out


def test_kernel_rows_can_be_told_apart(capsys):
    """The push/pop file's rows name their NVTX range (step_fp32 or step_bf16cl), kernel
    names lose `void` and shared namespaces before they are cut, and 999.7 us reads 1 ms."""
    from perfsuite import fmt
    from perfsuite.cli import main

    assert main(["counters", str(_gpu("h100-resnet9-pushpop-ranges.ncu.csv")), "--top", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[1].split()
    assert header[:2] == ["kernel", "range"]
    rows = [line for line in lines[3:] if "softmax_warp_forward" in line]
    assert len(rows) == 2 and {r[50:63].strip() for r in rows} == {"step_fp32", "step_bf16cl"}
    assert all(r.startswith("softmax_warp_forward<") for r in rows)
    assert fmt.si(0.0009997, "s") == "1 ms" and fmt.si(999.7) == "1 k"
    main(["counters", str(_gpu("h100-gemm4096.ncu.csv"))])  # no user ranges: no column
    assert capsys.readouterr().out.splitlines()[1].split()[:2] == ["kernel", "op"]
