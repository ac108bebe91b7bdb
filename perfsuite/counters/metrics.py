"""Which NVIDIA hardware metrics we collect, and how FLOP and bytes are derived from them.

Kept free of torch so the analysis side (parsing traces / ncu CSV) runs anywhere.

Formulas (all per kernel, then summed):

* CUDA-core FLOP per precision p in {fp64 (d), fp32 (f), fp16 (h)}:
  ``2 * <p>fma + <p>add + <p>mul`` thread instructions executed with predicate on
  (a fused multiply-add is 2 FLOP). Caveat: a packed half2 instruction (HFMA2/HADD2/HMUL2)
  counts once per thread instruction although it does two operations, so fp16 CUDA-core FLOP
  can be undercounted by up to 2x.
* Tensor-Core FLOP (compute capability >= 8.0): sum of ``sm__ops_path_tensor_src_*`` counters.
  NVIDIA describes them as "# of math ops executed in Tensor path" and Nsight Compute's own
  roofline uses their peak as a FLOP/s ceiling, so we read 1 op as 1 FLOP. This has NOT been
  calibrated by us on a real GPU (no GPU was available); verify with a GEMM of known size
  (2*M*N*K FLOP) before trusting absolute values.
* ``sm__inst_executed_pipe_tensor.sum`` (warp-level tensor instructions, Volta and later) is kept
  as a raw count only: the FLOP per instruction depends on the MMA shape and architecture.
* DRAM bytes: ``dram__bytes_read.sum + dram__bytes_write.sum`` (or ``dram__bytes.sum``).
* L2 bytes: ``lts__t_bytes.sum`` (all L2 slice traffic, hits and misses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
DRAM_TOTAL = "dram__bytes.sum"
L2_BYTES = "lts__t_bytes.sum"
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"
KERNEL_TIME = "gpu__time_duration.sum"  # ncu only: the CUPTI range profiler has no real times

_SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
# precision -> (fma, add, mul) metric names
FP_INSTRUCTIONS: dict[str, tuple[str, str, str]] = {
    p: (_SASS.format(f"{c}fma"), _SASS.format(f"{c}add"), _SASS.format(f"{c}mul"))
    for p, c in (("fp64", "d"), ("fp32", "f"), ("fp16", "h"))
}

# Tensor-Core op counters (1 op = 1 FLOP, see module docstring), by first architecture.
TENSOR_OPS_AMPERE = [
    "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
    "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp64.sum",
]
TENSOR_OPS_HOPPER = [
    "sm__ops_path_tensor_src_fp8.sum",
]
TENSOR_OPS_PREFIX = "sm__ops_path_tensor_src_"

BASE_METRICS = [
    DRAM_READ,
    DRAM_WRITE,
    L2_BYTES,
    *(m for triple in FP_INSTRUCTIONS.values() for m in triple),
]


def default_metrics(compute_capability: tuple[int, int] | None = None) -> list[str]:
    """Metrics to request on a GPU of this compute capability (None: the portable set).

    Tensor op counters exist from Ampere (8.0); fp8 ones from Hopper (9.0). Asking CUPTI for a
    metric the chip lacks makes the whole profiling session fail, hence the gating.
    """
    metrics = list(BASE_METRICS)
    if compute_capability is None:
        return metrics
    major = compute_capability[0]
    if major >= 7:
        metrics.append(TENSOR_INST)
    if major >= 8:
        metrics.extend(TENSOR_OPS_AMPERE)
    if major >= 9:
        metrics.extend(TENSOR_OPS_HOPPER)
    return metrics


def _get(values: Mapping[str, float | None], name: str) -> float | None:
    v = values.get(name)
    return None if v is None else float(v)


def fp_flops(values: Mapping[str, float | None]) -> dict[str, float | None]:
    """CUDA-core FLOP per precision from SASS thread-instruction counts (None if not collected)."""
    out: dict[str, float | None] = {}
    for prec, (fma, add, mul) in FP_INSTRUCTIONS.items():
        parts = [_get(values, fma), _get(values, add), _get(values, mul)]
        if all(p is None for p in parts):
            out[prec] = None
            continue
        f, a, m = (p or 0.0 for p in parts)
        out[prec] = 2.0 * f + a + m
    return out


def derive(values: Mapping[str, float | None]) -> dict[str, Any]:
    """The record's per-kernel quantities from raw metric sums.

    Returns flops (CUDA-core, all precisions), flops_by_precision, flops_tensor, dram_bytes,
    l2_bytes, tensor_inst; None where the metrics needed were not collected.
    """
    by_prec = fp_flops(values)
    known = [v for v in by_prec.values() if v is not None]
    tensor_names = [k for k in values if k.startswith(TENSOR_OPS_PREFIX)]
    tensor_vals = [_get(values, k) for k in tensor_names]
    tensor_known = [v for v in tensor_vals if v is not None]
    if _get(values, DRAM_READ) is not None or _get(values, DRAM_WRITE) is not None:
        dram: float | None = (_get(values, DRAM_READ) or 0.0) + (_get(values, DRAM_WRITE) or 0.0)
    else:
        dram = _get(values, DRAM_TOTAL)
    return {
        "flops": sum(known) if known else None,
        "flops_by_precision": by_prec,
        "flops_tensor": sum(tensor_known) if tensor_known else None,
        "dram_bytes": dram,
        "l2_bytes": _get(values, L2_BYTES),
        "tensor_inst": _get(values, TENSOR_INST),
    }


def missing_notes(metrics: Sequence[str]) -> list[str]:
    """Human notes on what could not be derived from the collected metric names."""
    have = set(metrics)
    notes = []
    if not any(m in have for triple in FP_INSTRUCTIONS.values() for m in triple):
        notes.append("no SASS FP instruction counters: CUDA-core FLOP not measured")
    if not any(m.startswith(TENSOR_OPS_PREFIX) for m in have):
        if TENSOR_INST in have:
            notes.append(
                f"{TENSOR_INST} collected but not converted to FLOP (FLOP per tensor instruction "
                "depends on MMA shape and architecture): flops_tensor is null"
            )
        else:
            notes.append("no Tensor-Core op counters (sm__ops_path_tensor_*): flops_tensor is null")
    if not ({DRAM_READ, DRAM_WRITE, DRAM_TOTAL} & have):
        notes.append("no DRAM byte counters: dram_bytes is null")
    if L2_BYTES not in have:
        notes.append(f"no {L2_BYTES}: l2_bytes is null")
    return notes
