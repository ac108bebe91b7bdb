"""What a GPU kernel's name says about it: its op class, whether it is backward-pass work,
the math a matrix kernel ran in, and whether it is communication or a copy.

One module for every rule read from kernel names, so the counters' per-class tables, the
roofline's per-op math and the timeline's categories agree on one name. NAME-BASED mappings
(cuDNN, cuBLAS, CUTLASS, NCCL and ATen naming habits), not attributions: a kernel's name does
not say which framework op launched it. Torch-free.
"""

from __future__ import annotations

import re

# (class, pattern), first match wins. Classes follow perfsuite.flops families where they exist.
_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (cls, re.compile(pat, re.IGNORECASE))
    for cls, pat in (
        ("optimizer", r"multi_tensor_apply|fused_(adam|sgd)|_fused_adam|sgd_|adam"),
        ("convolution", r"fprop|dgrad|wgrad|implicit_gemm|conv|winograd|fft2d|im2col"),
        ("softmax_loss", r"softmax|nll_loss|cross_entropy|log_softmax"),
        ("normalization", r"bn_fw|bn_bw|batch_norm|layer_norm|group_norm|rms_?norm|\bbn_"),
        ("pooling", r"pool|adaptivemax"),
        ("matmul", r"gemm|nvjet|cublas|splitkreduce|gemv|\bmma\b"),
        ("memory", r"copy|fill|nchwtonhwc|nhwctonchw|transpose|addpadding|cat_|workspace|memset"),
        ("reduction", r"reduce|\bsum_|argmax|norm_kernel"),
        ("elementwise", r"elementwise|pointwise|unrolled|vectorized"),
    )
)
_BACKWARD = re.compile(r"wgrad|dgrad|backward|bprop|_bw_|bn_bw|grad_input|gradinput", re.I)


def kernel_class(name: str) -> str:
    """Op class of a kernel from its name ("other" when no pattern matches)."""
    for cls, pat in _CLASSES:
        if pat.search(name):
            return cls
    return "other"


def is_backward_kernel(name: str) -> bool:
    """True for kernels whose name marks them as backward-pass work (wgrad, dgrad, *_backward)."""
    return bool(_BACKWARD.search(name))


# Kernel-name patterns, first match wins. Written from the H100 fixture's cuDNN names
# (sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_..., sm80_xmma_..._f32f32_f32f32_..._ffma_,
# wgrad_alg0_engine<float,...>) and cuBLAS/CUTLASS conventions (ampere_sgemm_*, *_s16816gemm_*,
# *_h1688gemm_*, sm90_xmma_gemm_bf16bf16_*, cutlass_*_tensorop_*). Order matters: "bf16"
# contains "f16" and "f32f32_tf32f32" contains "f32f32".
_KERNEL_MATH: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (m, re.compile(p, re.IGNORECASE))
    for m, p in (
        ("fp8", r"e4m3|e5m2|fp8|f8f8|qgmma"),
        ("int8", r"i8i8|int8|imma|_s8_|igmma"),
        ("tf32", r"tf32"),
        # cuBLAS's Hopper nvjet GEMMs name their types in letters: nvjet_sm90_tst_ ran bf16,
        # nvjet_sm90_hsh_ fp16 (the H100 GEMM fixture's per-precision counters say so)
        ("bf16", r"bf16|bfloat16|nvjet_(?:sm\d+_)?t[a-z]{2}_"),
        (
            "fp16",
            r"(?<!b)f16|fp16|half|hmma|hgmma|h\d{3,5}gemm|s884gemm|s16816gemm|h884|h1688"
            r"|nvjet_(?:sm\d+_)?h[a-z]{2}_",
        ),
        ("fp64", r"dgemm|f64f64|fp64|dmma|<double"),
        ("fp32", r"sgemm|ffma|f32f32_f32f32|wgrad_alg|dgrad_alg|fprop_alg|implicit_convolve"),
    )
)
# Names of matrix (compute) kernels; the others (elementwise, norms, layout transforms) move
# data and are judged against bandwidth whatever their dtype.
_MATRIX_KERNEL = re.compile(
    r"gemm|xmma|gmma|mma|conv|wgrad|dgrad|fprop|_engine<|cutlass|flash|fmha|nvjet", re.IGNORECASE
)
_LAYOUT = re.compile(r"nchwToNhwc|nhwcToNchw|transpose|copy", re.IGNORECASE)


def kernel_math(name: str) -> str | None:
    """The math a matrix kernel's name encodes, or None (not a matrix kernel / not encoded)."""
    if not _MATRIX_KERNEL.search(name) or _LAYOUT.search(name):
        return None
    for math, pat in _KERNEL_MATH:
        if pat.search(name):
            return math
    return None


# NCCL and its forks: ncclKernel_AllReduce_..., ncclDevKernel_Generic, ncclDevKernel_SendRecv,
# rccl (ROCm keeps the nccl prefix, older builds use rccl), msccl; the `void ` prefix appears in
# demangled names.
COMM_KERNEL = re.compile(r"^(?:void\s+)?(?:nccl|rccl|msccl)", re.IGNORECASE)
# Copies and fills named as such where the trace does not say so by category.
MEMCPY_NAME = re.compile(r"^(?:Memcpy|dma)", re.IGNORECASE)
MEMSET_NAME = re.compile(r"^Memset", re.IGNORECASE)
