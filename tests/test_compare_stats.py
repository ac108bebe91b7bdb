"""The statistics behind `perfsuite compare`: Mann-Whitney U against scipy, the bootstrap
interval of a ratio of means, and the verdict on constructed groups of repeats."""

from __future__ import annotations

import numpy as np
import pytest

from perfsuite import stats
from perfsuite.analyzers.runs.ranktest import mann_whitney, midranks
from perfsuite.analyzers.runs.verdict import FASTER, NONE, SAME, SLOWER, decide


@pytest.fixture(scope="module")
def ss():
    """scipy.stats, the reference, imported by the first test here rather than at collection
    (every test worker collects this file; one runs it)."""
    import scipy.stats

    return scipy.stats


SAMPLES = [
    ([1.2, 3.4, 2.2], [4.1, 5.0, 3.9]),
    ([10.0, 11.5, 9.8, 10.7, 10.1], [10.9, 11.8, 12.2, 11.1, 10.05, 12.9, 11.7]),
    ([0.5, 0.7, 0.2, 0.9, 0.4, 0.8, 0.1, 0.3], [0.65, 0.15, 0.45, 0.85, 0.55, 0.35]),
    (list(np.linspace(1, 20, 12)), list(np.linspace(3, 25, 15))),
]
TIED = [
    ([1, 2, 2, 3, 5, 5, 7], [2, 3, 5, 6, 8, 8, 9, 9]),
    ([4, 4, 4, 1, 2], [4, 4, 5, 6, 6, 7]),
    ([1, 1, 2, 2, 3, 3], [2, 2, 3, 3, 4, 4]),
]


def test_midranks_share_tied_ranks():
    assert list(midranks(np.array([3.0, 1.0, 3.0, np.inf, 2.0]))) == [3.5, 1.0, 3.5, 5.0, 2.0]


@pytest.mark.parametrize(("a", "b"), SAMPLES)
def test_exact_without_ties_matches_scipy(ss, a, b):
    mine = mann_whitney(a, b, method="exact")
    ref = ss.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    assert mine.u_a == ref.statistic
    assert mine.u_a + mine.u_b == len(a) * len(b)
    assert mine.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert not mine.ties


@pytest.mark.parametrize(("a", "b"), SAMPLES + TIED)
def test_normal_with_tie_correction_matches_scipy(ss, a, b):
    mine = mann_whitney(a, b, method="normal")
    ref = ss.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
    assert mine.u_a == ref.statistic
    assert mine.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize(("a", "b"), TIED)
def test_exact_with_ties_matches_scipy_permutation_test(ss, a, b):
    """With ties the exact p-value is the permutation distribution of U given the midranks,
    which scipy computes by enumerating every split of the pooled sample."""
    mine = mann_whitney(a, b, method="exact")

    def u_stat(x, y, axis=-1):  # U of x: pairs x > y, ties 1/2 (vectorized over splits)
        x, y = np.moveaxis(x, axis, -1)[..., :, None], np.moveaxis(y, axis, -1)[..., None, :]
        return (x > y).sum(axis=(-1, -2)) + 0.5 * (x == y).sum(axis=(-1, -2))

    ref = ss.permutation_test(
        (a, b),
        u_stat,
        permutation_type="independent",
        n_resamples=np.inf,
        vectorized=True,
        alternative="two-sided",
    )
    assert mine.u_a == u_stat(np.asarray(a, float), np.asarray(b, float))
    assert mine.ties
    assert mine.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_auto_picks_exact_for_small_and_normal_for_large_samples():
    assert mann_whitney([1, 2, 3], [4, 5, 6]).method == "exact"
    assert mann_whitney(range(30), range(5, 35)).method == "normal"


def test_smallest_possible_p_is_reported():
    # 3 vs 3 runs: the most extreme split has probability 1/20 per side, so p >= 0.1
    t = mann_whitney([1, 2, 3], [4, 5, 6])
    assert t.p_value == pytest.approx(0.1) and t.min_p == pytest.approx(0.1)
    assert t.prob_b_greater == 1.0


def test_never_reached_ranks_slowest():
    t = mann_whitney([1.0, 2.0, 3.0, 4.0], [np.inf] * 4)
    assert t.p_value == pytest.approx(2 / 70)  # the one most extreme of C(8, 4) splits, x2
    assert t.prob_b_greater == 1.0


def test_bootstrap_ratio_ci_is_seeded_and_matches_independent_computation():
    a, b = [10.0, 10.4, 9.7, 10.1], [11.0, 10.6, 11.3, 10.9, 11.2]
    lo, hi = stats.bootstrap_ratio_ci(a, b, seed=3, resamples=4000)
    rng = np.random.default_rng(3)
    ma = np.asarray(a)[rng.integers(0, 4, size=(4000, 4))].mean(axis=1)
    mb = np.asarray(b)[rng.integers(0, 5, size=(4000, 5))].mean(axis=1)
    assert (lo, hi) == pytest.approx(tuple(np.quantile(mb / ma, [0.025, 0.975])), rel=1e-12)
    assert lo < np.mean(b) / np.mean(a) < hi
    assert stats.bootstrap_ratio_ci(a, b, seed=3, resamples=4000) == (lo, hi)
    assert stats.bootstrap_ratio_ci([1.0], b) is None


def _group(mean, noise, n, seed):
    return list(mean * (1 + noise * np.random.default_rng(seed).standard_normal(n)))


def test_identical_distributions_give_no_difference():
    a, b = _group(100, 0.02, 10, 1), _group(100, 0.02, 10, 2)
    v = decide("time_to_accuracy", "A", "B", a, b)
    assert v.verdict == SAME
    assert v.test.p_value >= 0.05
    assert v.ci_low < 1 < v.ci_high
    same = decide("time_to_accuracy", "A", "B", a, a)
    assert same.verdict == SAME and same.test.p_value == 1.0 and same.ratio == 1.0


def test_five_percent_shift_with_low_noise_is_detected_in_the_right_direction():
    a, b = _group(100, 0.01, 8, 3), _group(105, 0.01, 8, 4)
    slower = decide("time_to_accuracy", "A", "B", a, b)
    assert slower.verdict == SLOWER
    assert slower.ratio == pytest.approx(np.mean(b) / np.mean(a))
    assert 1.0 < slower.ci_low < 1.05 < slower.ci_high < 1.1
    assert slower.test.p_value < 0.01
    faster = decide("time_to_accuracy", "B", "A", b, a)
    assert faster.verdict == FASTER and faster.ci_high < 1.0


def test_effect_below_min_effect_is_no_difference():
    a, b = _group(100, 0.01, 8, 3), _group(105, 0.01, 8, 4)
    v = decide("time_to_accuracy", "A", "B", a, b, min_effect=0.08)
    assert v.verdict == SAME and "minimum effect" in v.reason
    assert decide("time_to_accuracy", "A", "B", a, b, min_effect=0.02).verdict == SLOWER


def test_three_runs_each_cannot_be_significant_and_says_so():
    v = decide("time_to_accuracy", "A", "B", [10.0, 10.1, 10.2], [20.0, 20.1, 20.2])
    assert v.verdict == SAME
    assert "add repeats" in v.reason and v.test.min_p == pytest.approx(0.1)


def test_runs_that_never_reach_count_as_slowest():
    v = decide("time_to_accuracy", "A", "B", [10.0, 10.1, 10.2, 9.9], [None] * 4)
    assert v.verdict == SLOWER and v.dnc_candidate == 4 and v.ratio is None
    both = decide("time_to_accuracy", "A", "B", [None, None], [None, None])
    assert both.verdict == NONE and both.test is None
    # a group whose runs reach as fast but one in four never does: not significant at n=4
    part = decide("time_to_accuracy", "A", "B", [10.0, 10.1, 10.2, 9.9], [10.0, 10.1, 10.2, None])
    assert part.verdict == SAME and part.dnc_candidate == 1


def test_bad_options_are_refused():
    with pytest.raises(ValueError):
        decide("t", "A", "B", [1.0, 2.0], [1.0, 2.0], alpha=1.5)
    with pytest.raises(ValueError):
        decide("t", "A", "B", [1.0, 2.0], [1.0, 2.0], min_effect=-0.1)


def test_median_ci_is_the_order_statistic_interval_with_binomial_coverage(ss):
    # n=10: (x_2, x_9) covers 1 - 2 * 11/1024 = 97.9%; (x_3, x_8) only 89.1%, below 95%
    assert stats.median_ci([float(v) for v in range(10, 0, -1)]) == (2.0, 9.0)
    # n=20 at 95%: k=6, coverage 1 - 2 P(Bin(20, 1/2) <= 5) = 95.9%, checked with scipy
    k = 6
    assert 1 - 2 * ss.binom.cdf(k - 1, 20, 0.5) >= 0.95 > 1 - 2 * ss.binom.cdf(k, 20, 0.5)
    assert stats.median_ci([float(v) for v in range(1, 21)]) == (6.0, 15.0)
    # one wild value does not move it: a slowed repeat on a shared machine
    assert stats.median_ci([1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.0, 1.01, 0.99, 50.0]) == (
        0.99,
        1.02,
    )
    assert stats.median_ci([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # too few for 95%
    assert stats.median_ci([1.0, 2.0, 3.0, 4.0, 5.0], confidence=0.9) == (1.0, 5.0)
