"""What a history holds: points (one metric of one run) grouped into series, the metrics
perfsuite keeps and which way each is better, and notes that mark a known change."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["lower", "higher"]


@dataclass(frozen=True)
class Metric:
    """A metric of the history: its column name, unit and which way is better."""

    name: str
    unit: str
    direction: Direction
    label: str


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("time_to_accuracy_s", "s", "lower", "time to accuracy"),
        Metric("samples_per_s", "sample/s", "higher", "samples/s"),
        Metric("tokens_per_s", "token/s", "higher", "tokens/s"),
        Metric("step_time_s", "s", "lower", "step time"),
        Metric("mfu", "fraction", "higher", "MFU"),
        Metric("roof_fraction", "fraction", "higher", "fraction of roof"),
        Metric("latency_s", "s", "lower", "batch-1 latency"),
        Metric("cost_usd", "USD", "lower", "cost to accuracy"),
        Metric("energy_j", "J", "lower", "energy to accuracy"),
    )
}

# Metrics a CSV names that perfsuite does not know: higher is better when the name says a
# rate or a score, lower otherwise (times, latencies, costs, energy, memory).
_HIGHER_NAME = re.compile(r"(per_s|/s|throughput|qps|ops|mfu|roof|accuracy|top1|top5|f1|score)")


def direction_of(metric: str) -> Direction:
    """Which way `metric` is better: the table above, else the name's rule."""
    known = METRICS.get(metric)
    if known is not None:
        return known.direction
    name = metric.lower()
    if name.startswith("time_to") or "latency" in name:
        return "lower"
    return "higher" if _HIGHER_NAME.search(name) else "lower"


@dataclass(frozen=True)
class Point:
    """One value of a series: when it was measured (ISO 8601 UTC), the value, and the
    attributes that say what ran (commit, versions); `run` names the record it came from (its
    path when added) and `key` is that record's identity in the store."""

    time: str
    value: float
    attributes: dict[str, str] = field(default_factory=dict)
    run: str = ""
    key: str = ""


@dataclass(frozen=True)
class Note:
    """A known change of a series (a planned driver upgrade), marked at `time`."""

    series: str
    time: str
    text: str


@dataclass(frozen=True)
class Series:
    """The points of one configuration and metric, oldest first."""

    name: str
    metric: str
    direction: Direction
    points: tuple[Point, ...]
    notes: tuple[Note, ...] = ()

    @property
    def values(self) -> list[float]:
        return [p.value for p in self.points]


@dataclass(frozen=True)
class Row:
    """One stored value: a record's metric. `record_key` names the record (its run id and
    start), so the same record added twice is one row; `series_key` holds the configuration
    fields the series name is made of."""

    record_key: str
    series: str
    series_key: dict[str, str]
    metric: str
    time: str
    value: float
    attributes: dict[str, str]
    source: str
