"""Model FLOPs utilization (MFU) of a transformer run, as the field defines it.

Model FLOPs per token = 6N + 12·L·d·T (PaLM, Chowdhery et al. 2022, appendix B): 6N for the
forward (2N) and backward (4N) matrix products of the N non-embedding parameters, and
12·L·d·T for attention's two T x T products (QKᵀ and PV: 2·2·T·d per token and layer forward,
times 3 with the backward) over L layers of width d and context T. The causal mask is not
halved, as in PaLM (and perfsuite's counted FLOPs, docs/flops.md). MFU = model FLOPs per token x
tokens per second / the spec peak FLOP/s of the math the run's matrix products used (fp32, TF32,
bf16...: the run's math policy), as a fraction. The peak is the record's `ceilings.spec`: the
vendor table for GPUs, FMA width x clock x cores for CPUs (perfsuite.ceilings.cpuspec), or a
user-set value: fixed and named, so two runs of the same code on the same machine share it.
The measured roof (the best benchmark reading kept, which moves as better readings come) is
for the roofline; the utilization of it stands beside MFU under its own name.

The counted FLOPs of the step (`work.flops_per_step`) differ on purpose: they are what the
step executed, model or not (the embedding lookup and its gradient, the tied head's matmul
outside N when untied, norms, softmax, cross-entropy, dropout, the optimizer and Muon's
Newton-Schulz products), and the rate they give over the same peak is the hardware FLOPs
utilization (HFU) of the step. `counted_over_model` is their ratio.

Pure: a record in, plain data out. Beside `transformer.py` because capture (which completes the
record's `model_flops` section) and analysis (which shows it) apply the one definition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite.devices.maths import from_policy, math_section, record_device
from perfsuite.devices.roofs import record_roofs, spec_roofs


@dataclass(frozen=True)
class MFU:
    run_id: str
    config: dict[str, Any]
    non_embedding_parameters: int | None
    model_flops_per_token: float | None
    tokens_per_step: float | None
    step_time_s: float | None
    tokens_per_s: float | None
    model_flops_per_s: float | None
    peak_flops: float | None  # the spec peak of `peak_math`: MFU's denominator
    peak_math: str | None
    peak_provenance: str | None
    mfu: float | None
    counted_flops_per_token: float | None
    counted_over_model: float | None
    hfu: float | None
    peak_source: str | None = None
    measured_peak_flops: float | None = None  # the measured roof of `peak_math`, if any
    measured_peak_utilization: float | None = None  # model FLOP/s / measured_peak_flops
    notes: list[str] = field(default_factory=list)


def _value(q: Any) -> float | None:
    if isinstance(q, Mapping):
        q = q.get("value")
    return float(q) if isinstance(q, (int, float)) and not isinstance(q, bool) else None


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _peak(record: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """(the math the run's matrix products used, its spec roof quantity or {}, why there is
    none): the spec of `ceilings.spec` (vendor table, CPU flags or user-set)."""
    ceilings = record.get("ceilings") or {}
    math = from_policy("matmul", math_section(record), record_device(record)).math
    spec = ceilings.get("spec") if isinstance(ceilings, Mapping) else None
    q = (spec_roofs(spec if isinstance(spec, Mapping) else None).get(math) or {}).get(
        "peak_flops"
    ) or {}
    if q:
        return math, q, ""
    if isinstance(spec, Mapping) and spec.get("source"):
        return math, {}, f"the spec has no {math} value ({spec['source']})"
    return math, {}, "the record's ceilings name no spec for the device"


def _measured_peak(record: Mapping[str, Any], math: str) -> float | None:
    """The measured roof of `math` in the record's ceilings, or None."""
    q = (record_roofs(record.get("ceilings")).get(math) or {}).get("peak_flops") or {}
    return _value(q) if q.get("provenance") == "measured" else None


def mfu(record: Mapping[str, Any]) -> MFU | None:
    """The record's MFU figures, or None for a run without a `model_flops` section (a
    workload with no transformer FLOP model)."""
    section = record.get("model_flops")
    if not isinstance(section, Mapping):
        return None
    notes: list[str] = []
    config = dict(section.get("config") or {})
    per_token = _value(section.get("per_token"))
    tokens_per_sample = _value(section.get("tokens_per_sample")) or _value(config.get("block_size"))
    batch = _value(config.get("batch_size"))
    tokens_per_step = tokens_per_sample * batch if tokens_per_sample and batch else None
    step = _value((record.get("throughput") or {}).get("step_time"))
    samples_rate = _value((record.get("throughput") or {}).get("samples_per_s"))
    if samples_rate is not None and tokens_per_sample:
        rate = samples_rate * tokens_per_sample  # a partial last batch is not counted as full
    else:
        rate = _div(tokens_per_step, step)
    if rate is None:
        notes.append("no measured step time (no timed epoch): no tokens/s and no MFU")
    flops_s = per_token * rate if per_token is not None and rate is not None else None
    math, spec_q, why_none = _peak(record)
    peak, prov = _value(spec_q), spec_q.get("provenance")
    if peak is None:
        notes.append(
            f"no {math} spec peak: {why_none}; no MFU (a peak you know for this device can be "
            "named with `perfsuite peaks --set DTYPE=FLOP/s`)"
        )
    value = _div(flops_s, peak)
    if value is not None and value > 1:
        notes.append(
            f"MFU {value:.3f} is above 1: the {math} spec ({spec_q.get('source')}) is too low "
            "or the step time is wrong; not a physical figure"
        )
    measured = _measured_peak(record, math)
    counted = _value((record.get("work") or {}).get("flops_per_step"))
    work_batch = _value((record.get("work") or {}).get("batch_size"))
    counted_tokens = work_batch * tokens_per_sample if work_batch and tokens_per_sample else None
    counted_per_token = _div(counted, counted_tokens)
    hfu = _div(counted_per_token * rate if counted_per_token and rate else None, peak)
    return MFU(
        run_id=str(record.get("run_id", "")),
        config=config,
        non_embedding_parameters=section.get("parameters", {}).get("non_embedding"),
        model_flops_per_token=per_token,
        tokens_per_step=tokens_per_step,
        step_time_s=step,
        tokens_per_s=rate,
        model_flops_per_s=flops_s,
        peak_flops=peak,
        peak_math=math,
        peak_provenance=prov,
        mfu=value,
        counted_flops_per_token=counted_per_token,
        counted_over_model=_div(counted_per_token, per_token),
        hfu=hfu,
        peak_source=spec_q.get("source"),
        measured_peak_flops=measured,
        measured_peak_utilization=_div(flops_s, measured),
        notes=notes,
    )


def why_counted_differs(m: MFU) -> str:
    """One sentence on the counted FLOPs against the model FLOPs."""
    if m.counted_over_model is None:
        return "no counted FLOPs of the step (capture off, or the count failed)"
    return (
        f"counted FLOPs of the step are {m.counted_over_model:.3f}x the model FLOPs: the count "
        "adds what 6N + 12·L·d·T leaves out (embedding lookups and their gradient, norms, "
        "softmax, cross-entropy, element-wise work, the optimizer, Muon's Newton-Schulz "
        "products) and is per executed op; the model formula is the field's fixed yardstick"
    )
