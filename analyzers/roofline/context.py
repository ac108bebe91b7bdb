"""What the roofline judges a record with (`Context`): the roofs per math, each op's math and
where it came from, and the record's evidence about those roofs (the machine check, CPU load
at measurement), gathered once per analysis by `context`.

Reads the record's trace sidecar for kernel names (`perfsuite.analyzers.roofline.mathmode`);
otherwise pure, torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.roofline.above_roof import (
    Suspects,
    WindowSpeed,
    is_cpu_record,
    roof_notes,
    roof_too_low,
    run_threads,
    speed_notes,
    suspects,
    window_speeds,
)
from perfsuite.analyzers.roofline.inputs import guess_family, work_by_op
from perfsuite.analyzers.roofline.mathmode import kernel_math_by_op, op_maths
from perfsuite.devices.maths import (
    OpMath,
    converted_autocast,
    math_section,
    record_device,
)
from perfsuite.devices.roofs import record_roofs
from perfsuite.record.checks import resolve_sidecar


@dataclass(frozen=True)
class Context:
    """What judging needs: roofs per math, each op's math, and where the math came from."""

    roofs: dict[str, Any]  # perfsuite.devices.roofs layout
    maths: dict[str, OpMath]
    math_source: str
    notes: list[str] = field(default_factory=list)
    cpu: bool = False  # a CPU run: its measured roofs carry the machine's load at measurement
    run_threads: int | None = None  # threads the run computed with
    speeds: list[WindowSpeed] = field(default_factory=list)  # the machine check's benchmarks

    def suspects(self, math: str | None, flops_per_call: float | None = None) -> Suspects:
        """The record's evidence against the `math` roof and the memory roof."""
        return suspects(
            self.roofs,
            math,
            cpu=self.cpu,
            threads_run=self.run_threads,
            flops_per_call=flops_per_call,
            check=(roof_too_low(self.speeds, math or ""), roof_too_low(self.speeds, "memory")),
        )

    def peak(self, math: str | None) -> float | None:
        q = ((self.roofs.get(math or "") or {}).get("peak_flops") or {}).get("value")
        return float(q) if q else None

    @property
    def bandwidth(self) -> float | None:
        q = ((self.roofs.get("memory") or {}).get("bandwidth") or {}).get("value")
        return float(q) if q else None

    def quantity(self, math: str) -> dict[str, Any]:
        """The roof's quantity dict (peak_flops, or bandwidth for "memory"); {} if absent."""
        key = "bandwidth" if math == "memory" else "peak_flops"
        return dict((self.roofs.get(math) or {}).get(key) or {})


def _trace_kernels(
    record: Mapping[str, Any], ops: list[str], notes: list[str]
) -> dict[str, dict[str, float]]:
    trace = (record.get("timeline") or {}).get("trace")
    base = record.get("_dir")
    if not trace or not base or not ops:
        return {}

    try:
        path = resolve_sidecar(base, trace)
    except ValueError as exc:
        notes.append(f"trace {trace!r} not read ({exc}): per-op math from the math policy only")
        return {}
    if not path.exists():
        notes.append(f"trace {path} not found: per-op math from the math policy only")
        return {}
    try:
        return kernel_math_by_op(str(path), ops)
    except (ValueError, OSError) as exc:
        notes.append(f"trace {path} unreadable ({exc}): per-op math from the math policy only")
        return {}


def device_name(record: Mapping[str, Any]) -> str | None:
    """The record's device by name (its ceilings', else its hardware's), never a framework
    device string such as "cpu" or "cuda:0", which names no machine."""
    ceil = (record.get("ceilings") or {}).get("device")
    return ceil or (record.get("hardware") or {}).get("name")


def _same_device(a: str, b: str) -> bool:
    """One name within the other, case and spacing aside: "AMD EPYC" is "AMD EPYC (2 CPUs)"."""
    a, b = (" ".join(x.lower().split()) for x in (a, b))
    return a in b or b in a


def foreign_roof_notes(peaks: Mapping[str, Any] | None, device: str | None) -> list[str]:
    """A note when a peaks file's roofs were measured on another device than the run's: every
    fraction would then compare the run with another machine."""
    theirs = {
        str(q["device"])
        for roof in (peaks or {}).values()
        for q in roof.values()
        if isinstance(q, dict) and q.get("device")
    }
    other = sorted(d for d in theirs if device and not _same_device(d, device))
    if not device or not other:
        return []
    return [
        f"WRONG MACHINE: the peaks file's roofs were measured on {', '.join(other)}, this run "
        f"ran on {device}: every fraction of a roof compares it with another machine"
    ]


def context(
    record: Mapping[str, Any],
    peaks: Mapping[str, Any] | None = None,
    kernels: Mapping[str, Mapping[str, float]] | None = None,
) -> Context:
    """Roofs (peaks file, then the record's roofs, single peak, spec) and each op's math."""
    ceil = record.get("ceilings") or {}
    roofs = record_roofs(ceil, peaks)
    math = math_section(record)
    model = work_by_op(record.get("work") or {})
    notes: list[str] = []
    if kernels is None:
        kernels = _trace_kernels(record, list(model), notes)
    device = record_device(record)
    fams = {op: m["family"] or guess_family(op) for op, m in model.items()}
    maths = op_maths(fams, math, device, kernels)
    cpu, threads = is_cpu_record(record, roofs), run_threads(record)
    notes += foreign_roof_notes(peaks, device_name(record))
    notes += roof_notes(roofs, cpu=cpu, threads_run=threads)
    if auto := converted_autocast(math, device):
        notes.append(
            f"autocast {auto} on a CPU without {auto} instructions: its operands are converted "
            "and multiplied in float32, so its matrix ops are judged against the fp32 roof"
        )
    speeds = window_speeds(record, roofs)
    notes += speed_notes(speeds, record)
    return Context(roofs, maths, str(math.get("source", "")), notes, cpu, threads, speeds)
