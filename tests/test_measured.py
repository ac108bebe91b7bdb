"""perfsuite.analyzers.roofline.measured: counted vs measured FLOP and bytes per op class, on the
real H100 window."""

from __future__ import annotations

import pytest

from perfsuite.analyzers.roofline.measured import MAPPING, compare_counted_measured
from tests.conftest import shared_path


def _per_op():
    from perfsuite.flops.torch_counter import count_model
    from perfsuite.models import resolve_model

    resolved = resolve_model("workload:cifar10")
    res = count_model(
        resolved.model, [(512, *resolved.input_shape)], train=True, optimizer="sgd", device="meta"
    )
    return [vars(r) for r in res.per_op]


def test_resnet9_convolution_counted_vs_measured():
    from perfsuite.counters import load_counters

    sec = load_counters(shared_path("gpu", "h100-resnet9-2steps-tf32.ncu.csv"), window_steps=2)
    rows = compare_counted_measured({"work": {"per_op": _per_op()}, "counters": sec})
    by = {r.key: r for r in rows}
    conv = rows[0]
    assert conv.key == "convolution" and conv.mapping == MAPPING
    assert conv.counted_flops == 1_163_265_048_576
    # per step: Tensor-Core 1,168,231,104,512 of which all in conv kernels, + CUDA-core FLOP
    assert conv.measured_tensor_flops == 1_168_231_104_512
    assert conv.flops_ratio == pytest.approx(1.0084, abs=1e-4)
    assert conv.bytes_ratio == pytest.approx(1.2256, abs=1e-4)  # DRAM vs compulsory model
    assert conv.kernels == 13
    assert by["optimizer"].counted_flops is None and by["optimizer"].measured_flops > 0
    assert by["memory"].flops_ratio is None  # counted 0: no ratio
    measured = sum(r.measured_flops or 0.0 for r in rows)
    total = sec["per_step"]["flops"] + sec["per_step"]["flops_tensor"]
    assert measured == pytest.approx(total, rel=1e-12)  # every kernel lands in one class


def test_hand_made_record_and_no_counters():
    rec = {
        "work": {"per_op": [
            {"op": "aten::mm", "family": "matmul", "flops": 100.0, "bytes": 40.0},
            {"op": "aten::add", "family": "elementwise", "flops": 10.0, "bytes": 30.0},
        ]},
        "counters": {"window_steps": 2, "kernels": [
            {"name": "nvjet_sm90_tst_x", "flops": 0.0, "flops_tensor": 240.0, "dram_bytes": 100.0},
            {"name": "vectorized_elementwise_kernel<add>", "flops": 20.0, "flops_tensor": None,
             "dram_bytes": None},
        ]},
    }  # fmt: skip
    rows = compare_counted_measured(rec)
    assert [r.key for r in rows] == ["matmul", "elementwise"]
    mm, ew = rows
    assert (mm.measured_flops, mm.flops_ratio, mm.bytes_ratio) == (120.0, 1.2, 1.25)
    assert (ew.measured_flops, ew.measured_tensor_flops, ew.measured_dram_bytes) == (
        10.0,
        None,
        None,
    )
    assert compare_counted_measured({"work": rec["work"]}) == []


def test_by_op_attributes_kernels_to_the_outermost_counted_op_range():
    """A cuDNN kernel runs in aten::cudnn_convolution inside aten::convolution: the counted op
    is the latter, and so is the bias add_ it runs inside (add_ is counted where called on its
    own); a kernel in no counted op's range lands in one UNATTRIBUTED row; captures without op
    ranges give no per-op table at all (the class table stays)."""
    from perfsuite.analyzers.roofline.measured import OP_MAPPING, UNATTRIBUTED, has_op_ranges

    steps = "perfsuite.steps"
    conv = [steps, "aten::conv2d", "aten::convolution", "aten::_convolution",
            "aten::cudnn_convolution"]  # fmt: skip
    rec = {
        "work": {"per_op": [
            {"op": "aten::convolution", "family": "convolution", "flops": 100.0, "bytes": 50.0},
            {"op": "aten::convolution_backward", "family": "convolution", "flops": 200.0,
             "bytes": 80.0},
            {"op": "aten::relu", "family": "elementwise", "flops": 4.0, "bytes": 8.0},
            {"op": "aten::add_", "family": "elementwise", "flops": 6.0, "bytes": 96.0},
        ]},
        "counters": {"window_steps": 2, "kernels": [
            {"name": "sm90_xmma_fprop", "ranges": conv, "flops": 0.0, "flops_tensor": 210.0,
             "dram_bytes": 120.0},
            {"name": "elementwise_kernel<CUDAFunctor_add>", "flops": 10.0, "flops_tensor": 0.0,
             "dram_bytes": 30.0, "ranges": [*conv[:-1], "aten::add_"]},
            {"name": "vectorized_elementwise_kernel<add>", "ranges": [steps, "aten::add_"],
             "flops": 12.0, "flops_tensor": 0.0, "dram_bytes": 200.0},
            {"name": "sm90_xmma_dgrad", "flops": 0.0, "flops_tensor": 400.0, "dram_bytes": 100.0,
             "ranges": [steps, "aten::convolution_backward",
                        "aten::cudnn_convolution_backward_input"]},
            {"name": "sm90_xmma_wgrad", "flops": 0.0, "flops_tensor": 400.0, "dram_bytes": 60.0,
             "ranges": [steps, "aten::convolution_backward"]},
            {"name": "vectorized_elementwise_kernel<fill>", "ranges": [steps, "aten::zero_"],
             "flops": 0.0, "flops_tensor": None, "dram_bytes": 10.0},
        ]},
    }  # fmt: skip
    assert has_op_ranges(rec)
    rows = {r.key: r for r in compare_counted_measured(rec, by="op")}
    assert rows["aten::convolution"].measured_flops == 110.0  # 210 + the bias add's 10, / 2
    assert rows["aten::convolution"].flops_ratio == 1.1
    assert rows["aten::add_"].measured_flops == 6.0  # only the add_ called on its own
    bwd = rows["aten::convolution_backward"]
    assert (bwd.measured_flops, bwd.kernels, bwd.measured_dram_bytes) == (400.0, 2, 80.0)
    assert (
        rows[UNATTRIBUTED].measured_dram_bytes == 5.0 and rows[UNATTRIBUTED].counted_flops is None
    )
    assert rows["aten::relu"].measured_flops is None  # counted, no kernel in its range
    assert all(r.mapping == OP_MAPPING for r in rows.values())
    for k in rec["counters"]["kernels"]:
        k["ranges"] = [steps]
    assert not has_op_ranges(rec) and compare_counted_measured(rec, by="op") == []
    assert compare_counted_measured(rec)[0].key == "convolution"  # by class: unchanged


def test_real_capture_with_op_ranges_reads_per_op(tmp_path):
    """The real two-step H100 capture with emit_nvtx-style push/pop cells written into its
    empty push/pop column (the convolution kernels' forward ones named aten::convolution): the
    reader keeps the names whole and the per-op table puts the fprop FLOP under the counted op.
    The cell layout is ncu's (`tid  "domain:name:PL_Type:...:Msg"`, one quoted entry per range
    of the stack: seen on a real H200 capture, tests/fixtures/ncu/h200_emit_nvtx_sample.csv)."""
    import csv

    from perfsuite.counters import load_counters

    src = shared_path("gpu", "h100-resnet9-2steps-tf32.ncu.csv")
    rows = list(csv.reader(src.open()))
    header = rows[0]
    pp = next(i for i, h in enumerate(header) if "Push/Pop_Range" in h)
    name = header.index("Kernel Name")
    tail = ":none:none:none:none:none:none"
    fprop = 0
    for row in rows[1:]:
        if len(row) > name and "fprop" in row[name]:
            row[pp] = (
                f'573  "<default domain>:aten::convolution, seq = 7{tail}" '
                f'"<default domain>:aten::cudnn_convolution{tail}"'
            )
            fprop += 1
    assert fprop > 0
    path = tmp_path / "ranged.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    sec = load_counters(path, window_steps=2)
    ranged = [k for k in sec["kernels"] if "aten::convolution" in k["ranges"]]
    assert ranged and all(k["op"] == "aten::cudnn_convolution" for k in ranged)
    rec = {"work": {"per_op": _per_op()}, "counters": sec}
    by_op = {r.key: r for r in compare_counted_measured(rec, by="op")}
    fwd = by_op["aten::convolution"]
    assert fwd.measured_tensor_flops == sum(k["flops_tensor"] for k in ranged) / 2
    # forward convolutions are a third of the convolution work: counted vs measured within 2%
    assert fwd.flops_ratio == pytest.approx(1.0, abs=0.02)
    # the hierarchical roofline groups those kernels under the same counted op
    from perfsuite.analyzers.roofline.levels import kernel_points

    names = {p.name for p in kernel_points(sec, 3e12, None, 4e14, None, {"aten::convolution"})}
    assert "aten::convolution" in names and "aten::cudnn_convolution" not in names


KERNEL_CASES = [
    ("sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32", "convolution", True),
    ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32", "convolution", False),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "matmul", False),
    ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2>", "normalization", True),
    ("void at::<unnamed>::max_pool_backward_nchw<float>", "pooling", True),
    ("void <unnamed>::softmax_warp_forward<float, float>", "softmax_loss", False),
    ("void at::<unnamed>::multi_tensor_apply_kernel<Meta<2>>", "optimizer", False),
    ("void at::vectorized_elementwise_kernel<4, at::FillFunctor<float>>", "memory", False),
    ("void at::vectorized_elementwise_kernel<4, at::CUDAFunctor_add<float>>", "elementwise", False),
    ("my_custom_kernel", "other", False),
]


@pytest.mark.parametrize(("name", "cls", "backward"), KERNEL_CASES)
def test_kernel_names_map_to_classes_and_backward(name, cls, backward):
    from perfsuite.devices.kernels import is_backward_kernel, kernel_class

    assert (kernel_class(name), is_backward_kernel(name)) == (cls, backward)


def test_partial_sums_are_lower_bounds_never_totals():
    """A kernel without its counters, or a capture without fp16's, makes the row a lower bound:
    marked, and shown with ">=" in the table, not as the measured total."""
    from perfsuite.views.roofline_rows import measured_table

    def kernel(name, tensor, dram):
        return {"name": name, "op": None, "flops": 0.0, "flops_tensor": tensor,
                "dram_bytes": dram, "time_s": 1e-3}  # fmt: skip

    per_op = [{"op": "aten::convolution", "family": "convolution", "flops": 2e12, "bytes": 1e9}]
    counters = {"window_steps": 1, "kernels": [kernel("sm90_xmma_fprop_a", 1e12, 5e8),
                                               kernel("sm90_xmma_fprop_b", None, 5e8)]}  # fmt: skip
    (row,) = compare_counted_measured({"work": {"per_op": per_op}, "counters": counters})
    assert row.measured_flops == 1e12 and row.flops_ratio == 0.5
    assert row.flops_partial and not row.bytes_partial
    _, body = measured_table([row])
    assert body[0][2] == "≥1 TFLOP" and body[0][3] == "≥0.5" and body[0][5] == "1 GB"
    counters["kernels"][1]["flops_tensor"] = 1e12
    (row,) = compare_counted_measured({"work": {"per_op": per_op}, "counters": counters})
    assert not row.flops_partial and row.flops_ratio == 1.0
    counters["tensor_unmeasured"] = ["fp8"]
    (row,) = compare_counted_measured({"work": {"per_op": per_op}, "counters": counters})
    assert row.flops_partial


def test_a_precision_the_chip_lacks_is_not_unmeasured():
    """An A100 has no fp8 Tensor Cores: its captures are not lower bounds for want of fp8
    counters; sections written before `tensor_unmeasured` get it at load from their null totals."""
    from perfsuite.analyzers.roofline.measured import unmeasured_precisions
    from perfsuite.devices.counter_metrics import chip_tensor_precisions
    from perfsuite.record.migrate import migrate

    assert chip_tensor_precisions("8.0") == ("fp16", "bf16", "tf32", "fp64")
    assert chip_tensor_precisions("8.6") == ("fp16", "bf16", "tf32")
    assert chip_tensor_precisions("8.9") == ("fp16", "bf16", "tf32", "fp8")
    assert chip_tensor_precisions("7.5") == ("fp16",)
    assert "fp8" in chip_tensor_precisions("9.0") and "fp8" in chip_tensor_precisions(None)
    by_prec = {"fp16": 0.0, "bf16": 0.0, "tf32": 5.0, "fp8": None, "fp64": 0.0}

    def older(cc: str) -> dict:  # a version-2 record's section, as the loader migrates it
        counters = {"device": {"cc": cc}, "totals": {"flops_tensor_by_precision": by_prec}}
        return migrate({"schema_version": 2, "counters": counters})["counters"]

    assert older("8.0")["tensor_unmeasured"] == [] and unmeasured_precisions(older("8.0")) == []
    assert unmeasured_precisions(older("9.0")) == ["fp8"]
    assert unmeasured_precisions({"tensor_unmeasured": []}) == []


def test_a_side_that_was_not_modeled_gets_no_ratio():
    rec = {
        "work": {"per_op": [
            {"op": "aten::add", "family": "elementwise", "flops": 0.0, "bytes": 4.0},
        ]},
        "counters": {"window_steps": 1, "kernels": [
            {"name": "vectorized_elementwise_kernel<add>", "flops": 0.0, "flops_tensor": None,
             "dram_bytes": 5.46e9},
        ]},
    }  # fmt: skip
    (row,) = [r for r in compare_counted_measured(rec) if r.modeled_bytes]
    assert (row.modeled_bytes, row.measured_dram_bytes, row.bytes_ratio) == (4.0, 5.46e9, None)
    assert row.note == "bytes not modeled (ratio not shown)"
    rec["work"]["per_op"][0]["bytes"] = 5.0e9  # modeled: the ratio is back
    (row,) = [r for r in compare_counted_measured(rec) if r.modeled_bytes]
    assert row.bytes_ratio == pytest.approx(1.092) and row.note is None


def test_counted_work_that_measures_as_none_is_explained():
    """Max pooling's comparisons are counted FLOP, which the FP add/mul/FMA counters never see
    (the H100 cifar10 run: 120 MFLOP counted per step, 0 measured); a measured 0 where
    nothing was counted needs no word."""
    from perfsuite.analyzers.roofline.measured import table_notes

    rec = {
        "work": {"per_op": [
            {"op": "aten::max_pool2d", "family": "pooling", "flops": 120e6, "bytes": 9e8},
            {"op": "aten::eq", "family": "elementwise", "flops": 0.0, "bytes": 9e3},
        ]},
        "counters": {"window_steps": 1, "kernels": [
            {"name": "max_pool_forward_nchw<float>", "flops": 0.0, "flops_tensor": 0.0,
             "dram_bytes": 8e8},
            {"name": "vectorized_elementwise_kernel<eq>", "flops": 0.0, "flops_tensor": 0.0,
             "dram_bytes": 1e4},
        ]},
    }  # fmt: skip
    (note,) = table_notes(compare_counted_measured(rec))
    assert note.startswith("pooling: FLOP counted, none measured:")
    rec["counters"]["kernels"][0]["flops"] = 1e6
    assert table_notes(compare_counted_measured(rec)) == []


def test_the_h100_cifar10_window_reads_per_op():
    """The whole real ncu window of an H100 cifar10 run (op ranges inside the start/end window)
    against that run's own counted work: the figures docs/counters.md and
    docs/results/2026-11-26-counters-gpu.md quote."""
    import json
    from pathlib import Path

    from perfsuite.analyzers.roofline.measured import table_notes
    from perfsuite.counters import load_counters

    here = Path(__file__).parent / "fixtures" / "ncu"
    sec = load_counters(here / "h100_cifar10_window.csv.gz", window_steps=3)
    assert (sec["totals"]["calls"], sec["backward_calls"], sec["nvtx_range"]) == (
        362,
        96,
        "perfsuite.steps",
    )
    assert sec["totals"]["flops_tensor_by_precision"]["tf32"] == 2_376_578_629_632
    assert sec["device"]["name"] == "NVIDIA H100 80GB HBM3" and sec["tensor_unmeasured"] == []
    work = json.loads((here / "h100_cifar10_work.json").read_text())
    rows = {r.key: r for r in compare_counted_measured({"work": work, "counters": sec}, by="op")}
    assert rows["aten::convolution"].flops_ratio == pytest.approx(1.041, abs=5e-4)
    assert rows["aten::convolution_backward"].flops_ratio == pytest.approx(1.121, abs=5e-4)
    assert rows["aten::_foreach_add"].flops_ratio == pytest.approx(1.0)  # the optimizer: exact
    assert rows["aten::convolution"].bytes_ratio == pytest.approx(1.056, abs=5e-4)
    assert rows["aten::max_pool2d_with_indices"].measured_flops == 0
    assert any(
        n.startswith("aten::max_pool2d_with_indices,") for n in table_notes(list(rows.values()))
    )
    by_class = {r.key: r for r in compare_counted_measured({"work": work, "counters": sec})}
    assert by_class["convolution"].flops_ratio == pytest.approx(1.094, abs=5e-4)
