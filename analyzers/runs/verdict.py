"""Is a group of repeated runs faster, slower, or not distinguishable from a baseline group?

Why two tests: a CI pipeline must fail on a real regression and not on noise. The rank test
(Mann-Whitney U, `perfsuite.analyzers.runs.ranktest`) decides whether the two groups differ at all,
without assuming a distribution and with runs that never reached the target ranked slowest; the
bootstrap interval of the ratio of means (`perfsuite.stats.bootstrap_ratio_ci`) says by how much. A
difference is called only when both agree, and when its size reaches `min_effect`. Rules, with
examples: docs/compare.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perfsuite import stats
from perfsuite.analyzers.runs.ranktest import RankTest, mann_whitney

FASTER = "faster"
SLOWER = "slower"
SAME = "no significant difference"
NONE = "no verdict"
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_EFFECT = 0.0


@dataclass(frozen=True)
class Verdict:
    """The candidate group against the baseline group on one quantity (lower is better).

    `ratio` = mean(candidate) / mean(baseline) over runs with a value (reached runs for time to
    accuracy); above 1 the candidate takes longer. `ci_low`/`ci_high`: its percentile bootstrap
    interval at `confidence`, from `resamples` resamples seeded with `seed`. `dnc_*`: runs
    that did not reach the target (no time; ranked slowest in the rank test).
    """

    quantity: str
    baseline: str
    candidate: str
    verdict: str  # faster | slower | no significant difference | no verdict
    reason: str
    n_baseline: int
    n_candidate: int
    dnc_baseline: int
    dnc_candidate: int
    mean_baseline: float | None
    mean_candidate: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    resamples: int
    seed: int
    test: RankTest | None
    alpha: float
    min_effect: float


def _mean(xs: Sequence[float]) -> float | None:
    return stats.mean(xs) if xs else None


def decide(
    quantity: str,
    baseline_label: str,
    candidate_label: str,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
) -> Verdict:
    """The verdict for one quantity; None in a sample is a run without a value (did not
    reach the target), ranked slowest. Lower values are better (times).

    faster/slower when (1) the rank test gives p < alpha, (2) the ratio's 1 - alpha interval
    lies on the same side of 1, and (3) the ratio differs from 1 by at least `min_effect`.
    (2) needs 2 values per group; (2) and (3) are skipped when the groups reach the target in
    different fractions of their runs: the difference is then in reaching at all. Otherwise
    "no significant difference", with the reason; "no verdict" when a group is empty or no
    run of either group has a value.
    """
    _check_levels(alpha, min_effect)
    a = [float(v) for v in baseline if v is not None]
    b = [float(v) for v in candidate if v is not None]
    confidence = 1.0 - alpha
    common = _summary(quantity, baseline_label, candidate_label, baseline, candidate)
    common.update(confidence=confidence, resamples=resamples, seed=seed)
    common.update(alpha=alpha, min_effect=min_effect)
    ratio = common["ratio"]
    ci = stats.bootstrap_ratio_ci(a, b, confidence, resamples, seed)
    common.update(ci_low=ci[0] if ci else None, ci_high=ci[1] if ci else None)
    if not baseline or not candidate:
        return Verdict(verdict=NONE, reason="a group has no runs", test=None, **common)
    if not a and not b:
        return Verdict(
            verdict=NONE, reason="no run of either group has a value", test=None, **common
        )
    inf = math.inf
    test = mann_whitney(
        [inf if v is None else float(v) for v in baseline],
        [inf if v is None else float(v) for v in candidate],
    )
    common["test"] = test
    direction = SLOWER if test.prob_b_greater > 0.5 else FASTER
    p = f"p = {test.p_value:.3g}"
    # (1) the rank test
    if test.p_value >= alpha:
        return Verdict(verdict=SAME, reason=_not_significant(test, p, alpha), **common)
    # Unequal fractions reaching the target: the difference is (partly) in reaching at all,
    # which the ratio over reached runs cannot see; the rank test alone decides then.
    dnc_differs = common["dnc_baseline"] / len(baseline) != common["dnc_candidate"] / len(candidate)
    # (2) the interval of the ratio on the rank test's side of 1
    if ci is not None and not dnc_differs:
        ci_side = SLOWER if ci[0] > 1 else FASTER if ci[1] < 1 else None
        if ci_side != direction:
            return Verdict(
                verdict=SAME,
                reason=(
                    f"rank test {p} < {alpha:g}, but the {confidence:.0%} interval of the "
                    f"ratio [{ci[0]:.3f}, {ci[1]:.3f}] does not exclude 1 on the same side"
                ),
                **common,
            )
    # (3) the size of the difference
    if ratio is not None and not dnc_differs and abs(ratio - 1.0) < min_effect:
        return Verdict(
            verdict=SAME,
            reason=(
                f"significant ({p}) but the ratio {ratio:.3f} is within the minimum effect "
                f"{min_effect:.1%} of 1"
            ),
            **common,
        )
    return Verdict(verdict=direction, reason=_called_reason(p, ci, common), **common)


def _summary(
    quantity: str,
    baseline_label: str,
    candidate_label: str,
    baseline: Sequence[float | None],
    candidate: Sequence[float | None],
) -> dict[str, Any]:
    """The Verdict fields that describe the two groups: sizes, runs without a value (DNC),
    means over the runs with one and the ratio of the means (None when a group has none)."""
    a = [float(v) for v in baseline if v is not None]
    b = [float(v) for v in candidate if v is not None]
    mean_a, mean_b = _mean(a), _mean(b)
    return {
        "quantity": quantity,
        "baseline": baseline_label,
        "candidate": candidate_label,
        "n_baseline": len(baseline),
        "n_candidate": len(candidate),
        "dnc_baseline": len(baseline) - len(a),
        "dnc_candidate": len(candidate) - len(b),
        "mean_baseline": mean_a,
        "mean_candidate": mean_b,
        "ratio": mean_b / mean_a if a and b else None,
    }


def _called_reason(p: str, ci: tuple[float, float] | None, common: dict[str, Any]) -> str:
    """The reason of a faster/slower verdict: the rank test, the ratio and its interval, and
    the runs of each group that did not reach (ranked slowest)."""
    ratio = common["ratio"]
    size = f"ratio {ratio:.3f}" if ratio is not None else "ratio undefined"
    dnc = ""
    if common["dnc_baseline"] or common["dnc_candidate"]:
        dnc = (
            f"; did not reach: {common['dnc_baseline']}/{common['n_baseline']} baseline, "
            f"{common['dnc_candidate']}/{common['n_candidate']} candidate (ranked slowest)"
        )
    ci_txt = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return f"rank test {p}, {size}{ci_txt}{dnc}"


def _check_levels(alpha: float, min_effect: float) -> None:
    """ValueError unless alpha is in (0, 1) and min_effect a finite fraction >= 0."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not (math.isfinite(min_effect) and min_effect >= 0):
        raise ValueError(f"min_effect must be a finite fraction >= 0, got {min_effect}")


def _not_significant(test: RankTest, p: str, alpha: float) -> str:
    """The reason of a rank test with p >= alpha; when no outcome of groups this small could
    reach p < alpha, it says so and asks for repeats."""
    why = f"rank test {p} >= {alpha:g}"
    if test.min_p is not None and test.min_p >= alpha:
        why += (
            f"; with {test.n_a} and {test.n_b} runs no outcome can reach p < {alpha:g} "
            f"(smallest possible p = {test.min_p:.3g}): add repeats"
        )
    return why
