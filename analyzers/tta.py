"""Time-to-accuracy: the one implementation of the DAWNBench rule.

The time to accuracy is the cumulative training time at the *first* evaluation whose metric is
at or above the threshold (>=, not >). Later evaluations that fall back below do not undo it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Crossing:
    """Where a curve first reaches a threshold; `reached` False means it never did."""

    metric: str
    threshold: float
    reached: bool
    time_s: float | None = None
    epoch: float | None = None
    evaluation_index: int | None = None


def first_crossing(
    evaluations: Sequence[dict[str, Any]], metric: str, threshold: float
) -> Crossing:
    """Scan evaluations in order; missing or null metric values never count as reached."""
    for i, ev in enumerate(evaluations):
        value = (ev.get("metrics") or {}).get(metric)
        if value is not None and value >= threshold:
            return Crossing(metric, threshold, True, float(ev["train_time_s"]), ev.get("epoch"), i)
    return Crossing(metric, threshold, False)


def crossing_dict(c: Crossing, provenance: str = "measured") -> dict[str, Any]:
    """The record's `time_to_accuracy` section for a crossing."""
    return {
        "metric": c.metric,
        "threshold": c.threshold,
        "reached": c.reached,
        "time_s": c.time_s,
        "epoch": c.epoch,
        "evaluation_index": c.evaluation_index,
        "provenance": provenance,
    }
