"""Time-to-accuracy: the one implementation of the DAWNBench rule.

The time to accuracy is the cumulative training time at the *first* evaluation whose metric is
at or above the threshold (>=, not >). Later evaluations that fall back below do not undo it.
For lower-is-better metrics (a record's `task.direction` == "lower", e.g. MLPerf RNN-T word
error rate) the rule is mirrored: first evaluation at or below the threshold.
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
    evaluations: Sequence[dict[str, Any]],
    metric: str,
    threshold: float,
    direction: str = "higher",
) -> Crossing:
    """Scan evaluations in order; missing or null metric values never count as reached."""
    if direction not in ("higher", "lower"):
        raise ValueError(f"direction must be 'higher' or 'lower', got {direction!r}")
    lower = direction == "lower"
    for i, ev in enumerate(evaluations):
        value = (ev.get("metrics") or {}).get(metric)
        if value is not None and (value <= threshold if lower else value >= threshold):
            return Crossing(metric, threshold, True, float(ev["train_time_s"]), ev.get("epoch"), i)
    return Crossing(metric, threshold, False)


def record_crossing(
    record: dict[str, Any], threshold: float | None = None, metric: str | None = None
) -> Crossing:
    """The crossing of a run record's curve at its own (or the given) threshold and metric,
    honouring the task's direction."""
    task = record["task"]
    return first_crossing(
        record.get("evaluations") or [],
        metric or task["metric"],
        task["threshold"] if threshold is None else threshold,
        task.get("direction", "higher"),
    )


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
