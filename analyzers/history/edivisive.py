"""E-divisive means (Matteson and James, 2014) on one window of a series, with the candidate
split tested by Student's t-test, as Apache Otava 0.8 splits a window.

The energy statistic of a split of z[s:k] at t (s < t < k) is

    Q(t, k) = 2 / (k - s) * sum_{i<t<=j<k} |z_i - z_j|
              - 2 (k - t) / ((k - s)(t - s - 1)) * sum_{s<=i<j<t} |z_i - z_j|
              - 2 (t - s) / ((k - s)(k - t - 1)) * sum_{t<=i<j<k} |z_i - z_j|,

and the candidate of an interval is the t of the largest Q over every (t, k). All Q of an
interval come from two running sums of the pairwise distance matrix, so one interval costs
O(n^2). The sums are taken in the order Otava takes them, so that ties between equal Q values
(a flat stretch of a series) fall on the same t: the first in (t, k) order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class Segment:
    """The half-open index range [start, stop) of a series between two change points."""

    start: int
    stop: int


def _upper_ratio(num: np.ndarray, den: np.ndarray, diagonal: int) -> np.ndarray:
    """num / den on and above the given diagonal where den is not 0; 0 elsewhere."""
    keep = np.triu(np.ones_like(den, dtype=bool), k=diagonal) & (den != 0)
    return np.divide(num, den, out=np.zeros_like(den, dtype=float), where=keep)


@lru_cache(maxsize=256)
def _coefficients(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The weights of the within-left and within-right sums for an interval of size + 1
    points: they depend on t - s and k - s only, so one pair serves every interval of a size.
    Read-only."""
    splits = np.arange(1, size + 1)[:, None]  # t - s
    ends = np.arange(2, size + 2)[None, :]  # k - s
    left = _upper_ratio(2 * (ends - splits), ends * (splits - 1), 0)
    right = _upper_ratio(2 * splits, ends * (ends - splits - 1), 1)
    left.flags.writeable = False
    right.flags.writeable = False
    return left, right


class EnergySplitter:
    """The best E-divisive split of any interval of one series.

    Takes the series (float64, 1-D); precomputes its distance matrix, the column sums above
    the diagonal (`_column`) and the row-wise running sums to the right of it (`_row_run`).
    """

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.distance = np.abs(values[:, None] - values[None, :])
        upper = np.triu(self.distance, k=1)[:-1, 1:]
        self._column = upper.sum(axis=0)
        self._row_run = upper.cumsum(axis=1)

    def energy(self, start: int, stop: int) -> np.ndarray:
        """Q for every split of values[start:stop]: entry [i, j] is Q(t = start + i + 1,
        k = start + j + 2); entries with k <= t are 0."""
        size = stop - 1 - start
        column = self._column[start : stop - 1] - self.distance[0:start, start + 1 : stop].sum(
            axis=0
        )
        row_run = self._row_run[start : stop - 1, start : stop - 1]
        ends = np.arange(start + 2, stop + 1)[None, :]
        column_run = np.cumsum(column)[:-1, None]

        between = np.zeros((size, size))
        between[1:, :] = column_run
        between = (2 / (ends - start)) * np.triu(np.cumsum(row_run, axis=0) - between, k=0)

        left = np.zeros((size, size))
        left_coef, right_coef = _coefficients(size)
        left[1:, 1:] = left_coef[1:, 1:] * column_run

        right = np.zeros((size, size))
        tail = np.flipud(np.cumsum(np.flipud(row_run[1:, 1:]), axis=0))
        right[:-1, 1:] = right_coef[:-1, 1:] * tail
        return between - left - right

    def best_split(self, segment: Segment) -> tuple[int, float]:
        """(t, Q) of the largest Q over the splits of the segment (at least 2 points long)."""
        q = self.energy(segment.start, segment.stop)
        i, j = np.unravel_index(np.argmax(q), q.shape)
        return int(i) + 1 + segment.start, float(q[i][j])
