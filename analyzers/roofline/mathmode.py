"""Which math each op ran in (fp32 on CUDA cores, TF32/bf16/fp16/fp8 on Tensor Cores...).

Why: the roof an op is judged against depends on the units that executed it. An fp32
convolution that cuDNN ran as TF32 on Tensor Cores can reach several times the CUDA-core fp32
peak; judging it against that peak reports more than 100% of the roof. The kernel names in a
trace say what ran (cuDNN/cuBLAS/CUTLASS encode the input and math types in them); without a
trace, the run's math policy (TF32 switches, autocast) says what PyTorch would pick.

Pure except `kernel_math_by_op` and `context` (which reads the trace sidecar), torch-free.
`context` gathers what the roofline judges with: the roofs per math and each op's math.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.roofline.doubts import (
    Suspects,
    is_cpu_record,
    roof_notes,
    run_threads,
    suspects,
)
from perfsuite.analyzers.roofline.machine_speed import (
    WindowSpeed,
    roof_too_low,
    speed_notes,
    window_speeds,
)
from perfsuite.analyzers.timeline.device import US, DeviceArrays
from perfsuite.analyzers.timeline.hostmap import build_host_map
from perfsuite.devices.kernels import kernel_math
from perfsuite.devices.maths import (
    MATHS,
    OpMath,
    converted_autocast,
    from_policy,
    math_section,
    record_device,
    unit_of,
)
from perfsuite.devices.roofs import record_roofs
from perfsuite.record.checks import resolve_sidecar
from perfsuite.traces.reader import read_trace


def _dominant(amounts: dict[str, float]) -> tuple[str, str]:
    """The math with the largest amount and the split ("tf32 80%, fp32 20%")."""
    best = max(sorted(amounts), key=lambda m: amounts[m])
    total = sum(amounts.values())
    order = sorted(amounts, key=lambda m: amounts[m], reverse=True)
    return best, ", ".join(f"{m} {amounts[m] / total:.0%}" for m in order)


def from_kernels(kernels: Mapping[str, float]) -> OpMath | None:
    """An op's math from its kernels {name: seconds}: the math of most matrix-kernel time.

    None when no kernel is a matrix kernel with a readable math (e.g. only elementwise kernels):
    those ops are judged by policy, which puts non-matrix work on the CUDA-core roof.
    """
    by_math: dict[str, float] = {}
    for name, secs in kernels.items():
        m = kernel_math(name)
        if m is not None:
            by_math[m] = by_math.get(m, 0.0) + float(secs)
    if not by_math:
        return None
    best, split = _dominant(by_math)
    return OpMath(best, unit_of(best), "kernel names", f"matrix-kernel time: {split}", by_math)


def from_counters(
    tensor_by_precision: Mapping[str, float | None], cuda_core_flops: float = 0.0
) -> OpMath | None:
    """The math of most measured Tensor-Core FLOP ({precision: FLOP} from hardware counters):
    a measurement, so it comes before kernel names. None when the counters saw none, or less
    than the CUDA-core FLOP beside it (then the Tensor-Core roof would not describe the work)."""
    found = {p: float(v) for p, v in tensor_by_precision.items() if v and p in MATHS}
    if not found or sum(found.values()) < cuda_core_flops:
        return None
    best, split = _dominant(found)
    return OpMath(best, "tensor core", "counters", f"measured Tensor-Core FLOP: {split}")


def op_maths(
    families: Mapping[str, str | None],
    math: Mapping[str, Any],
    device: str | None,
    kernels_by_op: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, OpMath]:
    """Per op name: kernel-name evidence where the trace has matrix kernels, else the policy."""
    out: dict[str, OpMath] = {}
    for op, fam in families.items():
        got = from_kernels((kernels_by_op or {}).get(op) or {})
        out[op] = got if got is not None else from_policy(fam, math, device)
    return out


def kernel_math_by_op(trace_path: str, modeled_ops: Iterable[str]) -> dict[str, dict[str, float]]:
    """{modeled op: {kernel name: seconds}} from a trace: each kernel is credited to the
    innermost enclosing op whose name is modeled (aten::cudnn_convolution's kernels count for
    aten::convolution). Reads the file; raises TraceError on an unreadable trace. One command
    asks more than once (roofline and utilization each judge the ops), and reading a GPU run's
    trace takes seconds, so an unchanged file is read once per process."""
    st = os.stat(trace_path)
    found = _kernel_math(trace_path, st.st_mtime_ns, st.st_size, frozenset(modeled_ops))
    return {op: dict(kernels) for op, kernels in found.items()}


@functools.lru_cache(maxsize=4)
def _kernel_math(
    trace_path: str, mtime_ns: int, size: int, wanted: frozenset[str]
) -> dict[str, dict[str, float]]:
    """`kernel_math_by_op` for one version of the file (mtime and size are the cache key)."""
    import numpy as np

    data = read_trace(trace_path)
    host = build_host_map(data)
    arrays = DeviceArrays(data, host)
    names, rg = data.names.values, data.ranges
    owner: dict[int, int] = {}

    def modeled(r: int) -> int:
        start, path = r, []
        while r >= 0 and r not in owner:
            if rg.kind[r] == 0 and names[rg.name[r]] in wanted:
                break
            path.append(r)
            r = int(host.parent[r])
        found = owner.get(r, r) if r >= 0 else -1
        for p in [*path, start]:
            owner[p] = found
        return found

    out: dict[str, dict[str, float]] = {}
    ops, knames, durs = arrays.op, arrays.name, arrays.dur
    for i in np.flatnonzero(ops >= 0).tolist():
        m = modeled(int(ops[i]))
        if m < 0:
            continue
        row = out.setdefault(names[rg.name[m]], {})
        k = names[int(knames[i])]
        row[k] = row.get(k, 0.0) + float(durs[i]) * US
    return out


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


def work_by_op(work: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """work.per_op summed over phases (forward, backward, optimizer) by op name."""
    out: dict[str, dict[str, Any]] = {}
    for row in work.get("per_op") or []:
        acc = out.setdefault(
            row["op"], {"flops": 0.0, "bytes": 0.0, "calls": 0.0, "family": row.get("family")}
        )
        acc["flops"] += float(row.get("flops") or 0)
        acc["bytes"] += float(row.get("bytes") or 0)
        acc["calls"] += float(row.get("calls") or 0)
    return out


def guess_family(op: str) -> str | None:
    """Matrix family from an op name, for per-op rows written without `family`."""
    name = op.split("::")[-1]
    if "conv" in name:
        return "convolution"
    if name in ("mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "addbmm", "_addmm"):
        return "matmul"
    if "attention" in name:
        return "attention"
    return None


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
