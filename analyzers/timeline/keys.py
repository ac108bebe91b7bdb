"""Grouping by small non-negative integer keys (interned names, row indices) without sorting.

`np.unique` sorts, O(n log n); the keys the analysis groups by are ids into tables no larger
than the trace, so a presence table indexed by the key gives the same answer in O(n + max).
"""

from __future__ import annotations

import numpy as np


def unique_ints(
    keys: np.ndarray, return_index: bool = False, return_inverse: bool = False
) -> tuple[np.ndarray, ...] | np.ndarray:
    """What `np.unique(keys, return_index=..., return_inverse=...)` returns for a 1-D integer
    array (sorted distinct keys, first positions, inverse), by a table when the keys are
    small; by `np.unique` otherwise."""
    keys = np.asarray(keys)
    n = len(keys)
    small = n and keys.dtype.kind in "iu" and keys.min() >= 0 and keys.max() <= 4 * n + 4096
    if not small:
        got = np.unique(keys, return_index=return_index, return_inverse=return_inverse)
        if return_inverse:  # 1-D inverse whatever numpy's version
            got = (*got[:-1], got[-1].reshape(-1))
        return got
    top = int(keys.max()) + 1
    present = np.zeros(top, dtype=bool)
    present[keys] = True
    out: list[np.ndarray] = [np.flatnonzero(present).astype(keys.dtype)]
    if return_index:
        first = np.full(top, n, dtype=np.int64)
        np.minimum.at(first, keys, np.arange(n, dtype=np.int64))
        out.append(first[present])
    if return_inverse:
        out.append((np.cumsum(present) - 1)[keys])
    return tuple(out) if len(out) > 1 else out[0]


def pairs_sorted(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int]]:
    """`sorted(set(zip(a.tolist(), b.tolist())))` for two integer arrays, without building a
    Python tuple per element."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if not len(a):
        return []
    a0, b0 = int(a.min()), int(b.min())
    span_a, span_b = int(a.max()) - a0 + 1, int(b.max()) - b0 + 1
    if span_a * span_b >= 1 << 62:  # codes would not fit in int64
        return sorted(set(zip(a.tolist(), b.tolist(), strict=True)))
    codes = unique_ints((a - a0) * span_b + (b - b0))
    return [(a0 + c // span_b, b0 + c % span_b) for c in codes.tolist()]
