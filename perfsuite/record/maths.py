"""The record's `math` section: its fields, and PyTorch's defaults where a record's writer could
not read the math (imports, and older records migrated at load), labeled assumed.

Why in the record contract: the runners build the section with `math_fields`, and the loader's
migration and the importers fill the assumed one with `assumed_math`, so every record carries a
`math` section and no reader guesses one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_HALF = ("bfloat16", "float16", "bf16", "fp16", "half")


def math_fields(
    *,
    cudnn_tf32: bool,
    matmul_tf32: bool,
    autocast_dtype: str | None,
    param_dtype: str,
    activation_dtype: str,
    framework: tuple[str, str | None],
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


def _unknown_math() -> dict[str, Any]:
    m = default_math_for("2.0")
    m["torch"] = None
    m["source"] = "assumed PyTorch >= 1.12 defaults (record names no torch version, no `math`)"
    return m


def assumed_math(record: Mapping[str, Any]) -> dict[str, Any]:
    """PyTorch's defaults for the torch version the record names (else those since 1.12), with
    matrix ops in the record's dtype where that is a half precision; labeled assumed."""
    tv = ((record.get("environment") or {}).get("frameworks") or {}).get("torch")
    try:
        m = default_math_for(str(tv)) if tv else _unknown_math()
    except ValueError:
        m = _unknown_math()
    dtype = (record.get("ceilings") or {}).get("dtype") or (record.get("work") or {}).get("dtype")
    if dtype and str(dtype).lower().removeprefix("torch.") in _HALF:
        m["autocast_dtype"] = str(dtype)
        m["source"] += f"; matrix ops in {dtype}, the record's dtype"
    return m
