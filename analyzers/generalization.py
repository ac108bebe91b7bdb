"""Generalization results of the threshold model: bootstrap intervals and record summaries.

Pure (numpy only). The intervals are the percentile bootstrap of `perfsuite.stats.bootstrap_ci`
(same confidence, resample count and seed conventions), drawn differently: `stats.bootstrap_ci`
materializes a resamples x n index matrix, 800 MB for 10,000 test images. Resampling n values
with replacement only changes how often each distinct value is drawn, and those counts are
exactly multinomial(n, observed frequencies); per-image correctness has two distinct values,
so each resample costs O(distinct values), not O(n). Values with many distinct levels fall
back to index resampling in chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from perfsuite.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

_MULTINOMIAL_MAX_LEVELS = 256
_CHUNK = 256


def _resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
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


def _interval(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def _array(values: Sequence[float], what: str) -> np.ndarray:
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
    xs = _array(values, "mean_ci")
    if xs.size < 2:
        return None
    return _interval(_resampled_means(xs, resamples, np.random.default_rng(seed)), confidence)


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
    xa, xb = _array(a, "difference_ci a"), _array(b, "difference_ci b")
    if xa.size < 2 or xb.size < 2:
        return None
    rng = np.random.default_rng(seed)
    if paired:
        if xa.size != xb.size:
            raise ValueError(f"paired samples differ in size: {xa.size} vs {xb.size}")
        return _interval(_resampled_means(xa - xb, resamples, rng), confidence)
    draws = _resampled_means(xa, resamples, rng) - _resampled_means(xb, resamples, rng)
    return _interval(draws, confidence)


def headline(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """One line per record for tables (report, leaderboard): own test top-1 of the threshold
    model, the first shifted set's top-1 and drop, mean corruption accuracy, first probe's
    top-1 (and its difference to a reference); None without a generalization section."""
    gen = rec.get("generalization") or {}
    if not gen:
        return None
    out: dict[str, Any] = {
        "own_top1": None,
        "shift_top1": None,
        "shift_drop": None,
        "corruption_mean": None,
        "clean_top1": None,
        "probe_top1": None,
        "probe_difference": None,
    }
    shifts = gen.get("shift") or []
    if shifts:
        s = shifts[0]
        out["own_top1"] = s["own_test"]["top1"]
        out["shift_top1"] = s["shifted"]["top1"]
        out["shift_drop"] = s["drop"]["top1"]
    corr = gen.get("corruptions")
    if corr:
        out["corruption_mean"] = corr["mean"]
        out["clean_top1"] = corr["clean"]["top1"]
    probes = gen.get("probe") or []
    if probes:
        out["probe_top1"] = probes[0]["test"]["top1"]
        ref = probes[0].get("reference")
        out["probe_difference"] = ref["difference"] if ref else None
    if out["own_top1"] is None:
        ck = rec.get("checkpoint") or {}
        out["own_top1"] = ck.get("value")
    return out


def family_means(accuracy: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Mean accuracy over the severities of each corruption family."""
    return {name: float(np.mean(accs)) for name, accs in accuracy.items() if len(accs)}
