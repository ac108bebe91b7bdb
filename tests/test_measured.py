"""analyzers.measured: counted vs measured FLOP and bytes per op class, on the real H100 window."""

from __future__ import annotations

import pytest

from analyzers.measured import MAPPING, compare_counted_measured
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
    by = {r.op_class: r for r in rows}
    conv = rows[0]
    assert conv.op_class == "convolution" and conv.mapping == MAPPING
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
    assert [r.op_class for r in rows] == ["matmul", "elementwise"]
    mm, ew = rows
    assert (mm.measured_flops, mm.flops_ratio, mm.bytes_ratio) == (120.0, 1.2, 1.25)
    assert (ew.measured_flops, ew.measured_tensor_flops, ew.measured_dram_bytes) == (
        10.0,
        None,
        None,
    )
    assert compare_counted_measured({"work": rec["work"]}) == []


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
    from perfsuite.counters.kernels import is_backward_kernel, kernel_class

    assert (kernel_class(name), is_backward_kernel(name)) == (cls, backward)
