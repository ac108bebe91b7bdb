"""Which math a run computes in: roof names, dtypes, and what a math policy picks per op.

Why here, below capture and analysis: the runner writes a record's `math` section
(`perfsuite.record.maths.math_fields`), the spec table and the roofs are keyed by these names,
and the analyses judge each op against the roof of its math. Pure and torch-free:
`backends.torch_math` reads the live settings of a PyTorch run into that section.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.devices.specs import match_spec

# Roof names, in the order outputs list them; `SPEC_DTYPE` maps them to the spec table's keys.
MATHS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
SPEC_DTYPE = {
    "fp64": "float64",
    "fp32": "float32",
    "tf32": "tf32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp8": "fp8",
    "int8": "int8",
}
DTYPE_MATH = {v: k for k, v in SPEC_DTYPE.items()}
MATRIX_FAMILIES = ("convolution", "matmul", "attention")


@dataclass(frozen=True)
class OpMath:
    """The math one op ran in and how that was decided."""

    math: str  # a MATHS name: the roof the op is judged against
    unit: str  # "tensor core" | "cuda core" | "cpu"
    evidence: str  # "counters" | "kernel names" | "policy"
    detail: str = ""
    kernel_time_s: dict[str, float] = field(default_factory=dict)  # math -> kernel seconds


def unit_of(math: str) -> str:
    return "cuda core" if math in ("fp32", "fp64") else "tensor core"


def _dtype_math(dtype: str | None) -> str:
    d = (dtype or "float32").lower().removeprefix("torch.")
    aliases = {
        "float": "float32",
        "half": "float16",
        "double": "float64",
        "bf16": "bfloat16",
        "fp16": "float16",
        "fp32": "float32",
        "fp64": "float64",
    }
    return DTYPE_MATH.get(aliases.get(d, d), "fp32")


# GPU makers' words in device names, for records that only name their device (last resort:
# "Tesla T4", "A100-SXM4-40GB" and "AMD Instinct MI300X" carry no "cuda").
_GPU_NAME = re.compile(r"nvidia|tesla|geforce|quadro|\brtx\b|instinct|radeon")


def _on_cuda(device: str | None) -> bool:
    """A CUDA/ROCm device: a framework string ("cuda", "cuda:1", "cpu") decides; a device name
    only when nothing else is known (a spec-table part or a GPU maker's word in it)."""
    d = (device or "").strip().lower()
    if d.startswith("cuda"):
        return True
    if not d or d.startswith("cpu"):
        return False
    return bool(_GPU_NAME.search(d)) or match_spec(d) is not None


def record_device(record: Mapping[str, Any]) -> str | None:
    """Where a record ran, for deciding GPU or CPU: the framework device (environment.device,
    else hardware.accelerator: "cuda"/"cpu"), else the ceilings' device name."""
    env = (record.get("environment") or {}).get("device")
    acc = (record.get("hardware") or {}).get("accelerator")
    dev = (record.get("ceilings") or {}).get("device")
    # only strings say where: the schema refuses others, hand-built dicts may hold anything
    return next((v for v in (env, acc, dev) if isinstance(v, str) and v), None)


def converted_autocast(math: Mapping[str, Any], device: str | None) -> str | None:
    """The autocast dtype a CPU without instructions for it converted to float32 (the record's
    `math.autocast_native` false), else None: its matrix ops ran in fp32 arithmetic."""
    auto = math.get("autocast_dtype")
    if auto and not _on_cuda(device) and math.get("autocast_native") is False:
        return str(auto)
    return None


def from_policy(family: str | None, math: Mapping[str, Any], device: str | None) -> OpMath:
    """What PyTorch picks for an op of `family` under the math policy on `device`."""
    on_cuda = _on_cuda(device)
    src = math.get("source") or "math policy"
    if family not in MATRIX_FAMILIES:
        # elementwise, norms, pooling: arithmetic on CUDA cores/CPU vector units, in fp32 even
        # for half tensors (PyTorch upcasts); their intensity puts them under the bandwidth roof
        return OpMath(
            "fp32",
            "cuda core" if on_cuda else "cpu",
            "policy",
            f"{family or 'unmodeled'} op: CUDA-core/vector arithmetic ({src})",
        )
    auto = math.get("autocast_dtype")
    if converted := converted_autocast(math, device):
        # no bf16/fp16 instructions: operands are converted and multiplied in float32, so
        # float32's roof is the physical limit (a bf16 matmul benchmark there is software)
        return OpMath(
            "fp32",
            "cpu",
            "policy",
            f"autocast {converted} on a CPU without {converted} instructions ({src})",
        )
    if auto:
        m = _dtype_math(auto)
        return OpMath(m, "tensor core" if on_cuda else "cpu", "policy", f"autocast {auto} ({src})")
    m = _dtype_math(math.get("param_dtype"))
    if m != "fp32" or not on_cuda:
        return OpMath(m, unit_of(m) if on_cuda else "cpu", "policy", f"{m} tensors ({src})")
    if family == "convolution":
        tf32 = bool(math.get("cudnn_allow_tf32"))
        why = f"cudnn.allow_tf32={tf32}"
    else:
        prec = math.get("float32_matmul_precision")
        tf32 = bool(math.get("matmul_allow_tf32")) or prec in ("high", "medium")
        why = f"matmul.allow_tf32={bool(math.get('matmul_allow_tf32'))}, precision {prec}"
    if tf32:
        return OpMath("tf32", "tensor core", "policy", f"fp32 {family} with {why} ({src})")
    return OpMath("fp32", "cuda core", "policy", f"fp32 {family} with {why} ({src})")


def math_section(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's `math`: every writer records one (runs read it from the framework, imports
    and migrated older records carry PyTorch's defaults labeled assumed:
    `perfsuite.record.maths.assumed_math`)."""
    return dict(record.get("math") or {})
