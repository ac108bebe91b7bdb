"""Counted vs measured work, side by side, per op class or per op (pure: a record in, rows out).

Counted FLOP and modeled bytes come from `record["work"]["per_op"]` (shapes and formulas, per
training step); measured FLOP and DRAM bytes from `record["counters"]` (hardware counters over
`window_steps` steps, divided here to per step). By class, kernels are mapped to op classes BY
NAME (`perfsuite.devices.kernels.kernel_class`): a name-based mapping, not an attribution. By
op, a kernel belongs to the counted op whose NVTX range (`emit_nvtx` in the replay child) it ran
in: an attribution, where the capture has such ranges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.devices.kernels import kernel_class

MAPPING = "kernel name -> op class (name-based mapping, not an attribution)"
OP_MAPPING = (
    "NVTX op ranges of the replayed steps (emit_nvtx) -> the outermost op the FLOP counter "
    "also counted"
)
UNATTRIBUTED = "(kernels in no counted op's range)"


@dataclass
class Row:
    key: str  # the op class (by="class") or the op (by="op"); `mapping` says which
    counted_flops: float | None  # per step, counted from shapes (work.per_op)
    measured_flops: float | None  # per step, Tensor-Core + CUDA-core counters
    measured_tensor_flops: float | None
    flops_ratio: float | None  # measured / counted
    modeled_bytes: float | None  # per step, compulsory traffic model (work.per_op)
    measured_dram_bytes: float | None
    bytes_ratio: float | None  # measured DRAM / modeled
    kernels: int  # distinct kernel names in this row
    mapping: str = MAPPING
    # lower bounds: a kernel of the row lacked the quantity, or (FLOP) the capture lacks a
    # Tensor-Core precision's counters; shown with "≥", never as the measured total
    flops_partial: bool = False
    bytes_partial: bool = False
    # why a ratio is None although both sides exist, e.g. "bytes not modeled"
    note: str | None = None


def _add(acc: dict[str, float | None], key: str, value: Any) -> None:
    if value is None:
        return
    acc[key] = (acc.get(key) or 0.0) + float(value)


# A counted/modeled side this small against the measured one was not really counted (4 B
# modeled against 5.46 GB of DRAM traffic): its ratio (1.4e9) would mean nothing. Not
# modeled: under a millionth of the measured side, or under 1 k (FLOP or bytes per step)
# and under a thousandth of it.
NOT_MODELED_FRACTION = 1e-6
NOT_MODELED_FLOOR = 1e3
NOT_MODELED_FLOOR_FRACTION = 1e-3


def _ratio(measured: float | None, counted: float | None) -> float | None:
    """measured / counted, None where a side is missing or the counted side is not modeled."""
    if measured is None or not counted or _not_modeled(measured, counted):
        return None
    return measured / counted


def _not_modeled(measured: float | None, counted: float | None) -> bool:
    if measured is None or counted is None or not measured:
        return False
    c, m = abs(counted), abs(measured)
    return c < NOT_MODELED_FRACTION * m or (
        c < NOT_MODELED_FLOOR and c < NOT_MODELED_FLOOR_FRACTION * m
    )


def op_of(kernel: Mapping[str, Any], counted: set[str]) -> str | None:
    """The outermost NVTX range of the kernel that names an op the FLOP counter counted; None
    when the capture has no such range.

    Outermost, because the counter (a dispatch mode) sees only the ops it is handed, not the
    ones they call inside: the bias add_ that aten::_convolution runs belongs to the counted
    aten::convolution around it, although add_ is counted too where it is called on its own
    (the innermost range would credit the bias adds to add_, which counted only its own calls).
    """
    for name in kernel.get("ranges") or []:
        if name in counted:
            return str(name)
    return None


def unmeasured_precisions(counters: Mapping[str, Any] | None) -> list[str]:
    """Tensor-Core precisions the chip has but the capture did not measure: the section's
    `tensor_unmeasured` (older sections get it at load: perfsuite/record/migrate.py)."""
    return list((counters or {}).get("tensor_unmeasured") or [])


def counted_ops(record: Mapping[str, Any]) -> set[str]:
    """The op names the FLOP counter counted in the record's step."""
    return {str(o.get("op")) for o in (record.get("work") or {}).get("per_op") or []}


def has_op_ranges(record: Mapping[str, Any]) -> bool:
    """Whether any measured kernel lies in the NVTX range of a counted op (captures of replays
    run with per-op ranges; older captures and the fixtures' step ranges have none)."""
    counted = counted_ops(record)
    kernels = (record.get("counters") or {}).get("kernels") or []
    return any(op_of(k, counted) for k in kernels)


def compare_counted_measured(record: Mapping[str, Any], by: str = "class") -> list[Row]:
    """One row per op class (`by="class"`, kernels mapped by name) or per op (`by="op"`,
    kernels attributed by the NVTX op ranges they ran in; the rest in one UNATTRIBUTED row),
    present on either side, largest counted FLOP first.

    Empty when the record has no counters, when they do not say how many steps their window
    spans (`window_steps`), or, by op, when no kernel lies in a counted op's range. A
    measured value is None when no kernel of that row had the quantity measured; FLOP sums
    Tensor-Core and CUDA-core work.
    """
    if by not in ("class", "op"):
        raise ValueError(f"by must be 'class' or 'op', got {by!r}")
    counters = record.get("counters") or {}
    kernels = counters.get("kernels") or []
    steps = counters.get("window_steps")
    if not kernels or not steps:  # without the window's steps there is no per-step figure
        return []
    counted: dict[str, dict[str, float | None]] = {}
    for op in (record.get("work") or {}).get("per_op") or []:
        key = str(op.get("op")) if by == "op" else str(op.get("family") or "other")
        acc = counted.setdefault(key, {})
        _add(acc, "flops", op.get("flops"))
        _add(acc, "bytes", op.get("bytes"))
    if by == "op":
        ops = set(counted)
        keys = [op_of(k, ops) for k in kernels]
        if not any(keys):  # no op ranges in this capture: no per-op table
            return []
    else:
        keys = [kernel_class(str(k.get("name", ""))) for k in kernels]
    measured: dict[str, dict[str, float | None]] = {}
    names: dict[str, set[str]] = {}
    partial: dict[str, set[str]] = {}  # row -> {"flops", "bytes"} that are lower bounds
    unmeasured = bool(unmeasured_precisions(counters))
    for k, found in zip(kernels, keys, strict=True):
        name = str(k.get("name", ""))
        key = found or UNATTRIBUTED
        acc = measured.setdefault(key, {})
        names.setdefault(key, set()).add(name)
        gaps = partial.setdefault(key, set())
        if unmeasured or k.get("flops") is None or k.get("flops_tensor") is None:
            gaps.add("flops")
        if k.get("dram_bytes") is None:
            gaps.add("bytes")
        for src in ("flops", "flops_tensor"):
            if k.get(src) is not None:
                _add(acc, "flops", k[src] / steps)
        if k.get("flops_tensor") is not None:
            _add(acc, "tensor", k["flops_tensor"] / steps)
        if k.get("dram_bytes") is not None:
            _add(acc, "dram", k["dram_bytes"] / steps)
    rows = []
    for key in sorted(set(counted) | set(measured)):
        c, m = counted.get(key, {}), measured.get(key, {})
        why = [
            f"{what} not modeled (ratio not shown)"
            for what, mk, ck in (("FLOPs", "flops", "flops"), ("bytes", "dram", "bytes"))
            if c.get(ck) and _not_modeled(m.get(mk), c.get(ck))
        ]
        rows.append(
            Row(
                key=key,
                counted_flops=c.get("flops"),
                measured_flops=m.get("flops"),
                measured_tensor_flops=m.get("tensor"),
                flops_ratio=_ratio(m.get("flops"), c.get("flops")),
                modeled_bytes=c.get("bytes"),
                measured_dram_bytes=m.get("dram"),
                bytes_ratio=_ratio(m.get("dram"), c.get("bytes")),
                kernels=len(names.get(key, ())),
                mapping=OP_MAPPING if by == "op" else MAPPING,
                flops_partial="flops" in partial.get(key, ()) and m.get("flops") is not None,
                bytes_partial="bytes" in partial.get(key, ()) and m.get("dram") is not None,
                note="; ".join(why) or None,
            )
        )
    rows.sort(key=lambda r: (-(r.counted_flops or 0.0), -(r.measured_flops or 0.0), r.key))
    return rows


def calibration_text(counters: Mapping[str, Any] | None) -> str | None:
    """One line: which measured Tensor-Core precisions rest on counters calibrated on the chip
    that ran, and on what basis (None without a `calibrated` entry; older sections get their
    basis at load: perfsuite/record/migrate.py)."""
    cal = (counters or {}).get("calibrated")
    if not cal:
        return None
    yes = [p for p, ok in (cal.get("precisions") or {}).items() if ok]
    return f"calibration: {', '.join(yes) if yes else 'none'} calibrated; {cal.get('basis')}"


def table_notes(rows: list[Row]) -> list[str]:
    """What a reader of one counted-vs-measured table needs to read its ratios: each row's
    own note, and why counted work can measure as none (max pooling: comparisons counted as
    FLOPs, none measured by the counters)."""
    notes = [f"{r.key}: {r.note}" for r in rows if r.note]
    none = [r.key for r in rows if r.counted_flops and r.measured_flops == 0]
    if none:
        notes.append(
            f"{', '.join(none)}: FLOP counted, none measured: the FLOP model counts comparisons "
            "and selects (a max, routing a gradient) as operations, while the counters count "
            "floating-point add, multiply and FMA instructions and Tensor-Core work only"
        )
    return notes


@dataclass
class CountedVsMeasured:
    """What the roofline and the report show of a record's counters, computed once."""

    by_class: list[Row]
    by_op: list[Row]  # empty unless the capture attributes kernels to ops
    calibration: str | None
    note: str | None = None  # why there is no table although the record has counters
    class_notes: list[str] = field(default_factory=list)  # `table_notes` of each table
    op_notes: list[str] = field(default_factory=list)


NO_STEPS = (
    "counted vs measured: not compared, the counters section does not say how many training "
    "steps its window spans (window_steps; attach with `perfsuite counters FILE --into RUN "
    "--steps N`)"
)


def counted_vs_measured(record: Mapping[str, Any]) -> CountedVsMeasured:
    counters = record.get("counters") or {}
    no_steps = bool(counters.get("kernels")) and not counters.get("window_steps")
    by_class, by_op = compare_counted_measured(record), compare_counted_measured(record, by="op")
    return CountedVsMeasured(
        by_class,
        by_op,
        calibration_text(record.get("counters")),
        NO_STEPS if no_steps else None,
        table_notes(by_class),
        table_notes(by_op),
    )
