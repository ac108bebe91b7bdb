"""Which math each op ran in (fp32 on CUDA cores, TF32/bf16/fp16/fp8 on Tensor Cores...).

Why: the roof an op is judged against depends on the units that executed it. An fp32
convolution that cuDNN ran as TF32 on Tensor Cores can reach several times the CUDA-core fp32
peak; judging it against that peak reports more than 100% of the roof. The kernel names in a
trace say what ran (cuDNN/cuBLAS/CUTLASS encode the input and math types in them); hardware
counters say which Tensor-Core precision did the FLOPs; without either, the run's math policy
(TF32 switches, autocast) says what PyTorch would pick.

Pure except `kernel_math_by_op`, which reads a trace file; torch-free.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from typing import Any

from perfsuite.analyzers.timeline.device import US, DeviceArrays
from perfsuite.analyzers.timeline.hostmap import build_host_map
from perfsuite.devices.kernels import kernel_math
from perfsuite.devices.maths import MATHS, OpMath, from_policy, unit_of
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
