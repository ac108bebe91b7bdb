"""Counted vs measured work, side by side, per op class (pure: a record dict in, rows out).

Counted FLOP and modeled bytes come from `record["work"]["per_op"]` (shapes and formulas, per
training step); measured FLOP and DRAM bytes from `record["counters"]` (hardware counters over
`window_steps` steps, divided here to per step). Kernels are mapped to op classes BY NAME
(`perfsuite.counters.kernels.kernel_class`): a name-based mapping, not an attribution.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfsuite.counters.kernels import kernel_class

MAPPING = "kernel name -> op class (name-based mapping, not an attribution)"


@dataclass
class Row:
    op_class: str
    counted_flops: float | None  # per step, counted from shapes (work.per_op)
    measured_flops: float | None  # per step, Tensor-Core + CUDA-core counters
    measured_tensor_flops: float | None
    flops_ratio: float | None  # measured / counted
    modeled_bytes: float | None  # per step, compulsory traffic model (work.per_op)
    measured_dram_bytes: float | None
    bytes_ratio: float | None  # measured DRAM / modeled
    kernels: int  # distinct kernel names mapped to this class
    mapping: str = MAPPING


def _add(acc: dict[str, float | None], key: str, value: Any) -> None:
    if value is None:
        return
    acc[key] = (acc.get(key) or 0.0) + float(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or not b:
        return None
    return a / b


def compare_counted_measured(record: Mapping[str, Any]) -> list[Row]:
    """One row per op class present on either side, largest counted FLOP first.

    Empty when the record has no counters. A measured value is None when no kernel of that
    class had the quantity measured; FLOP sums Tensor-Core and CUDA-core work.
    """
    counters = record.get("counters") or {}
    kernels = counters.get("kernels") or []
    if not kernels:
        return []
    steps = counters.get("window_steps") or 1
    counted: dict[str, dict[str, float | None]] = {}
    for op in (record.get("work") or {}).get("per_op") or []:
        acc = counted.setdefault(str(op.get("family") or "other"), {})
        _add(acc, "flops", op.get("flops"))
        _add(acc, "bytes", op.get("bytes"))
    measured: dict[str, dict[str, float | None]] = {}
    names: dict[str, set[str]] = {}
    for k in kernels:
        cls = kernel_class(str(k.get("name", "")))
        acc = measured.setdefault(cls, {})
        names.setdefault(cls, set()).add(str(k.get("name", "")))
        for src in ("flops", "flops_tensor"):
            if k.get(src) is not None:
                _add(acc, "flops", k[src] / steps)
        if k.get("flops_tensor") is not None:
            _add(acc, "tensor", k["flops_tensor"] / steps)
        if k.get("dram_bytes") is not None:
            _add(acc, "dram", k["dram_bytes"] / steps)
    rows = []
    for cls in sorted(set(counted) | set(measured)):
        c, m = counted.get(cls, {}), measured.get(cls, {})
        rows.append(
            Row(
                op_class=cls,
                counted_flops=c.get("flops"),
                measured_flops=m.get("flops"),
                measured_tensor_flops=m.get("tensor"),
                flops_ratio=_ratio(m.get("flops"), c.get("flops")),
                modeled_bytes=c.get("bytes"),
                measured_dram_bytes=m.get("dram"),
                bytes_ratio=_ratio(m.get("dram"), c.get("bytes")),
                kernels=len(names.get(cls, ())),
            )
        )
    rows.sort(key=lambda r: (-(r.counted_flops or 0.0), -(r.measured_flops or 0.0), r.op_class))
    return rows


def calibration_text(counters: Mapping[str, Any] | None) -> str | None:
    """One line: which measured Tensor-Core precisions rest on counters calibrated on the chip
    that ran, and on what basis (None without a `calibrated` entry). Sections written before
    the basis was kept marked any cc 9.x chip calibrated; that is said, not repeated."""
    cal = (counters or {}).get("calibrated")
    if not cal:
        return None
    yes = [p for p, ok in (cal.get("precisions") or {}).items() if ok]
    basis = cal.get("basis")
    if basis is None:
        name = ((counters or {}).get("device") or {}).get("name") or "an unnamed chip"
        yes_text = ", ".join(yes) if yes else "none"
        return (
            f"calibration: {yes_text} marked calibrated by an older rule (formulas checked on "
            f"H100 GEMMs, any cc {cal.get('device_cc')} chip); this capture is from {name}"
        )
    return f"calibration: {', '.join(yes) if yes else 'none'} calibrated; {basis}"
