"""What the views call a task's metric and its items: DAWNBench states its targets as "93% top-5"
(ImageNet), "94% top-1" (CIFAR-10) and "0.75 F1" (SQuAD v1.1), and its inference cost per
10,000 images or questions. Records always hold metrics as fractions in [0, 1]; this table
only says how to name and show them. Unknown metrics and tasks keep their own names.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfsuite import fmt


@dataclass(frozen=True)
class Metric:
    """`label` as shown ("top-5"); `scale`: "percent" (shown as 93%), "score" (0.75) or
    "loss" (a value that is no fraction, e.g. nats per token: 1.47)."""

    name: str
    label: str
    scale: str


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("top1", "top-1", "percent"),
        Metric("top5", "top-5", "percent"),
        Metric("f1", "F1", "score"),
        Metric("exact_match", "exact match", "percent"),
        Metric("val_loss", "validation loss (nats/token)", "loss"),  # lower is better
    )
}

# What one inference serves, per task (DAWNBench: "per 10,000 images").
ITEMS: dict[str, str] = {
    "cifar10": "images",
    "imagenet": "images",
    "digits": "images",
    "squad": "questions",
}


def metric_info(metric: str) -> Metric:
    """The metric's label and scale; an unknown metric is its own label, shown as a fraction."""
    return METRICS.get(metric, Metric(metric, metric, "score"))


def metric_text(metric: str, value: float | None) -> str:
    """A metric value as the task states it: top-5 0.93 -> "93%", F1 0.75 -> "0.75"."""
    return fmt.metric(value, metric_info(metric).scale)


def value_text(metric: str, value: float | None) -> str:
    """A metric value in a table of achieved figures: fractions as percentages with two
    decimals (93.46%), a loss as its number (1.9366)."""
    if metric_info(metric).scale == "loss":
        return "n/a" if value is None else f"{value:.4f}"
    return fmt.pct(value, 2)


def target_text(metric: str, threshold: float, direction: str = "higher") -> str:
    """The target as DAWNBench words it: "top-5 >= 93%", "F1 >= 0.75"."""
    op = "<=" if direction == "lower" else ">="
    return f"{metric_info(metric).label} {op} {metric_text(metric, threshold)}"


def items(task: str) -> str:
    """What a task's inference serves, plural ("images", "questions"); "items" if unknown."""
    return ITEMS.get(task, "items")
