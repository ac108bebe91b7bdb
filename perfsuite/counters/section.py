"""Build the record's `counters` section from per-launch metric values (any collection tool).

The format is described in docs/counters.md ("The counters section"). JSON-friendly: numbers,
strings, lists, dicts, null; a quantity that was not measured is null, never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite.counters import calibration_cache
from perfsuite.counters.rates import tensor_activity_note
from perfsuite.devices import counter_metrics as m
from perfsuite.devices.counter_metrics import (
    TENSOR_FLOAT,
    Formula,
    chip_tensor_precisions,
    cross_checks,
    derive,
    missing_notes,
    sources,
    tensor_plan,
)
from perfsuite.devices.kernels import is_backward_kernel, kernel_class

CALIBRATION_REFERENCE = (
    "one 4096^3 GEMM each in bf16, fp16 and TF32 on an H100 SXM (Nsight Compute 2025.3.1): the "
    "counters gave exactly 2*4096^3 = 137,438,953,472 in each precision"
)


REFERENCE_CHIP = "NVIDIA H100 80GB HBM3"  # as ncu names it (device__attribute_display_name)
REFERENCE_CC = "9.0"


class CountersError(ValueError):
    """A counter file that cannot be used; the message is one line naming file and field."""


@dataclass
class Launch:
    """One kernel launch with the raw metric values measured for it."""

    name: str
    values: dict[str, float | None]
    op: str | None = None  # default: the innermost aten range of `ranges`
    time_s: float | None = None
    ranges: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # both readers (CSV and .ncu-rep) name the op the same way from the same ranges
        if self.op is None:
            self.op = op_from_ranges(self.ranges)


def op_from_ranges(ranges: tuple[str, ...] | list[str]) -> str | None:
    """An aten op name from `emit_nvtx`-style ranges (innermost one with '::'), else None. The
    capture's own view; analyzers attribute a kernel to the outermost op the FLOP counter
    counted (`perfsuite.analyzers.roofline.measured.op_of`), which this file cannot know."""
    for name in reversed(ranges):
        if "::" in name:
            return name
    return None


@dataclass
class _Group:
    name: str
    op: str | None
    calls: int = 0
    time_s: float | None = 0.0
    raw: dict[str, float | None] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    ranges: dict[str, None] = field(default_factory=dict)

    def add(self, launch: Launch) -> None:
        self.calls += 1
        self.ranges.update(dict.fromkeys(launch.ranges))
        if self.time_s is not None:
            self.time_s = None if launch.time_s is None else self.time_s + launch.time_s
        first = self.calls == 1
        for k in set(self.raw) | set(launch.values):
            v = launch.values.get(k)
            if v is None or k in self.missing or (k not in self.raw and not first):
                # once any launch lacks a metric (None or absent), the group's sum is unknown:
                # it stays None rather than becoming a partial sum of the other launches
                self.missing.add(k)
                self.raw[k] = None
            else:
                self.raw[k] = float(v) + (self.raw.get(k) or 0.0)


_SUMMED = ("time_s", "flops", "flops_tensor", "tensor_int8_ops", "dram_bytes", "l2_bytes")
_PER_STEP = ("time_s", "flops", "flops_tensor", "dram_bytes", "l2_bytes")


def _sum_or_none(values: Iterable[float | None]) -> float | None:
    vals = list(values)
    if not vals or any(v is None for v in vals):
        return None
    return float(sum(v for v in vals if v is not None))


def _used_names(plan: Mapping[str, Formula | None]) -> set[str]:
    return m.count_names(f for f in plan.values() if f is not None)


def _by_precision(kernels: list[dict[str, Any]], key: str) -> dict[str, float | None]:
    precs = list(kernels[0][key]) if kernels else []
    return {p: _sum_or_none(k[key][p] for k in kernels) for p in precs}


def calibration_info(
    plan: Mapping[str, Formula | None],
    device: Mapping[str, Any],
    local: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Which measured Tensor-Core precisions rest on counters calibrated on this chip.

    Calibrated means: GEMMs of known size gave exactly 2*M*N*K on a chip of this name, either
    the reference H100 the formulas were checked on, or a `perfsuite counters --calibrate` run
    kept for this chip (`local`, from `calibration_cache`). The same compute capability is not
    the same chip (an H200 is cc 9.0 like the H100 but was never checked): false there, and the
    `basis` says so and how to calibrate.
    """
    name, cc = device.get("name"), device.get("cc")
    tensor = {p: f for p, f in plan.items() if f is not None and p in TENSOR_FLOAT}
    if local is not None:
        checked = local.get("precisions") or {}
        precisions = {p: bool((checked.get(p) or {}).get("ok")) for p in tensor}
        verdict = "passed" if local.get("ok") else "FAILED"
        basis = (
            f"this chip: `perfsuite counters --calibrate` ({local.get('tool')}) at "
            f"{local.get('at')}, {verdict}"
        )
    elif name == REFERENCE_CHIP:
        precisions = {p: f.verified for p, f in tensor.items()}
        basis = f"the reference chip ({REFERENCE_CHIP})"
    else:
        precisions = {p: False for p in tensor}
        same_cc = bool(cc) and str(cc).split(".")[0] == REFERENCE_CC.split(".")[0]
        basis = (
            f"not calibrated on {name or 'this chip (the capture does not name it)'}"
            + (f": same compute capability family as the {REFERENCE_CHIP} (cc {REFERENCE_CC}) "
               "the formulas were checked on, not the same chip" if same_cc else "")
            + "; run `perfsuite counters --calibrate` on it"
        )  # fmt: skip
    return {
        "precisions": precisions,
        "basis": basis,
        "reference": CALIBRATION_REFERENCE,
        "device_name": name,
        "device_cc": cc,
        "local": dict(local) if local is not None else None,
    }


def trains(kernels: Sequence[Mapping[str, Any]]) -> bool:
    """True when the window holds optimizer kernels: a training step, which has a backward
    pass (a forward pass or a GEMM capture has none, and needs no warning for it)."""
    return any(k.get("kernel_class") == "optimizer" for k in kernels)


def _no_backward_note(kernels: Sequence[Mapping[str, Any]]) -> str:
    if trains(kernels):
        return (
            "no backward kernels in a window with optimizer kernels (no wgrad/dgrad/*_backward "
            "names): most likely a push/pop NVTX filter that missed the autograd thread's kernels"
        )
    return "no backward kernels in the window (no wgrad/dgrad/*_backward names): forward work only"


def build_section(
    launches: Sequence[Launch],
    *,
    tool: str,
    file: str,
    metrics: Sequence[str],
    notes: Sequence[str] = (),
    window_steps: int | None = None,
    device: Mapping[str, str] | None = None,
    nvtx: str | None = None,
    nvtx_range: str | None = None,
) -> dict[str, Any]:
    """Aggregate launches by (kernel name, op, NVTX range stack) into the `counters` section.

    Kernels are sorted by total FLOP (CUDA-core + Tensor-Core), then DRAM bytes, descending.
    A total is None when any kernel lacks that quantity (a partial sum would mislead).
    """
    device = dict(device or {})
    cc = device.get("cc")
    cc_major = int(cc.split(".")[0]) if cc and cc.split(".")[0].isdigit() else None
    plan = tensor_plan(metrics, cc_major)
    groups = _group_launches(launches)
    kernels = _kernel_rows(groups, plan)
    totals = _totals(kernels)
    backward_calls = sum(k["calls"] for k in kernels if k["backward"])
    all_notes = list(notes) + missing_notes(metrics, plan)
    all_notes += cross_checks((g.raw for g in groups.values()), metrics, cc_major)
    busy = tensor_activity_note(
        ((launch.name, launch.values) for launch in launches),
        any(plan.get(p) is not None for p in TENSOR_FLOAT),
    )
    if busy:
        all_notes.append(busy)
    if kernels and not backward_calls:
        all_notes.append(_no_backward_note(kernels))
    per_step = _per_step(totals, window_steps) if window_steps else None
    return {
        "tool": tool,
        "file": file,
        "provenance": "measured",
        "window_steps": window_steps,
        "nvtx_range": nvtx_range,
        "nvtx": nvtx,
        "device": device,
        "has_backward": backward_calls > 0,
        "backward_calls": backward_calls,
        "kernels": kernels,
        "totals": totals,
        "per_step": per_step,
        # precisions whose Tensor-Core counters this capture lacks: every flops_tensor above
        # is then a lower bound (an fp16 GEMM reads 0 where fp16 was not measured)
        "tensor_unmeasured": [p for p in chip_tensor_precisions(cc) if plan.get(p) is None],
        "calibrated": calibration_info(
            plan, device, calibration_cache.entry_for(device.get("name"))
        ),
        "source": sources(plan, metrics),
        "metrics": sorted(metrics),
        "notes": all_notes,
    }


_GroupKey = tuple[str, str | None, tuple[str, ...]]


def _group_launches(launches: Sequence[Launch]) -> dict[_GroupKey, _Group]:
    """Launches grouped by (kernel name, op, NVTX range stack), in first-launch order.

    The range stack is part of the key: one kernel launched under two ops (a copy in clone and
    in a pooling backward) keeps each launch's own stack, so a per-op attribution never reads
    a union of stacks no launch ran in."""
    groups: dict[_GroupKey, _Group] = {}
    for launch in launches:
        key = (launch.name, launch.op, tuple(launch.ranges))
        groups.setdefault(key, _Group(launch.name, launch.op)).add(launch)
    return groups


def _kernel_rows(
    groups: dict[_GroupKey, _Group], plan: Mapping[str, Formula | None]
) -> list[dict[str, Any]]:
    """One row per group with its derived quantities and the raw counters they used, sorted by
    total FLOP (CUDA-core + Tensor-Core), then DRAM bytes, descending."""
    used = _used_names(plan)
    kernels = [
        {
            "name": g.name,
            "op": g.op,
            "kernel_class": kernel_class(g.name),
            "backward": is_backward_kernel(g.name),
            "ranges": list(g.ranges),
            "calls": g.calls,
            "time_s": g.time_s,
            **derive(g.raw, plan),
            "raw": {k: v for k, v in sorted(g.raw.items()) if k in used},
        }
        for g in groups.values()
    ]

    def weight(k: dict[str, Any]) -> tuple[float, float]:
        return ((k["flops"] or 0.0) + (k["flops_tensor"] or 0.0), k["dram_bytes"] or 0.0)

    kernels.sort(key=weight, reverse=True)
    return kernels


def _totals(kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over the kernels; a total is None when any kernel lacks that quantity (a partial
    sum would mislead)."""
    totals: dict[str, Any] = {name: _sum_or_none(k[name] for k in kernels) for name in _SUMMED}
    totals["calls"] = sum(k["calls"] for k in kernels)
    totals["kernels"] = len(kernels)
    totals["flops_by_precision"] = _by_precision(kernels, "flops_by_precision")
    totals["flops_tensor_by_precision"] = _by_precision(kernels, "flops_tensor_by_precision")
    return totals


def _per_step(totals: dict[str, Any], window_steps: int) -> dict[str, Any]:
    """The totals of _PER_STEP and the Tensor-Core FLOP per precision divided by the steps the
    window covered (None stays None)."""
    per_step = {k: None if totals[k] is None else totals[k] / window_steps for k in _PER_STEP}
    per_step["flops_tensor_by_precision"] = {
        p: None if v is None else v / window_steps
        for p, v in totals["flops_tensor_by_precision"].items()
    }
    return per_step
