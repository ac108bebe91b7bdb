"""Interval arithmetic on the device timeline.

Kernels on different streams overlap; summing their durations double counts. Busy time is
the length of the union of [ts, ts + dur) intervals, computed after sorting by start.
"""

from __future__ import annotations

import numpy as np


def merge(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals: (starts, ends, first_index) of the merged, disjoint intervals.

    `first_index` is, for each merged interval, the position (in the caller's arrays) of an
    event starting it. Touching intervals ([0, 1) and [1, 2)) merge into one.
    """
    if len(ts) == 0:
        empty = np.zeros(0)
        return empty, empty, np.zeros(0, dtype=np.int64)
    order = np.argsort(ts, kind="stable")
    s, e = ts[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    starts_at = np.flatnonzero(new)
    last = np.append(starts_at[1:] - 1, len(s) - 1)
    return s[starts_at], reach[last], order[starts_at]


def union_length(ts: np.ndarray, end: np.ndarray) -> float:
    """Total length covered by at least one interval."""
    s, e, _ = merge(ts, end)
    return float(np.sum(e - s)) if len(s) else 0.0


class CoverIndex:
    """Fast "how much of [a, b) is covered" queries against one set of intervals."""

    def __init__(self, ts: np.ndarray, end: np.ndarray) -> None:
        self.starts, self.ends, _ = merge(np.asarray(ts, float), np.asarray(end, float))
        self.cum = np.concatenate(([0.0], np.cumsum(self.ends - self.starts)))

    def covered(self, a: float, b: float) -> float:
        """Length of [a, b) inside the union."""
        if b <= a or len(self.starts) == 0:
            return 0.0
        return self._upto(b) - self._upto(a)

    def _upto(self, x: float) -> float:
        """Covered length in (-inf, x)."""
        i = int(np.searchsorted(self.starts, x, side="right"))  # intervals starting before x
        if i == 0:
            return 0.0
        full = self.cum[i - 1]
        return float(full + min(x, self.ends[i - 1]) - self.starts[i - 1])

    def covered_many(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """`covered` for each pair (a[i], b[i]), with the same arithmetic per element."""
        out = np.zeros(len(a))
        if len(self.starts) == 0 or len(a) == 0:
            return out
        ok = b > a
        out[ok] = self._upto_many(b[ok]) - self._upto_many(a[ok])
        return out

    def _upto_many(self, x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.starts, x, side="right")
        j = np.maximum(i - 1, 0)
        full = self.cum[j] + np.minimum(x, self.ends[j]) - self.starts[j]
        return np.where(i == 0, 0.0, full)
