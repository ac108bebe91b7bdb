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
