"""perfsuite's change points against Apache Otava 0.8's own, series by series
(tests/fixtures/otava: made by Otava's `compute_change_points` in a scratch environment)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perfsuite.analyzers.history.changepoints import change_points, first_pass_pvalue
from perfsuite.analyzers.history.ttest import pooled_ttest_p

FIXTURES = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "otava" / "otava_cases.json").read_text()
)
CASES = FIXTURES["cases"]
# p-values come from perfsuite's own incomplete beta, Otava's from scipy's stdtr: they agree
# to a relative 1e-9 (measured: 1.5e-13 over every fixture point)
P_RTOL = 1e-9


def test_fixtures_are_otava_08() -> None:
    assert FIXTURES["otava_version"] == "0.8.0"
    assert len(CASES) == 110
    assert sum(len(c["change_points"]) for c in CASES) > 400
    assert sum(1 for c in CASES if not c["change_points"]) > 5


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c['name']}-w{c['window']}-p{c['max_pvalue']}" for c in CASES]
)
def test_change_points_agree_with_otava(case: dict) -> None:
    got = change_points(case["series"], case["window"], case["max_pvalue"], case["min_magnitude"])
    expected = case["change_points"]
    assert [p.index for p in got] == [p["index"] for p in expected]
    for ours, theirs in zip(got, expected, strict=True):
        assert ours.pvalue == pytest.approx(theirs["pvalue"], rel=P_RTOL, abs=1e-300)
        for field in ("mean_before", "mean_after", "std_before", "std_after"):
            assert getattr(ours, field) == pytest.approx(theirs[field], rel=1e-12, abs=1e-12)


def test_first_pass_pvalue_is_otavas_rule() -> None:
    assert first_pass_pvalue(0.001) == pytest.approx(0.01)
    assert first_pass_pvalue(0.1) == pytest.approx(0.2)
    assert first_pass_pvalue(0.6) == 0.6


def test_ttest_known_values() -> None:
    # means 2 and 0, spread 1, 6 points each: t = 2 / sqrt(1/3) on 10 degrees of freedom;
    # scipy 1.16.3's ttest_ind_from_stats gives p = 0.006080847927088538
    assert 2.0 / math.sqrt(1 / 6 + 1 / 6) == pytest.approx(3.464101615137755)
    p = pooled_ttest_p(2.0, 1.0, 6, 0.0, 1.0, 6)
    assert p == pytest.approx(0.006080847927088538, rel=1e-12)
    assert pooled_ttest_p(1.0, 0.0, 3, 1.0, 0.0, 3) != pooled_ttest_p(1.0, 0.0, 3, 1.0, 0.0, 3)
    assert pooled_ttest_p(1.0, 0.0, 3, 2.0, 0.0, 3) == 0.0


def test_bad_series_refused() -> None:
    with pytest.raises(ValueError, match="finite"):
        change_points([1.0, float("nan"), 2.0])
    with pytest.raises(ValueError, match="window"):
        change_points([1.0, 2.0, 3.0], window=1)
