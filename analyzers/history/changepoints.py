"""Change points of one series, computed as Apache Otava 0.8 computes them
(`otava.analysis.compute_change_points`; Fleming et al., "Hunter: Using Change Point Detection
to Hunt for Performance Regressions", ICPE 2023).

1. Split: E-divisive means on windows of `window` points that slide by half a window (or to the
   last change point found), each window split recursively while the t-test p-value of the new
   split is at most the first-pass p (10x the p asked for below 0.05, 2x below 0.5). The union
   of the windows' points are the weak change points.
2. Merge, bottom-up: while some point has a p-value at or above `max_pvalue`, or the smallest
   relative change is at most `min_magnitude`, drop that weakest point and test its
   neighbours again against their new segments.

Every decision (which point is weakest, ties, NaN p-values of flat stretches) is made in the
order Otava makes it, so the same series and settings give the same indices;
tests/test_history_otava.py checks this against fixtures made by Otava itself.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perfsuite.analyzers.history.edivisive import EnergySplitter, Segment
from perfsuite.analyzers.history.ttest import pooled_ttest_p

DEFAULT_WINDOW = 50  # Otava's defaults
DEFAULT_MAX_PVALUE = 0.001
DEFAULT_MIN_MAGNITUDE = 0.0


@dataclass(frozen=True)
class ChangePoint:
    """A change between points index-1 and index (index: the first point after it), with the
    t-test of the segments on either side (means and population standard deviations)."""

    index: int
    qhat: float
    mean_before: float
    mean_after: float
    std_before: float
    std_after: float
    pvalue: float

    @property
    def forward_change(self) -> float:
        """mean_after / mean_before - 1 (0 where mean_before is 0)."""
        return 0.0 if self.mean_before == 0 else self.mean_after / self.mean_before - 1.0

    @property
    def magnitude(self) -> float:
        """The larger relative change, read forwards or backwards (0 for a zero mean)."""
        backward = 0.0 if self.mean_after == 0 else self.mean_before / self.mean_after - 1.0
        return max(abs(self.forward_change), abs(backward))


def first_pass_pvalue(max_pvalue: float) -> float:
    """The looser p-value the split step uses, so that merge has weak points to judge."""
    if max_pvalue < 0.05:
        return max_pvalue * 10
    return max_pvalue * 2 if max_pvalue < 0.5 else max_pvalue


def _segments(indices: Sequence[int], length: int) -> list[Segment]:
    """The non-empty segments between sorted change-point indices of a series of `length`."""
    edges = [0, *indices, length]
    return [Segment(a, b) for a, b in itertools.pairwise(edges) if a != b]


def _tested(index: int, qhat: float, values: np.ndarray, segments: list[Segment]) -> ChangePoint:
    """The change point at `index` with its t-test: inside a segment it splits that segment;
    at the edge between two segments it compares them (the merge step's re-test)."""
    for i, seg in enumerate(segments):
        if seg.stop == index:
            left, right = seg, segments[i + 1]
            break
        if seg.start < index < seg.stop:
            left, right = Segment(seg.start, index), Segment(index, seg.stop)
            break
    else:
        raise ValueError(f"change point {index} lies in no segment of {segments}")
    a = values[left.start : left.stop]
    b = values[right.start : right.stop]
    mean_a, mean_b = np.mean(a), np.mean(b)
    std_a = np.std(a) if len(a) >= 2 else 0.0
    std_b = np.std(b) if len(b) >= 2 else 0.0
    if len(a) + len(b) > 2:
        p = pooled_ttest_p(float(mean_a), float(std_a), len(a), float(mean_b), float(std_b), len(b))
    else:
        p = 1.0
    return ChangePoint(
        index, qhat, float(mean_a), float(mean_b), float(std_a), float(std_b), float(p)
    )


def _window_points(values: np.ndarray, start: int, stop: int, pvalue: float) -> list[ChangePoint]:
    """E-divisive on values[start:stop]: split the best candidate while its p <= `pvalue`."""
    window = values[start:stop]
    splitter = EnergySplitter(window)
    found: list[ChangePoint] = []
    while True:
        segments = _segments([c.index for c in found], len(window))
        candidates = [splitter.best_split(s) for s in segments if s.stop - s.start > 1]
        if not candidates:
            break
        index, qhat = max(candidates, key=lambda c: c[1])
        point = _tested(index, qhat, window, segments)
        if not point.pvalue <= pvalue:
            break
        found.append(point)
        found.sort(key=lambda c: c.index)
    return [replace(c, index=c.index + start) for c in found]


def weak_change_points(values: np.ndarray, window: int, pvalue: float) -> list[ChangePoint]:
    """The split step: every window's points, re-tested against their neighbours."""
    if window < 2:
        raise ValueError(f"window must be at least 2, not {window}")
    step = window // 2
    start = 0
    points: list[ChangePoint] = []
    while start < len(values):
        new = _window_points(values, start, min(start + window, len(values)), pvalue)
        start = max(new[-1].index if new else 0, start + step)
        known = {p.index for p in points}
        points += [p for p in new if p.index not in known]
    points.sort(key=lambda c: c.index)
    segments = _segments([c.index for c in points], len(values))
    return [_tested(c.index, c.qhat, values, segments) for c in points]


def merge_change_points(
    points: list[ChangePoint], values: np.ndarray, max_pvalue: float, min_magnitude: float
) -> list[ChangePoint]:
    """The merge step: drop the weakest point until every p < max_pvalue and every relative
    change > min_magnitude; after each drop the two points that follow it in the list are
    re-tested against the new segments (Otava's order)."""
    points = list(points)
    while points:
        weakest = max(points, key=lambda c: c.pvalue)
        if weakest.pvalue < max_pvalue:
            weakest = min(points, key=lambda c: c.magnitude)
            if weakest.magnitude > min_magnitude:
                return points
        at = next(i for i, c in enumerate(points) if c.index == weakest.index)
        del points[at]
        segments = _segments([c.index for c in points], len(values))
        for i in (at, at + 1):
            if i < len(points):
                points[i] = _tested(points[i].index, points[i].qhat, values, segments)
    return points


def change_points(
    values: Sequence[float],
    window: int = DEFAULT_WINDOW,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
) -> list[ChangePoint]:
    """The change points of `values` (finite numbers, oldest first), sorted by index."""
    series = np.asarray(values, dtype=np.float64)
    if series.ndim != 1 or not np.all(np.isfinite(series)):
        raise ValueError("a series is a 1-D sequence of finite numbers")
    if not 0 < max_pvalue <= 1 or math.isnan(min_magnitude) or min_magnitude < 0:
        raise ValueError("max_pvalue lies in (0, 1] and min_magnitude is >= 0")
    weak = weak_change_points(series, window, first_pass_pvalue(max_pvalue))
    return merge_change_points(weak, series, max_pvalue, min_magnitude)
