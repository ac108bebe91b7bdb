"""What a series' change points mean: regression or improvement by the metric's direction,
and a label for its newest points in PyTorch HUD's terms.

Labels (for the newest points of a series):
- `insufficient data`: fewer than `min_points` points, too few to find a change in;
- `regression`: the newest confirmed change point (at least `consecutive` points after it;
  one bad point is not called a regression) is a regression that no note marks as known.
  Newer change points with fewer points after them do not undo it until they are confirmed;
- `suspicious`: no such regression, but an unmarked regression too recent to be confirmed,
  or the newest point more than 3 standard deviations of its segment beyond the segment's
  mean on the worse side;
- `no change`: anything else (no change point, the newest one an improvement or marked).

A note marks a change point when its time lies after the point before the change and at or
before the first point after it: the change was planned (conbench's "distribution change").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from perfsuite.analyzers.history.changepoints import (
    DEFAULT_MAX_PVALUE,
    DEFAULT_MIN_MAGNITUDE,
    DEFAULT_WINDOW,
    ChangePoint,
    change_points,
)
from perfsuite.history_store.series import Note, Series

REGRESSION = "regression"
SUSPICIOUS = "suspicious"
NO_CHANGE = "no change"
INSUFFICIENT = "insufficient data"
OUTLIER_SD = 3.0


@dataclass(frozen=True)
class Settings:
    """The change-point settings (Otava's defaults) and the labels' thresholds."""

    window: int = DEFAULT_WINDOW
    max_pvalue: float = DEFAULT_MAX_PVALUE
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE
    consecutive: int = 3
    min_points: int = 6


@dataclass(frozen=True)
class Change:
    """One change point of a series as the front ends show it."""

    index: int  # the first point after the change, 0-based
    time: str
    attributes: dict[str, str]
    mean_before: float
    mean_after: float
    change_pct: float
    pvalue: float
    kind: str  # "regression" | "improvement"
    note: str | None  # the note that marks it as a known change


@dataclass(frozen=True)
class SeriesVerdict:
    """A series, its change points and the label of its newest points (and why)."""

    series: Series
    changes: list[Change]
    label: str
    why: str
    settings: Settings = field(default_factory=Settings)

    @property
    def latest(self) -> float | None:
        return self.series.points[-1].value if self.series.points else None


def kind_of(point: ChangePoint, direction: str) -> str:
    """Regression or improvement: a rise is worse for lower-is-better metrics."""
    rose = point.mean_after > point.mean_before
    return "regression" if rose == (direction == "lower") else "improvement"


def _note_for(series: Series, index: int, notes: tuple[Note, ...]) -> str | None:
    after = series.points[index].time
    before = series.points[index - 1].time
    for note in notes:
        if before < note.time <= after:
            return note.text
    return None


def _change(series: Series, point: ChangePoint) -> Change:
    first = series.points[point.index]
    return Change(
        index=point.index,
        time=first.time,
        attributes=dict(first.attributes),
        mean_before=point.mean_before,
        mean_after=point.mean_after,
        change_pct=point.forward_change * 100.0,
        pvalue=point.pvalue,
        kind=kind_of(point, series.direction),
        note=_note_for(series, point.index, series.notes),
    )


def _outlier(series: Series, start: int) -> bool:
    """Whether the newest point lies beyond OUTLIER_SD deviations of the points before it in
    its segment (from `start`), on the worse side."""
    before = np.asarray(series.values[start:-1], dtype=float)
    if len(before) < 3:
        return False
    spread = float(np.std(before, ddof=1))
    excess = series.points[-1].value - float(np.mean(before))
    worse = excess if series.direction == "lower" else -excess
    return spread > 0 and worse > OUTLIER_SD * spread


def _label(series: Series, changes: list[Change], settings: Settings) -> tuple[str, str]:
    n = len(series.points)
    if n < settings.min_points:
        return INSUFFICIENT, f"{n} points, fewer than {settings.min_points}"
    confirmed = [c for c in changes if n - c.index >= settings.consecutive]
    pending = [c for c in changes if n - c.index < settings.consecutive]
    base = confirmed[-1] if confirmed else None
    if base is not None and base.kind == "regression" and base.note is None:
        after = n - base.index
        since = (
            f"; since then {len(pending)} newer change(s) too recent to count" if pending else ""
        )
        return (
            REGRESSION,
            f"{base.change_pct:+.1f}% at point {base.index}, {after} points on{since}",
        )
    fresh = [c for c in pending if c.kind == "regression" and c.note is None]
    if fresh:
        c = fresh[-1]
        return SUSPICIOUS, (
            f"{c.change_pct:+.1f}% at point {c.index}, only {n - c.index} point(s) on "
            f"(a regression needs {settings.consecutive})"
        )
    if _outlier(series, changes[-1].index if changes else 0):
        return SUSPICIOUS, f"the newest point lies beyond {OUTLIER_SD:g} standard deviations"
    if base is not None and base.note is not None:
        return NO_CHANGE, f"the newest change is marked: {base.note}"
    return NO_CHANGE, "no regression since the newest change" if changes else "no change point"


def judge(series: Series, settings: Settings | None = None) -> SeriesVerdict:
    """The change points of `series` with their kinds and notes, and its label."""
    settings = settings or Settings()
    points = change_points(
        series.values, settings.window, settings.max_pvalue, settings.min_magnitude
    )
    changes = [_change(series, p) for p in points]
    label, why = _label(series, changes, settings)
    return SeriesVerdict(series, changes, label, why, settings)


BAND_POINTS = 5


@dataclass(frozen=True)
class Band:
    """A rolling band: the mean and the mean +- one standard deviation of the `width` points
    ending at each point (fewer at the start), for the picture of a series."""

    width: int
    mean: list[float]
    low: list[float]
    high: list[float]


def rolling_band(values: list[float], width: int = BAND_POINTS) -> Band:
    mean, low, high = [], [], []
    for i in range(len(values)):
        window = np.asarray(values[max(0, i - width + 1) : i + 1], dtype=float)
        m = float(np.mean(window))
        sd = float(np.std(window, ddof=1)) if len(window) > 1 else 0.0
        mean.append(m)
        low.append(m - sd)
        high.append(m + sd)
    return Band(width, mean, low, high)


def segment_means(verdict: SeriesVerdict) -> list[tuple[int, int, float]]:
    """(start, stop, mean) of each stretch between change points. Computed from the points:
    a change point's own means are Otava's, taken when it was last re-tested, and the merge
    re-tests only the points after a dropped one."""
    values = verdict.series.values
    edges = [0, *[c.index for c in verdict.changes], len(values)]
    return [(a, b, float(np.mean(values[a:b]))) for a, b in itertools.pairwise(edges) if b > a]
