"""Mann-Whitney U rank test in numpy (no scipy at run time).

Why a rank test next to the bootstrap: with a handful of repeated runs a mean can be pulled by
one slow run and a bootstrap interval is too narrow (docs/statistics.md); ranks need no
distributional assumption and treat a run that never reached the target as the slowest one
(+inf) without inventing a time for it.

Two ways to get the p-value (two-sided):
- **exact**: the permutation distribution of the rank sum given the observed midranks, by
  dynamic programming over the pooled values. Conditional on ties, so it stays exact with ties
  (with no ties it is the classic Mann-Whitney table). Used while the pooled sample has at most
  `EXACT_MAX_N` values.
- **normal**: the normal approximation with the tie correction of the variance and a 0.5
  continuity correction (what scipy.stats.mannwhitneyu calls "asymptotic").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EXACT_MAX_N = 40  # pooled values; counts stay below 2**53 (C(40, 20) ~ 1.4e11), so exact


@dataclass(frozen=True)
class RankTest:
    """Result of a two-sided Mann-Whitney U test of sample `a` against sample `b`.

    `u_a` counts pairs (a_i, b_j) with a_i > b_j, ties counted 1/2 (scipy's statistic for its
    first sample). `prob_b_greater` = u_b / (n_a n_b): the chance that a value of `b` exceeds
    one of `a` (ties 1/2); 0.5 means no shift. `min_p` is the smallest p-value these sample
    sizes can give (exact method), so "not significant" can say when more runs are needed.
    """

    u_a: float
    u_b: float
    n_a: int
    n_b: int
    p_value: float
    method: str  # "exact" | "normal"
    ties: bool
    prob_b_greater: float
    min_p: float | None


def midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..N of `values`, tied values sharing the mean of their ranks (+inf allowed)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    mean_rank = np.cumsum(counts) - (counts - 1) / 2.0
    return mean_rank[inverse]


def _rank_sum_distribution(ranks: np.ndarray, n_a: int) -> tuple[np.ndarray, np.ndarray]:
    """(sums, counts): how many n_a-subsets of the pooled `ranks` give each rank sum.

    Ranks are midranks, so twice a rank is an integer; the DP runs over doubled sums.
    dp[k, s] = number of k-subsets of the values seen so far with doubled rank sum s.
    """
    doubled = np.rint(2 * ranks).astype(np.int64)
    total = int(doubled.sum())
    dp = np.zeros((n_a + 1, total + 1), dtype=np.float64)
    dp[0, 0] = 1.0
    for r in doubled:
        # taking this value: k -> k + 1, s -> s + r; read the old rows before writing
        dp[1:, r:] = dp[1:, r:] + dp[:-1, : total + 1 - r]
    counts = dp[n_a]
    sums = np.nonzero(counts)[0]
    return sums / 2.0, counts[sums]


def mann_whitney(a: Sequence[float], b: Sequence[float], method: str = "auto") -> RankTest:
    """Two-sided Mann-Whitney U test; `method` "auto" (exact up to EXACT_MAX_N pooled values,
    else normal), "exact" or "normal". Values may be +inf (a run that never reached)."""
    xa = np.asarray([float(v) for v in a], dtype=float)
    xb = np.asarray([float(v) for v in b], dtype=float)
    if xa.size == 0 or xb.size == 0:
        raise ValueError("the rank test needs at least one value in each sample")
    if np.isnan(xa).any() or np.isnan(xb).any():
        raise ValueError("the rank test cannot rank NaN")
    if method not in ("auto", "exact", "normal"):
        raise ValueError(f"method must be auto, exact or normal, got {method!r}")
    n_a, n_b = xa.size, xb.size
    n = n_a + n_b
    ranks = midranks(np.concatenate([xa, xb]))
    r_a = float(ranks[:n_a].sum())
    u_a = r_a - n_a * (n_a + 1) / 2.0
    u_b = n_a * n_b - u_a
    _, tie_counts = np.unique(ranks, return_counts=True)
    ties = bool((tie_counts > 1).any())
    mu = n_a * n_b / 2.0
    if method == "auto":
        method = "exact" if n <= EXACT_MAX_N else "normal"
    min_p = None
    if method == "exact":
        sums, counts = _rank_sum_distribution(ranks, n_a)
        u_values = sums - n_a * (n_a + 1) / 2.0
        total = counts.sum()
        # two-sided: twice the smaller tail, each tail including the observed U (scipy's
        # convention for its exact test and for permutation tests)
        cdf = np.cumsum(counts) / total
        sf = np.cumsum(counts[::-1])[::-1] / total
        tails = 2 * np.minimum(cdf, sf)
        at = np.abs(u_values - u_a) < 1e-9
        p = float(tails[at][0])
        min_p = float(min(1.0, tails.min()))
    else:
        t = tie_counts.astype(float)
        tie_term = float((t**3 - t).sum()) / (n * (n - 1)) if n > 1 else 0.0
        var = n_a * n_b / 12.0 * ((n + 1) - tie_term)
        if var <= 0:
            p = 1.0  # every value tied: no ordering at all
        else:
            z = (abs(u_a - mu) - 0.5) / math.sqrt(var)
            p = math.erfc(z / math.sqrt(2.0))  # 2 x the upper tail of N(0, 1) beyond z
    return RankTest(
        u_a=u_a,
        u_b=u_b,
        n_a=n_a,
        n_b=n_b,
        p_value=min(1.0, p),
        method=method,
        ties=ties,
        prob_b_greater=u_b / (n_a * n_b),
        min_p=min_p,
    )
