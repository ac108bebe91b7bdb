"""The record's `model_flops` section (transformer workloads): the workload's model FLOPs per
token at setup, completed with tokens/s, MFU and the counted FLOPs per token from the run's
throughput, ceilings and counted work (perfsuite.flops.mfu does the arithmetic)."""

from __future__ import annotations

from typing import Any

from perfsuite.flops.mfu import mfu, why_counted_differs
from perfsuite.record import quantity


def start(record: dict[str, Any], workload: Any, module: Any, recipe: Any) -> None:
    """The workload's section (config, parameters, model FLOPs per token), if it has one."""
    hook = getattr(workload, "model_flops", None)
    section = hook(module, recipe) if callable(hook) else None
    if section:
        record["model_flops"] = section


def _q(value: float | None, unit: str, provenance: str, source: str) -> dict[str, Any]:
    """A quantity, or an absent one (value null, `source` saying why) when there is none."""
    if value is None:
        return quantity(None, unit, "absent", source)
    return quantity(value, unit, provenance, source)


def complete(record: dict[str, Any]) -> None:
    """Add the measured and derived figures to the section (no-op without one)."""
    m = mfu(record)
    if m is None:
        return
    s = record["model_flops"]
    tps = record.get("throughput") or {}
    how = (
        "throughput.samples_per_s x tokens_per_sample"
        if (tps.get("samples_per_s") or {}).get("value") is not None
        else "batch_size x tokens_per_sample / throughput.step_time"
    )
    s["tokens_per_s"] = _q(m.tokens_per_s, "token/s", "derived", how)
    s["per_s"] = _q(m.model_flops_per_s, "FLOP/s", "derived", "per_token x tokens_per_s")
    if m.peak_flops is not None:
        s["peak"] = quantity(
            m.peak_flops,
            "FLOP/s",
            m.peak_provenance or "spec",
            f"the {m.peak_math} spec peak, the math the run's matrix products used: "
            f"{m.peak_source}",
        )
    s["peak_math"] = m.peak_math
    s["mfu"] = _q(
        m.mfu,
        "fraction",
        "derived",
        f"per_s / the {m.peak_math} spec peak" if m.mfu is not None else "; ".join(m.notes),
    )
    s["measured_peak_utilization"] = _q(
        m.measured_peak_utilization,
        "fraction",
        "derived",
        f"per_s / the measured {m.peak_math} roof of the record's ceilings (not MFU: that roof "
        "is the best benchmark reading kept, which moves between runs)"
        if m.measured_peak_utilization is not None
        else f"no measured {m.peak_math} roof in the record's ceilings",
    )
    if m.counted_flops_per_token is not None:
        s["counted_per_token"] = quantity(
            m.counted_flops_per_token,
            "FLOP",
            "counted",
            "work.flops_per_step / (work.batch_size x tokens_per_sample)",
        )
        s["counted_over_model"] = m.counted_over_model
        s["hfu"] = _q(
            m.hfu,
            "fraction",
            "derived",
            f"counted_per_token x tokens_per_s / the {m.peak_math} spec peak "
            "(hardware FLOPs utilization)",
        )
    s["why_counted_differs"] = why_counted_differs(m)
    s["notes"] = list(m.notes)
