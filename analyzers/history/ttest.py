"""Student's two-sample t-test (pooled variance, two-sided) in numpy-free Python.

The p-value is the regularized incomplete beta function I_x(df/2, 1/2) at x = df / (df + t^2),
evaluated by its continued fraction (modified Lentz), so the analysis needs no scipy at run
time. Agreement with scipy.stats.ttest_ind_from_stats is checked against Otava's fixtures
(tests/fixtures/otava/) to a relative 1e-9.
"""

from __future__ import annotations

import math

_TINY = 1e-300
_EPS = 1e-16
_MAX_TERMS = 10_000


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (valid and fast for x < (a + 1) / (a + b + 2))."""
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, _MAX_TERMS):
        two_m = 2 * m
        even = m * (b - m) * x / ((a + two_m - 1.0) * (a + two_m))
        d = 1.0 + even * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + even / c
        c = c if abs(c) > _TINY else _TINY
        result *= d * c
        odd = -(a + m) * (a + b + m) * x / ((a + two_m) * (a + two_m + 1.0))
        d = 1.0 + odd * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + odd / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        result *= step
        if abs(step - 1.0) < _EPS:
            break
    return result


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's T with `df` degrees of freedom; NaN for a NaN t."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0
    return regularized_beta(df / 2.0, 0.5, df / (df + t * t))


def pooled_ttest_p(
    mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float, n_b: int
) -> float:
    """Two-sided p-value of the equal-variance t-test from summary statistics (`std_*` are the
    standard deviations as given; squared they are the variances pooled, as
    scipy.stats.ttest_ind_from_stats does). NaN where both spreads are 0 and the means equal."""
    df = n_a + n_b - 2
    pooled = ((n_a - 1) * std_a * std_a + (n_b - 1) * std_b * std_b) / df
    scale = math.sqrt(pooled * (1.0 / n_a + 1.0 / n_b))
    diff = mean_a - mean_b
    if scale == 0.0:
        t = math.nan if diff == 0.0 else math.copysign(math.inf, diff)
    else:
        t = diff / scale
    return t_two_sided_p(t, df)
