"""How a record's inference and energy figures are read, in one place for cost, leaderboard
and report: which rule a latency follows, its percentiles, and the energy figures with the
reason when there are none.

Rules (`inference.rule`, in every loaded record): `dawnbench` (runner/measure/inference.py: mean of
batch-1 predictions over the whole evaluation set by the threshold model), `older rule`
(records of schema version 1 measured without it: the median of a few batch-1 calls of the
last model), `imported` (DAWNBench or MLPerf results, their own rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfsuite.record import qvalue
from perfsuite.record.migrate import OLDER_INFERENCE_RULE

OLDER_RULE = OLDER_INFERENCE_RULE


@dataclass(frozen=True)
class InferenceView:
    """A record's batch-1 inference figure. `latency_s` is None when there is none; `note`
    then says why (not reached, not measured)."""

    rule: str | None
    latency_s: float | None
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    examples: int | None
    mode: str | None
    precision: str | None
    metrics: dict[str, float]
    energy_per_10k_j: float | None
    energy_note: str | None
    note: str | None


@dataclass(frozen=True)
class EnergyView:
    """Energy to accuracy over the training clock, with its source or the reason for none."""

    to_accuracy_j: float | None
    train_total_j: float | None
    source: str | None
    note: str | None


def rule_of(record: Mapping[str, Any]) -> str | None:
    """Which rule the record's latency follows (None when it has no inference section)."""
    inf = record.get("inference") or {}
    if not inf:
        return None
    rule = inf.get("rule")  # every loaded record names it (perfsuite/record/migrate.py)
    return str(rule) if rule else None


def inference_view(record: Mapping[str, Any]) -> InferenceView:
    inf = record.get("inference") or {}
    rule = rule_of(record)
    latency = qvalue(inf.get("latency"))
    note = inf.get("not_measured")
    if rule == OLDER_RULE and latency is not None:
        note = "older rule: median of a few batch-1 calls of the last model, not the mean"
    energy = inf.get("energy") or {}
    e10k = qvalue(inf.get("energy_per_10k"))
    energy_note = None
    if e10k is None and energy:
        energy_note = energy.get("reason") or "energy not measured"
    return InferenceView(
        rule=rule,
        latency_s=latency,
        p50_s=inf.get("latency_p50_s"),
        p90_s=inf.get("latency_p90_s"),
        p99_s=inf.get("latency_p99_s"),
        examples=inf.get("examples"),
        mode=inf.get("mode"),
        precision=inf.get("precision"),
        metrics=dict(inf.get("metrics") or {}),
        energy_per_10k_j=e10k,
        energy_note=energy_note,
        note=note,
    )


def energy_view(record: Mapping[str, Any]) -> EnergyView:
    energy = record.get("energy") or {}
    if not energy:
        return EnergyView(None, None, None, None)
    to_acc = qvalue(energy.get("to_accuracy"))
    note = None
    if to_acc is None:
        note = energy.get("reason") or energy.get("to_accuracy_note") or "not measured"
    return EnergyView(to_acc, qvalue(energy.get("train_total")), energy.get("source"), note)
