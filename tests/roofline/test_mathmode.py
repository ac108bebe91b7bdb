"""Per-op math: kernel names first (names from the H100 fixture), else the math policy."""

from __future__ import annotations

import pytest

from perfsuite.analyzers.roofline.mathmode import from_counters, from_kernels, op_maths
from perfsuite.devices.kernels import kernel_math
from perfsuite.devices.maths import from_policy
from perfsuite.record.maths import default_math_for


@pytest.mark.parametrize(
    "name, math",
    [
        (
            "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32"
            "_warpgroupsize1x1x1_g1_execute_segment_k_on_kernel__5x_cudnn",
            "tf32",
        ),
        (
            "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4"
            "_warpsize2x2x1_g1_tensor16x8x8_alignc4_execute_kernel__5x_cudnn",
            "tf32",
        ),
        (
            "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize256x64x8_stage3"
            "_warpsize2x2x1_g1_ffma_aligna4_alignc4_execute_kernel__5x_cudnn",
            "fp32",
        ),
        ("void wgrad_alg0_engine<float, 128, 5, 5, 3, 3, 3, false, 512>(int, int)", "fp32"),
        ("ampere_sgemm_128x64_tn", "fp32"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "bf16"),
        ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "bf16"),
        ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_tn", "fp16"),
        ("turing_h1688gemm_128x128_ldg8_tn", "fp16"),
        ("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n", "fp8"),
        # the H100 GEMM fixture's cuBLAS kernels, their precision measured by its counters
        ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "fp16"),
        ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "bf16"),
        (
            "void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true>",
            None,
        ),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
            None,
        ),
        ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>", None),
    ],
)
def test_kernel_math(name, math):
    assert kernel_math(name) == math


def test_op_math_is_the_math_of_most_matrix_time():
    om = from_kernels(
        {
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwc": 0.9,
            "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_ffma": 0.1,
            "void cudnn::engines_precompiled::nchwToNhwcKernel<float>": 5.0,
        }
    )
    assert om.math == "tf32" and om.evidence == "kernel names" and om.unit == "tensor core"
    assert om.kernel_time_s == {"tf32": 0.9, "fp32": 0.1}
    assert from_kernels({"void at::native::vectorized_elementwise_kernel<4>": 1.0}) is None


def test_default_math_per_torch_version():
    old, mid, new = (
        default_math_for("1.6.0"),
        default_math_for("1.10.2"),
        default_math_for("2.11.0+cu130"),
    )
    assert (old["cudnn_allow_tf32"], old["matmul_allow_tf32"]) == (False, False)
    assert (mid["cudnn_allow_tf32"], mid["matmul_allow_tf32"]) == (True, True)
    assert (new["cudnn_allow_tf32"], new["matmul_allow_tf32"]) == (True, False)
    assert new["float32_matmul_precision"] == "highest" and new["provenance"] == "assumed"
    assert new["source"].startswith("assumed PyTorch 2.11 defaults")
    with pytest.raises(ValueError, match="torch version"):
        default_math_for("nightly")


def test_policy():
    pol = default_math_for("2.11.0")
    gpu = "NVIDIA H100 80GB HBM3"
    assert from_policy("convolution", pol, gpu).math == "tf32"  # cudnn TF32 on by default
    assert from_policy("matmul", pol, gpu).math == "fp32"  # highest precision: CUDA cores
    assert from_policy("matmul", {**pol, "float32_matmul_precision": "high"}, gpu).math == "tf32"
    assert from_policy("matmul", {**pol, "autocast_dtype": "bfloat16"}, gpu).math == "bf16"
    assert from_policy("elementwise", {**pol, "autocast_dtype": "bfloat16"}, gpu).math == "fp32"
    assert from_policy("convolution", pol, "cpu").math == "fp32"  # no TF32 off CUDA
    cpu_bf16 = {**pol, "autocast_dtype": "bfloat16"}
    assert from_policy("convolution", {**cpu_bf16, "autocast_native": True}, "cpu").math == "bf16"
    assert from_policy("convolution", cpu_bf16, "cpu").math == "bf16"  # unknown: the dtype's
    emulated = from_policy("convolution", {**cpu_bf16, "autocast_native": False}, "AMD EPYC")
    assert emulated.math == "fp32" and "without bfloat16 instructions" in emulated.detail
    # a GPU never takes the CPU rule, whatever the field says
    assert from_policy("matmul", {**cpu_bf16, "autocast_native": False}, gpu).math == "bf16"
    both = op_maths(
        {"aten::mm": "matmul", "aten::relu": "elementwise"},
        pol,
        gpu,
        {"aten::mm": {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn": 1.0}},
    )
    assert both["aten::mm"].math == "tf32" and both["aten::mm"].evidence == "kernel names"
    assert both["aten::relu"].evidence == "policy"


def test_math_policy_reads_torch_live_settings():
    torch = pytest.importorskip("torch")
    from perfsuite.backends.torch_math import math_policy
    from perfsuite.hostinfo import native_on_cpu

    old = torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision()
    try:
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("high")
        m = math_policy(
            autocast_dtype="bfloat16",
            param_dtype="float32",
            activation_dtype="float32",
            on_cpu=True,
        )
        assert m["autocast_native"] is native_on_cpu("bfloat16")  # this CPU's flags
        gpu = math_policy(
            autocast_dtype="bfloat16",
            param_dtype="float32",
            activation_dtype="float32",
            on_cpu=False,
        )
        assert gpu["autocast_native"] is None
        assert m["cudnn_allow_tf32"] is False
        assert m["float32_matmul_precision"] == "high"
        assert m["autocast_dtype"] == "bfloat16" and m["provenance"] == "measured"
        assert m["source"] == "read from torch at run time" and m["torch"] == torch.__version__
    finally:
        torch.backends.cudnn.allow_tf32 = old[0]
        torch.set_float32_matmul_precision(old[1])


def test_measured_tensor_precision_decides_the_math():
    om = from_counters({"fp16": 1e9, "bf16": 3e9, "tf32": None, "fp8": 0.0})
    assert om is not None and (om.math, om.unit, om.evidence) == ("bf16", "tensor core", "counters")
    assert om.detail.startswith("measured") and om.detail.endswith(": bf16 75%, fp16 25%")
    assert from_counters({"fp16": 0.0, "tf32": None}) is None
    # mostly CUDA-core work with a little TF32 beside it: not judged on the TF32 roof
    assert from_counters({"tf32": 1e9}, cuda_core_flops=1e10) is None
    assert from_counters({"tf32": 1e10}, cuda_core_flops=1e9).math == "tf32"


@pytest.mark.parametrize(
    "name", ["Tesla V100-SXM2-16GB", "Tesla T4", "A100-SXM4-40GB", "AMD Instinct MI300X"]
)
def test_gpu_names_without_nvidia_or_cuda_are_gpus(name):
    """Name only (an old record): a spec-table part or a GPU maker's word still means a GPU."""
    got = from_policy("convolution", default_math_for("2.11.0"), name)
    assert (got.math, got.unit) == ("tf32", "tensor core")  # cudnn TF32 is on by default


def test_record_device_prefers_the_framework_device():
    from perfsuite.devices.maths import record_device

    # the ceilings' name says nothing about CUDA; environment.device and the accelerator do
    rec = {"ceilings": {"device": "A100-SXM4-40GB"}, "environment": {"device": "cuda:0"}}
    assert record_device(rec) == "cuda:0"
    rec = {"ceilings": {"device": "Some Box"}, "hardware": {"accelerator": "cuda"}}
    assert record_device(rec) == "cuda"
    assert record_device({"ceilings": {"device": "AMD EPYC"}}) == "AMD EPYC"
    assert from_policy("convolution", default_math_for("2.11.0"), "cuda").math == "tf32"
    assert from_policy("convolution", default_math_for("2.11.0"), "AMD EPYC 7B13").unit == "cpu"
