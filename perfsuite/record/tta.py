"""Time-to-accuracy: the one implementation of the DAWNBench rule.

The time to accuracy is the cumulative training time at the *first* evaluation whose metric is
at or above the threshold (>=, not >). Later evaluations that fall back below do not undo it.
For lower-is-better metrics (a record's `task.direction` == "lower", e.g. MLPerf RNN-T word
error rate) the rule is mirrored: first evaluation at or below the threshold.

A run stops at the first evaluation that meets its own target (unless `--all-epochs`), so its
curve says nothing about a stricter threshold it had not met yet: such a crossing is "not
measured" (`Crossing.stopped_at`), which is not the same as "did not reach" (DNC, "did not
converge": docs/statistics.md, "Terms").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Crossing:
    """Where a curve first reaches a threshold; `reached` False means it never did, unless
    `stopped_at` is set: the run stopped on meeting its own target (that value) before it
    could meet this one, so this threshold was not measured."""

    metric: str
    threshold: float
    reached: bool
    time_s: float | None = None
    epoch: float | None = None
    evaluation_index: int | None = None
    stopped_at: float | None = None

    @property
    def measured(self) -> bool:
        """False when the curve was cut short before it could show this threshold."""
        return self.reached or self.stopped_at is None


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
    honouring the task's direction; not reached on a curve that `stopped_at_target` cut
    short is marked not measured (`stopped_at`)."""
    task = record["task"]
    c = first_crossing(
        record.get("evaluations") or [],
        metric or task["metric"],
        task["threshold"] if threshold is None else threshold,
        task.get("direction", "higher"),
    )
    evals = record.get("evaluations") or []
    if c.reached or all((ev.get("metrics") or {}).get(c.metric) is None for ev in evals):
        return c  # a metric the curve never shows is simply absent, not cut short
    stop = stopped_at_target(record)
    return c if stop is None else replace(c, stopped_at=stop)


def planned_epochs(record: Mapping[str, Any]) -> float | None:
    """The epochs the run was set to train (`config.recipe_values.epochs`, the value in force,
    else `config.epochs`), or None when the record does not say (imports, some user loops)."""
    config = record.get("config") or {}
    recipe = config.get("recipe_values")
    recipe = recipe if isinstance(recipe, Mapping) else {}  # the schema says object; be safe
    for value in (recipe.get("epochs"), config.get("epochs")):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def stopped_at_target(record: Mapping[str, Any]) -> float | None:
    """The run's own threshold when its curve ends because it met it, else None.

    Why: the runner stops at the first evaluation meeting the target unless `all_epochs`
    (`--all-epochs`); a stricter threshold not met by then was never measured. A curve that
    goes on past its crossing, or whose last evaluation is the last planned epoch (the run
    ran out of epochs: stricter thresholds really were not reached), is complete. When the
    record names no planned epochs (imports stop at the target too) it counts as stopped.
    """
    task = record.get("task") or {}
    config = record.get("config") or {}
    evals = record.get("evaluations") or []
    if config.get("all_epochs") or not evals or task.get("threshold") is None:
        return None
    own = first_crossing(
        evals, str(task.get("metric")), task["threshold"], task.get("direction", "higher")
    )
    if not own.reached or own.evaluation_index != len(evals) - 1:
        return None
    planned, last = planned_epochs(record), evals[-1].get("epoch")
    if planned is not None and isinstance(last, (int, float)) and last >= planned:
        return None
    return float(task["threshold"])


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
