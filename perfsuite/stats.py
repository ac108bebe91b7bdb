"""Small, shared statistics helpers for repeated-run analysis.

One implementation of each summary statistic so that `stability`, `thresholds`, the MLPerf
importer and the leaderboard agree on definitions (see docs/statistics.md). Inputs are plain
sequences of floats; results are floats or None when a statistic is undefined for the input
(e.g. a sample standard deviation of one value), never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0


def _finite(values: Sequence[float]) -> list[float]:
    out = [float(v) for v in values]
    for v in out:
        if not math.isfinite(v):
            raise ValueError(f"statistics need finite values, got {v!r}")
    return out


def _scale(xs: Sequence[float]) -> float:
    """A power of two at or above the largest magnitude (1 for small values): sums of values
    divided by it cannot overflow, where a plain sum of finite times near 1e308 (or squares of
    1e154) does (found by fuzzing). A power of two keeps the division exact, so ordinary inputs
    give bit-identical results."""
    top = max((abs(x) for x in xs), default=0.0)
    return math.ldexp(1.0, math.frexp(top)[1] - 1) if top > 1.0 else 1.0  # x/s in (-2, 2)


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for an empty sample."""
    xs = _finite(values)
    if not xs:
        return None
    s = _scale(xs)
    return s * (math.fsum(x / s for x in xs) / len(xs))  # |mean| <= s: always finite


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), linear between order statistics (numpy's default
    rule, written out so every caller agrees); None for an empty sample."""
    xs = sorted(_finite(values))
    if not xs:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q!r}")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _scaled_std(xs: list[float]) -> tuple[float, float, float]:
    """(scale, mean / scale, sample std / scale): the moments on values in (-2, 2)."""
    s = _scale(xs)
    ys = [x / s for x in xs]
    m = math.fsum(ys) / len(ys)
    return s, m, math.sqrt(math.fsum((y - m) ** 2 for y in ys) / (len(ys) - 1))


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n - 1 denominator, Bessel); None for fewer than 2 values,
    or when it exceeds the float range (a spread of times near 1e308 s)."""
    xs = _finite(values)
    if len(xs) < 2:
        return None
    s, _m, sd = _scaled_std(xs)
    return _finite_or_none(s * sd)


def cov(values: Sequence[float]) -> float | None:
    """Coefficient of variation = sample std / mean; None when std is undefined or mean is 0.
    Computed on the scaled values, so it is defined even where the std itself overflows."""
    xs = _finite(values)
    if len(xs) < 2:
        return None
    _s, m, sd = _scaled_std(xs)
    if m == 0:
        return None
    return _finite_or_none(sd / abs(m))


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _resampled_means(xs: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `resamples` samples of size n drawn with replacement from `xs`."""
    idx = rng.integers(0, xs.size, size=(resamples, xs.size))
    return xs[idx].mean(axis=1)


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(values, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval of the mean, deterministic for a given seed.

    Draws `resamples` samples of size n with replacement (numpy PCG64 seeded with `seed`),
    takes each one's mean, and returns the (1-c)/2 and (1+c)/2 quantiles of those means
    (numpy's default linear interpolation). None for fewer than 2 values: one run says nothing
    about spread.
    """
    _check_confidence(confidence)
    raw = _finite(values)
    if len(raw) < 2:
        return None
    scale = _scale(raw)  # resample means of scaled values cannot overflow
    xs = np.asarray(raw, dtype=float) / scale
    rng = np.random.default_rng(seed)
    lo, hi = _percentiles(_resampled_means(xs, resamples, rng), confidence)
    return lo * scale, hi * scale


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median: order statistics (x_(k), x_(n+1-k))
    with the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least `confidence`.

    Why: on a shared machine a few repeats are slowed many times over; a mean and its bootstrap
    follow those outliers, the median does not. None when n is too small for the confidence
    (fewer than 6 values at 95%)."""
    _check_confidence(confidence)
    xs = sorted(_finite(values))
    n = len(xs)
    best = None
    for k in range(1, n // 2 + 1):
        below = sum(math.comb(n, i) for i in range(k)) / 2.0**n  # P(Binomial(n, 1/2) < k)
        if 1.0 - 2.0 * below >= confidence:
            best = k
    return None if best is None else (xs[best - 1], xs[n - best])


def bootstrap_ratio_ci(
    baseline: Sequence[float],
    candidate: Sequence[float],
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of mean(candidate) / mean(baseline).

    The two groups are independent runs, so each is resampled on its own (same seeded
    generator: the baseline's resamples first, then the candidate's) and the ratio of each
    pair of resample means is taken. None when a group has fewer than 2 values or a resample
    mean of the baseline can be 0.
    """
    _check_confidence(confidence)
    xa = np.asarray(_finite(baseline), dtype=float)
    xb = np.asarray(_finite(candidate), dtype=float)
    if xa.size < 2 or xb.size < 2 or (xa <= 0).any():
        return None
    sa, sb = _scale(list(xa)), _scale(list(xb))  # scaled: resample means cannot overflow
    rng = np.random.default_rng(seed)
    means_a = _resampled_means(xa / sa, resamples, rng)
    means_b = _resampled_means(xb / sb, resamples, rng)
    lo, hi = _percentiles(means_b / means_a, confidence)
    return lo * (sb / sa), hi * (sb / sa)


@dataclass(frozen=True)
class OlympicMean:
    """MLPerf-style olympic mean and why it is (un)defined.

    `value` is None when undefined; `reason` then says why. `kept` are the values averaged;
    `dropped` is how many runs were dropped at each end (the rule applied: 1, 4 for unet3d).
    """

    value: float | None
    n: int
    failed: int
    kept: tuple[float, ...]
    reason: str | None = None
    dropped: int = 1


def olympic_mean(values: Sequence[float | None], dropped: int = 1) -> OlympicMean:
    """Drop the `dropped` fastest and slowest runs, average the rest (MLPerf Training scoring:
    1 at each end, 4 for unet3d, as mlperf-logging's result summarizer does).

    A run that did not reach the target is passed as None (or +inf) and counts as the slowest,
    so it is among the dropped. Rules (docs/statistics.md):
    - fewer than 2 * dropped + 1 runs: undefined (nothing meaningful left to average);
    - more than `dropped` failed runs: undefined (MLPerf: the result is invalid), since a failed
      run would remain among the averaged ones.
    """
    dropped = max(int(dropped), 1)
    times: list[float] = []
    failed = 0
    for v in values:
        if v is None or (isinstance(v, float) and math.isinf(v) and v > 0):
            failed += 1
        else:
            times.extend(_finite([v]))
    n = len(times) + failed
    if n < 2 * dropped + 1:
        reason = f"needs at least {2 * dropped + 1} runs, got {n}"
        return OlympicMean(None, n, failed, (), reason, dropped)
    if failed > dropped:
        reason = f"{failed} runs did not reach the target; at most {dropped} may be dropped"
        return OlympicMean(None, n, failed, (), reason, dropped)
    # The slowest are the failed runs, as many as there are; the rest are the largest times.
    kept = sorted(times)[dropped : len(times) - (dropped - failed)]
    return OlympicMean(mean(kept), n, failed, tuple(kept), None, dropped)


def competition_ranks(items: Sequence[tuple[str, float]]) -> list[tuple[str, float, int]]:
    """Rank (name, value) pairs, smallest value first; equal values share a rank (1, 1, 3).

    Ties are listed by name so that the order never depends on input order.
    """
    ordered = sorted(items, key=lambda i: (i[1], i[0]))
    out: list[tuple[str, float, int]] = []
    for pos, (name, value) in enumerate(ordered):
        rank = out[-1][2] if out and out[-1][1] == value else pos + 1
        out.append((name, value, rank))
    return out


# Intervals over many values (per-image correctness of 10,000 test images): the percentile
# bootstrap of `bootstrap_ci` (same confidence, resample count and seed conventions), drawn
# differently. `bootstrap_ci` materializes a resamples x n index matrix, 800 MB for 10,000
# values; resampling n values with replacement only changes how often each distinct value is
# drawn, and those counts are exactly multinomial(n, observed frequencies), so a resample costs
# O(distinct values), not O(n). Values with many distinct levels fall back to index resampling
# in chunks.
_MULTINOMIAL_MAX_LEVELS = 256
_CHUNK = 256


def _multinomial_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """`resamples` bootstrap means of `values` (resampling n with replacement)."""
    levels, counts = np.unique(values, return_counts=True)
    n = values.size
    if levels.size <= _MULTINOMIAL_MAX_LEVELS:
        draws = rng.multinomial(n, counts / n, size=resamples)
        return draws @ levels / n
    out = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        k = min(_CHUNK, resamples - start)
        out[start : start + k] = values[rng.integers(0, n, size=(k, n))].mean(axis=1)
    return out


def _finite_array(values: Sequence[float], what: str) -> np.ndarray:
    xs = np.asarray(values, dtype=float).ravel()
    if xs.size == 0:
        raise ValueError(f"{what}: no values")
    if not np.isfinite(xs).all():
        raise ValueError(f"{what}: statistics need finite values")
    return xs


def mean_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (e.g. of per-image 0/1 correctness: an
    accuracy); None for fewer than 2 values."""
    xs = _finite_array(values, "mean_ci")
    if xs.size < 2:
        return None
    return _percentiles(_multinomial_means(xs, resamples, np.random.default_rng(seed)), confidence)


def difference_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    paired: bool,
    confidence: float = 0.95,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float] | None:
    """Interval of mean(a) - mean(b). Paired (the same images, e.g. two probes on one test
    set): resample the per-image differences. Unpaired (two test sets): resample each set on
    its own and difference the means. None when either side has fewer than 2 values."""
    xa, xb = _finite_array(a, "difference_ci a"), _finite_array(b, "difference_ci b")
    if xa.size < 2 or xb.size < 2:
        return None
    rng = np.random.default_rng(seed)
    if paired:
        if xa.size != xb.size:
            raise ValueError(f"paired samples differ in size: {xa.size} vs {xb.size}")
        return _percentiles(_multinomial_means(xa - xb, resamples, rng), confidence)
    draws = _multinomial_means(xa, resamples, rng) - _multinomial_means(xb, resamples, rng)
    return _percentiles(draws, confidence)
