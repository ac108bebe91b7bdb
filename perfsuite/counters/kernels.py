"""What a GPU kernel's name says about it: op class and whether it belongs to the backward pass.

A NAME-BASED mapping (cuDNN, cuBLAS, CUTLASS and ATen kernel naming habits), not an
attribution: a kernel's name does not say which framework op launched it. Torch-free.
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
