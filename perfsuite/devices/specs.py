"""The spec table: vendor-published peaks, and matching of device names to its entries.

Why a table: measured peaks say what this software stack reaches, spec peaks say what the
silicon promises; the roofline shows both so the gap between them is visible.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

# Spellings of dtypes that mean the same thing, mapped to the table's keys.
_DTYPE_ALIASES = {
    "fp64": "float64",
    "double": "float64",
    "f64": "float64",
    "fp32": "float32",
    "float": "float32",
    "f32": "float32",
    "fp16": "float16",
    "half": "float16",
    "f16": "float16",
    "bf16": "bfloat16",
    "amp_bf16": "bfloat16",
    "amp_fp16": "float16",
    "amp": "float16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
}
DTYPES = ("float64", "float32", "tf32", "float16", "bfloat16", "fp8", "int8")


def normalize_dtype(dtype: str | None) -> str:
    """'torch.bfloat16', 'bf16', 'BF16' -> 'bfloat16'; unknown names pass through lowercased."""
    if not dtype:
        return "float32"
    d = str(dtype).strip().lower().removeprefix("torch.")
    return _DTYPE_ALIASES.get(d, d)


@cache
def spec_table() -> list[dict[str, Any]]:
    """All entries of specs.json, in matching order (most specific first)."""
    text = resources.files("perfsuite.devices").joinpath("specs.json").read_text()
    return json.loads(text)["entries"]


def _norm_name(name: str) -> str:
    n = name.lower().replace("_", " ").replace("-", " ")
    return re.sub(r"\s+", " ", n).strip()


# Names of a part of a device (an NVIDIA MIG slice, an AMD compute partition): the table's
# values are for the whole device, so such names get no spec.
_PARTITION = (r"\bmig\b", r"\b[cdqt]px\b")
# One name for several parts (some ROCm versions report "AMD Instinct MI250X/MI250" for both):
# told apart only by the device's compute units, else no spec.
_AMBIGUOUS = {r"\bmi250x ?/ ?mi250\b": ("mi250x", "mi250")}


def match_spec(device_name: str | None, compute_units: int | None = None) -> dict[str, Any] | None:
    """The spec entry for a device name such as "NVIDIA A100-SXM4-80GB", or None.

    The first entry with a matching pattern wins; patterns use word boundaries so "A10"
    never matches "A100" and "L4" never matches "L40S". Parts absent from the table (e.g.
    H100 NVL, V100S), slices of a device (MIG, compute partitions) and names shared by
    several parts (unless `compute_units`, torch's multi_processor_count, tells them apart)
    return None rather than a neighbour's numbers. A device whose `compute_units` differ from
    its entry's is a slice whose name does not say so (an MI300X in CPX mode reports its own
    name and 38 of 304 CUs) or another part: None too.
    """
    if not device_name:
        return None
    n = _norm_name(device_name)
    if any(re.search(p, n) for p in _PARTITION):
        return None
    for pattern, ids in _AMBIGUOUS.items():
        if re.search(pattern, n):
            hits = [e for e in spec_table() if e["id"] in ids]
            return next(
                (e for e in hits if compute_units and e.get("compute_units") == compute_units), None
            )
    for entry in spec_table():
        if any(re.search(p, n) for p in entry["match"]):
            whole = entry.get("compute_units")
            return None if compute_units and whole and compute_units != whole else entry
    return None


def spec_flops(entry: dict[str, Any] | None, dtype: str) -> float | None:
    """The entry's dense peak FLOP/s for `dtype`, or None when not published."""
    if not entry:
        return None
    v = (entry.get("flops") or {}).get(normalize_dtype(dtype))
    return None if v is None else float(v)


def spec_bandwidth(entry: dict[str, Any] | None) -> float | None:
    if not entry or entry.get("memory_bandwidth") is None:
        return None
    return float(entry["memory_bandwidth"])
