"""Which NVIDIA hardware metrics we collect, per chip, and how FLOP and bytes follow from them.

Torch-free, so the analysis side (ncu CSV, Kineto traces) runs anywhere. Checked against the
metric list of a real H100 (`ncu --query-metrics`, ../shared/data/gpu) and calibrated there:
each 4096^3 GEMM gives exactly 2*4096^3 in its precision's Tensor-Core counter.

* CUDA-core FLOP per precision (fp64 d, fp32 f, fp16 h): ``2*fma + add + mul`` SASS thread
  instructions with predicate on (multiply-add = 2 FLOP). A packed HFMA2 counts once per thread
  instruction but does two FMAs, so fp16 CUDA-core FLOP can be undercounted by up to 2x.
* Tensor-Core FLOP per precision: ``sm__ops_path_tensor_*`` "math ops"; 1 op = 1 FLOP (verified
  on H100). Names differ per chip: Ampere has combined names per source/destination type;
  Hopper has combined names for bf16, tf32, fp64, fp8 and int8, but its fp16 work shows only
  under per-instruction names (HGMMA, HMMA). Each precision has ordered alternative formulas;
  the first whose every name is in the data is used, so nothing is counted twice.
* int8 Tensor-Core work is integer ops, kept apart from FLOP.
* DRAM bytes: read + write (or dram__bytes.sum); L2 bytes: lts__t_bytes.sum (or 32-byte
  sectors: lts__t_sectors.sum, else per op: read, write, atom, red).
* Reports made with ncu's section sets (`--set full`) keep many counts only as per-cycle rates
  (`X.sum.per_cycle_elapsed`); `counts_from_rates` turns them back into `X.sum`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
DRAM_TOTAL = "dram__bytes.sum"
L2_BYTES = "lts__t_bytes.sum"
L2_SECTORS = "lts__t_sectors.sum"
L2_SECTOR_OPS = tuple(f"lts__t_sectors_op_{o}.sum" for o in ("read", "write", "atom", "red"))
L2_SECTOR_BYTES = 32
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"
KERNEL_TIME = "gpu__time_duration.sum"  # ncu only: the CUPTI range profiler has no real times

_SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
# precision -> (fma, add, mul); the sm__ spelling of the same counters is accepted too
FP_INSTRUCTIONS: dict[str, tuple[str, str, str]] = {
    p: (_SASS.format(f"{c}fma"), _SASS.format(f"{c}add"), _SASS.format(f"{c}mul"))
    for p, c in (("fp64", "d"), ("fp32", "f"), ("fp16", "h"))
}
FLOAT_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
TENSOR_FLOAT = ("fp16", "bf16", "tf32", "fp8", "fp64")

_T = "sm__ops_path_tensor_"


@dataclass(frozen=True)
class Formula:
    """One way to measure a precision: the sum of `names`, usable on chips in [min_cc, max_cc)."""

    label: str
    names: tuple[str, ...]
    min_major: int = 8
    max_major: int = 99
    verified: bool = False  # checked against a GEMM of known size on real hardware


def _f(label: str, names: Iterable[str], lo: int = 8, hi: int = 99, ok: bool = False) -> Formula:
    return Formula(label, tuple(f"{_T}{n}.sum" for n in names), lo, hi, ok)


# Ordered: combined names first, per-instruction decompositions after. A per-instruction
# formula lists every instruction kind of that chip, or it would undercount.
TENSOR_FORMULAS: dict[str, tuple[Formula, ...]] = {
    "fp16": (
        # Hopper: the calibrated per-instruction names first; the combined src_fp16 (listed on
        # H100, never captured) is the fallback, used on later chips without HGMMA, and is
        # cross-checked against the first when both are collected
        _f(
            "per instruction (HGMMA + HMMA)",
            ["op_hgmma_src_fp16", "op_hmma_src_fp16_dst_fp16", "op_hmma_src_fp16_dst_fp32"],
            9,
            ok=True,
        ),
        _f("combined (Hopper and later)", ["src_fp16"], 9),
        _f("combined (Ampere)", ["src_fp16_dst_fp16", "src_fp16_dst_fp32"], 8, 9),
        _f(
            "per instruction (HMMA)",
            ["op_hmma_src_fp16_dst_fp16", "op_hmma_src_fp16_dst_fp32"],
            8,
            9,
        ),
    ),
    "bf16": (
        _f("combined", ["src_bf16_dst_fp32"], ok=True),
        _f(
            "per instruction (HGMMA + HMMA)",
            ["op_hgmma_src_bf16_dst_fp32", "op_hmma_src_bf16_dst_fp32"],
            9,
        ),
        _f("per instruction (HMMA)", ["op_hmma_src_bf16_dst_fp32"], 8, 9),
    ),
    "tf32": (
        _f("combined", ["src_tf32_dst_fp32"], ok=True),
        _f(
            "per instruction (HGMMA + HMMA)",
            ["op_hgmma_src_tf32_dst_fp32", "op_hmma_src_tf32_dst_fp32"],
            9,
        ),
        _f("per instruction (HMMA)", ["op_hmma_src_tf32_dst_fp32"], 8, 9),
    ),
    "fp8": (_f("combined", ["src_fp8"], 8),),
    "fp64": (_f("combined", ["src_fp64"], 8),),
    "int8": (
        _f("combined", ["src_int8"], 8),
        _f("per instruction (IGMMA + IMMA)", ["op_igmma_src_int8", "op_imma_src_int8"], 9),
        _f("per instruction (IMMA)", ["op_imma_src_int8"], 8, 9),
    ),
}

BASE_METRICS = [
    DRAM_READ,
    DRAM_WRITE,
    L2_BYTES,
    *(m for triple in FP_INSTRUCTIONS.values() for m in triple),
]
# What we request per chip family. Hopper: the verified names (fp16 per instruction, since
# its combined fp16 counters were not checked); Ampere: the combined names (not verified here).
TENSOR_REQUEST_AMPERE = [
    f"{_T}{n}.sum"
    for n in (
        "src_fp16_dst_fp16",
        "src_fp16_dst_fp32",
        "src_bf16_dst_fp32",
        "src_tf32_dst_fp32",
        "src_fp64",
        "src_int8",
    )
]
TENSOR_REQUEST_HOPPER = [
    f"{_T}{n}.sum"
    for n in (
        "src_bf16_dst_fp32",
        "src_tf32_dst_fp32",
        "src_fp64",
        "src_fp8",
        "src_int8",
        "op_hgmma_src_fp16",
        "op_hmma_src_fp16_dst_fp16",
        "op_hmma_src_fp16_dst_fp32",
        "src_fp16",  # not captured yet: cross-checked against the per-instruction sum
    )
]


def default_metrics(compute_capability: tuple[int, int] | None = None) -> list[str]:
    """Metrics to request on a GPU of this compute capability (None: the portable set).

    CUPTI fails the whole session on a metric the chip lacks, hence the gating; ncu drops such
    names silently, so `ncu_metrics()` may ask for the union.
    """
    metrics = list(BASE_METRICS)
    if compute_capability is None:
        return metrics
    major, minor = compute_capability
    if major >= 7:
        metrics.append(TENSOR_INST)
    if major >= 9:
        metrics.extend(TENSOR_REQUEST_HOPPER)
    elif major == 8:
        metrics.extend(TENSOR_REQUEST_AMPERE)
        if minor >= 9:  # Ada has fp8 Tensor Cores
            metrics.append(f"{_T}src_fp8.sum")
    return metrics


def chip_tensor_precisions(cc: str | None) -> tuple[str, ...]:
    """The Tensor-Core float precisions a chip of compute capability `cc` ("8.6") has, so
    that a precision it lacks is not reported as unmeasured: fp64 (DMMA) on 8.0 and 9.x,
    fp8 from 8.9; Volta and Turing fp16 only. Unknown or newer chips: all of TENSOR_FLOAT."""
    try:
        major, minor = (int(x) for x in str(cc).split(".")[:2])
    except ValueError:
        return TENSOR_FLOAT
    if major == 7:
        return ("fp16",)
    if major == 8:
        extra = ("fp64",) if minor == 0 else ("fp8",) if minor >= 9 else ()
        return ("fp16", "bf16", "tf32", *extra)
    return TENSOR_FLOAT


def ncu_metrics() -> list[str]:
    """The union over chips (ncu ignores names a chip lacks), plus kernel time."""
    out = dict.fromkeys(
        [*BASE_METRICS, TENSOR_INST, *TENSOR_REQUEST_HOPPER, *TENSOR_REQUEST_AMPERE, KERNEL_TIME]
    )
    return list(out)


def count_names(formulas: Iterable[Formula]) -> set[str]:
    """The counts `derive` reads with these Tensor-Core formulas: DRAM, L2, tensor instructions
    and the SASS FP counters (in the smsp__ and sm__ spellings), plus the formulas' names."""
    names = {DRAM_TOTAL, TENSOR_INST, L2_SECTORS, *L2_SECTOR_OPS, *BASE_METRICS}
    names |= {"sm__" + n[len("smsp__") :] for n in list(names) if n.startswith("smsp__")}
    return names | {n for f in formulas for n in f.names}


def _get(values: Mapping[str, float | None], name: str) -> float | None:
    v = values.get(name)
    if v is None and name.startswith("smsp__"):
        v = values.get("sm__" + name[len("smsp__") :])
    return None if v is None else float(v)


def complete_formulas(
    metric_names: Iterable[str], cc_major: int | None = None
) -> dict[str, list[Formula]]:
    """For each Tensor-Core precision, the formulas (in order) whose every name was collected."""
    have = set(metric_names)
    return {
        prec: [
            f
            for f in formulas
            if (cc_major is None or f.min_major <= cc_major < f.max_major)
            and all(n in have for n in f.names)
        ]
        for prec, formulas in TENSOR_FORMULAS.items()
    }


def tensor_plan(
    metric_names: Iterable[str], cc_major: int | None = None
) -> dict[str, Formula | None]:
    """For each Tensor-Core precision, the first formula whose every name was collected.

    None: that precision was not measured (its value is unknown, not zero).
    """
    return {
        p: (fs[0] if fs else None) for p, fs in complete_formulas(metric_names, cc_major).items()
    }


def cross_checks(
    groups_raw: Iterable[Mapping[str, float | None]],
    metric_names: Iterable[str],
    cc_major: int | None = None,
) -> list[str]:
    """Notes comparing alternative formulas of one precision when several were collected."""
    raws = list(groups_raw)
    notes = []
    for prec, fs in complete_formulas(metric_names, cc_major).items():
        if len(fs) < 2:
            continue
        totals = [_sum_or_none([_sum(r, f.names) for r in raws]) for f in fs]
        parts = ", ".join(
            f"{f.label} = {'unknown' if t is None else f'{t:,.0f}'}"
            for f, t in zip(fs, totals, strict=True)
        )
        same = len({t for t in totals}) == 1
        verdict = "agree" if same else "DISAGREE: the first one is used"
        notes.append(f"Tensor-Core {prec} cross-check: {parts} ({verdict})")
    return notes


def _sum_or_none(vals: list[float | None]) -> float | None:
    if any(v is None for v in vals):
        return None
    return float(sum(v for v in vals if v is not None))


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


def _sum(values: Mapping[str, float | None], names: Sequence[str]) -> float | None:
    vals = [_get(values, n) for n in names]
    return None if any(v is None for v in vals) else float(sum(v for v in vals if v is not None))


def derive(
    values: Mapping[str, float | None], plan: Mapping[str, Formula | None] | None = None
) -> dict[str, Any]:
    """The record's per-kernel quantities from raw metric sums.

    Returns flops (CUDA-core, all precisions), flops_by_precision, flops_tensor (measured
    precisions only), flops_tensor_by_precision, tensor_int8_ops, dram_bytes, l2_bytes,
    tensor_inst; None where the metrics needed were not collected.
    """
    if plan is None:
        plan = tensor_plan(values)
    by_prec = fp_flops(values)
    known = [v for v in by_prec.values() if v is not None]
    tensor: dict[str, float | None] = {
        p: (None if plan.get(p) is None else _sum(values, plan[p].names))  # type: ignore[union-attr]
        for p in TENSOR_FLOAT
    }
    int8 = plan.get("int8")
    tensor_known = [v for v in tensor.values() if v is not None]
    if _get(values, DRAM_READ) is not None or _get(values, DRAM_WRITE) is not None:
        dram: float | None = (_get(values, DRAM_READ) or 0.0) + (_get(values, DRAM_WRITE) or 0.0)
    else:
        dram = _get(values, DRAM_TOTAL)
    l2 = _get(values, L2_BYTES)
    if l2 is None:
        sectors = _get(values, L2_SECTORS)
        if sectors is None:
            sectors = _sum(values, L2_SECTOR_OPS)
        l2 = None if sectors is None else sectors * L2_SECTOR_BYTES
    return {
        "flops": sum(known) if known else None,
        "flops_by_precision": by_prec,
        "flops_tensor": sum(tensor_known) if tensor_known else None,
        "flops_tensor_by_precision": tensor,
        "tensor_int8_ops": None if int8 is None else _sum(values, int8.names),
        "dram_bytes": dram,
        "l2_bytes": l2,
        "tensor_inst": _get(values, TENSOR_INST),
    }


def _has_fp(have: set[str]) -> bool:
    names = [n for triple in FP_INSTRUCTIONS.values() for n in triple]
    return any(n in have or "sm__" + n[len("smsp__") :] in have for n in names)


def sources(plan: Mapping[str, Formula | None], metric_names: Iterable[str]) -> dict[str, str]:
    """One line per quantity saying which counters it came from (the section's `source`)."""
    have = set(metric_names)
    out: dict[str, str] = {}
    for prec, f in plan.items():
        if f is None:
            out[f"tensor_{prec}"] = "not measured: no counter for it was collected"
        else:
            tag = "verified on H100" if f.verified else "not calibrated by us"
            out[f"tensor_{prec}"] = f"{' + '.join(f.names)} ({f.label}; 1 op = 1 FLOP; {tag})"
    out["cuda_core"] = (
        "2*fma + add + mul of smsp__sass_thread_inst_executed_op_{d,f,h}{fma,add,mul}_pred_on.sum"
        if _has_fp(have)
        else "not measured: no SASS FP instruction counters"
    )
    if DRAM_READ in have or DRAM_WRITE in have:
        out["dram_bytes"] = f"{DRAM_READ} + {DRAM_WRITE}"
    elif DRAM_TOTAL in have:
        out["dram_bytes"] = DRAM_TOTAL
    else:
        out["dram_bytes"] = "not measured"
    if L2_BYTES in have:
        out["l2_bytes"] = L2_BYTES
    elif L2_SECTORS in have:
        out["l2_bytes"] = f"{L2_SECTOR_BYTES} * {L2_SECTORS}"
    elif all(n in have for n in L2_SECTOR_OPS):
        out["l2_bytes"] = f"{L2_SECTOR_BYTES} * ({' + '.join(L2_SECTOR_OPS)})"
    else:
        out["l2_bytes"] = "not measured"
    out["time_s"] = KERNEL_TIME if KERNEL_TIME in have else "not measured"
    return out


def missing_notes(
    metrics: Sequence[str], plan: Mapping[str, Formula | None] | None = None
) -> list[str]:
    """Human notes on what could not be derived from the collected metric names."""
    have = set(metrics)
    plan = tensor_plan(have) if plan is None else plan
    notes = []
    if not _has_fp(have):
        notes.append("no SASS FP instruction counters: CUDA-core FLOP not measured")
    measured = [p for p in TENSOR_FLOAT if plan.get(p) is not None]
    if not measured:
        if TENSOR_INST in have:
            notes.append(
                f"{TENSOR_INST} collected but not converted to FLOP (FLOP per tensor instruction "
                "depends on MMA shape and architecture): flops_tensor is null"
            )
        else:
            notes.append("no Tensor-Core op counters (sm__ops_path_tensor_*): flops_tensor is null")
    else:
        missing = [p for p in TENSOR_FLOAT if plan.get(p) is None]
        if missing:
            notes.append(
                f"Tensor-Core {', '.join(missing)} not measured (no counter collected for them; "
                f"on Hopper fp16 needs the per-instruction names): flops_tensor sums "
                f"{', '.join(measured)} only"
            )
    if not ({DRAM_READ, DRAM_WRITE, DRAM_TOTAL} & have):
        notes.append("no DRAM byte counters: dram_bytes is null")
    if not ({L2_BYTES, L2_SECTORS} & have) and not all(n in have for n in L2_SECTOR_OPS):
        notes.append(f"no {L2_BYTES}: l2_bytes is null")
    return notes
