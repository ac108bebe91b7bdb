"""The math a PyTorch run computes in: TF32 switches, matmul precision, autocast and dtypes.

Why it matters: with `allow_tf32` on, an fp32 convolution runs on Tensor Cores at several times
the CUDA-core fp32 peak, so a roofline that assumes fp32 math reports more than 100% of the
roof. `math_policy` reads the live settings (call it where the run computes); old records
without a `math` section are read with `default_math_for`, PyTorch's defaults for a version,
labeled as assumed.
"""

from __future__ import annotations

import re
from typing import Any

from perfsuite.hostinfo import native_on_cpu

SOURCE_LIVE = "read from torch at run time"


def math_fields(
    *,
    cudnn_tf32: bool,
    matmul_tf32: bool,
    autocast_dtype: str | None,
    param_dtype: str,
    activation_dtype: str,
    framework: tuple[str, str],
    source: str,
    provenance: str,
    matmul_precision: str | None = None,
    autocast_native: bool | None = None,
) -> dict[str, Any]:
    """The record's `math` section from its parts (torch-free; every framework builds it
    here). `framework` is (key, version), e.g. ("torch", "2.13.0"). `autocast_native`: on a
    CPU, whether it has instructions for the autocast dtype (without them the operands are
    converted and the arithmetic is float32's); None on GPUs, without autocast, or unknown."""
    return {
        "cudnn_allow_tf32": cudnn_tf32,
        "matmul_allow_tf32": matmul_tf32,
        "float32_matmul_precision": matmul_precision or ("high" if matmul_tf32 else "highest"),
        "autocast_dtype": autocast_dtype,
        "param_dtype": param_dtype,
        "activation_dtype": activation_dtype,
        "autocast_native": autocast_native,
        framework[0]: framework[1],
        "source": source,
        "provenance": provenance,
    }


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


def _major_minor(version: str) -> tuple[int, int]:
    m = re.match(r"\s*(\d+)\.(\d+)", version or "")
    if not m:
        raise ValueError(f"torch version {version!r}: expected MAJOR.MINOR[...]")
    return int(m.group(1)), int(m.group(2))


def default_math_for(torch_version: str) -> dict[str, Any]:
    """PyTorch's default math for a version, as an assumed `math` section (torch-free).

    cuDNN convolutions may use TF32 since 1.7 (still the default); matmuls did in 1.7-1.11 and
    have not since 1.12 (float32 matmul precision "highest"). Before 1.7 there was no TF32.
    Dtypes are assumed fp32 without autocast: a record that ran otherwise says so in `math`.
    """
    ver = _major_minor(torch_version)
    return math_fields(
        cudnn_tf32=ver >= (1, 7),
        matmul_tf32=(1, 7) <= ver < (1, 12),
        autocast_dtype=None,
        param_dtype="float32",
        activation_dtype="float32",
        framework=("torch", torch_version),
        source=f"assumed PyTorch {'.'.join(map(str, ver))} defaults (record has no `math` section)",
        provenance="assumed",
    )
