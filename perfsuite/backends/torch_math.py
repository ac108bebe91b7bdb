"""The math a PyTorch run computes in: TF32 switches, matmul precision, autocast and dtypes.

Why it matters: with `allow_tf32` on, an fp32 convolution runs on Tensor Cores at several times
the CUDA-core fp32 peak, so a roofline that assumes fp32 math reports more than 100% of the
roof. `math_policy` reads the live settings (call it where the run computes) into the
section `perfsuite.record.maths.math_fields` shapes.
"""

from __future__ import annotations

from typing import Any

from perfsuite.hostinfo import native_on_cpu
from perfsuite.record.maths import math_fields

SOURCE_LIVE = "read from torch at run time"


def math_policy(
    *, autocast_dtype: str | None, param_dtype: str, activation_dtype: str, on_cpu: bool
) -> dict[str, Any]:
    """The record's `math` section from torch's current settings (imports torch)."""
    import torch

    return math_fields(
        autocast_native=native_on_cpu(autocast_dtype) if on_cpu else None,
        cudnn_tf32=bool(torch.backends.cudnn.allow_tf32),
        matmul_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
        matmul_precision=str(torch.get_float32_matmul_precision()),
        autocast_dtype=autocast_dtype,
        param_dtype=param_dtype,
        activation_dtype=activation_dtype,
        framework=("torch", str(torch.__version__)),
        source=SOURCE_LIVE,
        provenance="measured",
    )
