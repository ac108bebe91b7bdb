"""Stability statistics against hand computations, and `perfsuite stability` end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from perfsuite import stats
from perfsuite.analyzers.runs.stability import epoch_times, group_records, stability
from perfsuite.cli import main
from perfsuite.record import write_record
from perfsuite.record.tta import crossing_dict, first_crossing
from tests.conftest import settle

# ----------------------------------------------------------------------------- stats helpers
SAMPLE = [10.0, 12.0, 14.0, 16.0, 18.0]


def test_mean_std_cov_by_hand():
    assert stats.mean(SAMPLE) == 14.0
    # sum of squared deviations 16+4+0+4+16 = 40, n-1 = 4 -> var 10
    assert stats.sample_std(SAMPLE) == pytest.approx(math.sqrt(10.0), rel=1e-15)
    assert stats.cov(SAMPLE) == pytest.approx(math.sqrt(10.0) / 14.0, rel=1e-15)


def test_undefined_statistics_are_none():
    assert stats.mean([]) is None
    assert stats.sample_std([3.0]) is None
    assert stats.cov([3.0]) is None
    assert stats.cov([0.0, 0.0]) is None
    assert stats.bootstrap_ci([3.0]) is None
    with pytest.raises(ValueError):
        stats.mean([1.0, float("nan")])


def _independent_bootstrap(xs, resamples, seed, confidence):
    """Percentile bootstrap written differently: Generator.choice + explicit interpolation."""
    rng = np.random.default_rng(seed)
    samples = rng.choice(np.asarray(xs), size=(resamples, len(xs)), replace=True)
    means = np.sort(samples.sum(axis=1) / len(xs))

    def q(p):  # linear interpolation between order statistics (numpy's default "linear")
        pos = p * (len(means) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(means) - 1)
        return means[lo] + (pos - lo) * (means[hi] - means[lo])

    a = 1 - confidence
    return q(a / 2), q(1 - a / 2)


def test_bootstrap_ci_is_seeded_and_matches_independent_computation():
    lo, hi = stats.bootstrap_ci(SAMPLE, seed=7)
    assert lo < stats.mean(SAMPLE) < hi
    exp_lo, exp_hi = _independent_bootstrap(SAMPLE, 10_000, 7, 0.95)
    assert lo == pytest.approx(exp_lo, rel=1e-12)
    assert hi == pytest.approx(exp_hi, rel=1e-12)
    assert stats.bootstrap_ci(SAMPLE, seed=7) == (lo, hi)  # deterministic
    skewed = [9.7, 10.4, 11.9, 13.3, 18.2]  # off-lattice values, so seeds give different CIs
    assert stats.bootstrap_ci(skewed, seed=7) != stats.bootstrap_ci(skewed, seed=8)
    # The CI of a mean lies inside the sample's range and narrows with a lower confidence.
    lo90, hi90 = stats.bootstrap_ci(SAMPLE, confidence=0.90, seed=7)
    assert 10.0 <= lo <= lo90 < hi90 <= hi <= 18.0


def test_olympic_mean_five_runs_drops_fastest_and_slowest():
    om = stats.olympic_mean([100.0, 90.0, 110.0, 95.0, 130.0])
    assert om.value == pytest.approx((95.0 + 100.0 + 110.0) / 3)
    assert om.kept == (95.0, 100.0, 110.0)
    assert (om.n, om.failed, om.reason) == (5, 0, None)


def test_olympic_mean_failed_run_counts_as_slowest():
    # The failed run is the one dropped at the slow end, so 130 is kept this time.
    om = stats.olympic_mean([100.0, None, 130.0, 95.0, 90.0])
    assert om.kept == (95.0, 100.0, 130.0)
    assert om.value == pytest.approx(325.0 / 3)
    assert om.failed == 1
    assert stats.olympic_mean([100.0, math.inf, 130.0, 95.0, 90.0]) == om


def test_olympic_mean_undefined_cases():
    two = stats.olympic_mean([1.0, 2.0])
    assert two.value is None and "at least 3" in two.reason
    assert stats.olympic_mean([1.0, 2.0, 3.0]).value == 2.0
    two_failed = stats.olympic_mean([1.0, None, 2.0, None, 3.0])
    assert two_failed.value is None and "2 runs did not reach" in two_failed.reason


# ----------------------------------------------------------------------------- records
def _finish(rec, group=None, seed=None, epoch_times_s=None):
    """Fill the record's time_to_accuracy and status like the runner does."""
    task = rec["task"]
    c = first_crossing(rec["evaluations"], task["metric"], task["threshold"])
    rec["time_to_accuracy"] = crossing_dict(c)
    rec["status"] = "reached" if c.reached else "not_reached"
    rec["group"] = group
    rec["config"] = {"seed": seed}
    if epoch_times_s is not None:
        rec["throughput"] = {"epoch_times_s": epoch_times_s}
    return rec


# Three seeds of one configuration; epoch boundaries every 1 epoch.
CURVES = {
    # seed: [(epoch, train_time_s, top1)]
    0: [(1, 10.0, 0.80), (2, 20.0, 0.91), (3, 30.0, 0.93)],  # reaches 0.9 at epoch 2, 20 s
    1: [(1, 11.0, 0.85), (2, 22.0, 0.88), (3, 33.0, 0.92)],  # reaches at epoch 3, 33 s
    2: [(1, 12.0, 0.70), (2, 24.0, 0.89), (3, 36.0, 0.89)],  # never reaches 0.9
}


def _group(make_record):
    return [
        _finish(
            make_record(curve, run_id=f"s{seed}", hardware={"name": "cpu"}, model="mlp"),
            group={"id": "g1", "index": seed, "size": 3},
            seed=seed,
        )
        for seed, curve in CURVES.items()
    ]


def test_epoch_times_from_curve_and_throughput(make_record):
    rec = make_record([(0.5, 4.0, 0.1), (1.5, 16.0, 0.2), (1.5, 16.0, 0.3)])
    # intervals: 0->0.5 epochs in 4 s (8 s/epoch), 0.5->1.5 in 12 s; repeated point ignored
    assert epoch_times(rec) == ([8.0, 12.0], "curve")
    rec["throughput"] = {"epoch_times_s": [7, 9]}
    assert epoch_times(rec) == ([7.0, 9.0], "throughput")


def test_group_statistics(make_record):
    (g,) = stability(_group(make_record))
    assert g.key == "group:g1"
    assert (g.n_runs, g.n_reached) == (3, 2)
    assert g.reached_fraction == pytest.approx(2 / 3)
    assert [r.time_s for r in g.runs] == [20.0, 33.0, None]
    assert [r.epochs for r in g.runs] == [2.0, 3.0, None]
    tta = g.time_to_accuracy
    assert tta.mean == 26.5
    assert tta.std == pytest.approx(math.sqrt(2 * 6.5**2))
    assert tta.cov == pytest.approx(math.sqrt(2 * 6.5**2) / 26.5)
    assert g.epochs_to_threshold.mean == 2.5
    # time per epoch over all three runs (hardware variance): 10, 11, 12 s, constant in a run
    assert [r.epoch_time_cov for r in g.runs] == [0.0, 0.0, 0.0]
    assert g.time_per_epoch.mean == 11.0
    assert g.time_per_epoch.std == pytest.approx(1.0)
    assert g.time_per_epoch.cov == pytest.approx(1 / 11)
    # olympic: [20, 33, DNC] -> drop 20 and the failed run -> 33
    assert g.olympic_mean.value == 33.0
    text = "\n".join(g.warnings)
    assert "1 of 3 runs did not reach" in text
    assert "time to accuracy: CoV" in text and "epochs to threshold: CoV" in text
    assert "time per epoch: CoV 9.1% > 5.0%" in text  # hardware variance named


def test_threshold_override_recomputes_from_curve(make_record):
    (g,) = stability(_group(make_record), threshold=0.85)
    # seed0 reaches 0.85 at epoch 2 (20 s), seed1 at epoch 1 (11 s), seed2 at epoch 2 (24 s)
    assert [r.time_s for r in g.runs] == [20.0, 11.0, 24.0]
    assert g.threshold == 0.85 and g.n_reached == 3
    assert g.olympic_mean.value == 20.0


def test_no_warning_when_spread_is_small(make_record):
    recs = [
        _finish(make_record([(1, t, 0.95)], run_id=f"r{i}"), epoch_times_s=[t])
        for i, t in enumerate([100.0, 101.0, 102.0, 101.5, 100.5])
    ]
    (g,) = stability(recs)
    assert g.key.startswith("config:")
    # deviations -1, 0, 1, 0.5, -0.5: sum of squares 2.5, variance 2.5 / 4
    assert g.time_to_accuracy.cov == pytest.approx(math.sqrt(0.625) / 101.0)
    assert g.warnings == []


def test_grouping_without_group_id_uses_task_model_hardware(make_record):
    a = _finish(make_record([(1, 1.0, 0.95)], run_id="a", hardware={"name": "A100"}))
    b = _finish(make_record([(1, 2.0, 0.95)], run_id="b", hardware={"name": "V100"}))
    c = _finish(make_record([(1, 3.0, 0.95)], run_id="c", hardware={"name": "A100"}))
    groups = group_records([a, b, c])
    assert [[r["run_id"] for r in recs] for _, _, recs in groups] == [["a", "c"], ["b"]]


# ----------------------------------------------------------------------------- CLI
def test_cli_json_and_text(make_record, tmp_path, capsys):
    for rec in _group(make_record):
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["stability", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (g,) = out["groups"]
    assert g["n_reached"] == 2 and g["time_to_accuracy"]["mean"] == 26.5
    assert g["olympic_mean"]["value"] == 33.0
    assert main(["stability", str(tmp_path), "--max-cov", "0.5", "--max-ci", "0.5"]) == 0
    text = capsys.readouterr().out
    assert "2/3 reached" in text and "DNC" in text and "olympic mean" in text
    assert "DNR" not in text
    assert "CoV" in text and "warning: time per epoch" not in text


def test_cli_errors(tmp_path, capsys, make_record):
    assert main(["stability", str(tmp_path)]) == 2
    assert "no run.json" in capsys.readouterr().err
    # a threshold is checked against the records' metrics: top1 is a fraction
    write_record(tmp_path / "r1", make_record([(1, 10.0, 0.95)]))
    assert main(["stability", str(tmp_path), "--threshold", "93"]) == 2
    assert "--threshold 93" in capsys.readouterr().err


def test_cli_skips_inference_only_records(make_record, tmp_path, capsys):
    rec = make_record(run_id="inf", source={"kind": "dawnbench", "entry_type": "inference"})
    write_record(tmp_path / "inf", rec)
    assert main(["stability", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "skipped 1 inference-only record(s)" in err and "no training records" in err


def _lower_record(make_record, run_id, curve, threshold=2.7):
    rec = make_record(curve, metric="log_perplexity", threshold=threshold, run_id=run_id)
    rec["task"]["direction"] = "lower"
    return settle(rec)


def test_lower_is_better_threshold_above_one_and_display(make_record, tmp_path, capsys):
    from perfsuite.analyzers.runs.stability import (
        is_inference_only,
        threshold_problem,
        training_records,
    )

    recs = [
        _lower_record(make_record, "p1", [(1, 10.0, 3.5), (2, 20.0, 2.6)]),
        _lower_record(make_record, "p2", [(1, 12.0, 2.9), (2, 24.0, 2.65)]),
    ]
    assert threshold_problem(2.7, recs) is None  # log perplexity is not a fraction
    problem = threshold_problem(95, [make_record()])
    assert problem.startswith("top1 must be a fraction in [0, 1]: 95 ") and "0.95" in problem
    assert threshold_problem(float("nan"), recs) == "must be a finite number >= 0"
    with pytest.raises(ValueError, match="top1 must be a fraction"):
        stability([make_record([(1, 1.0, 0.95)])], threshold=93)
    (g,) = stability(recs, threshold=2.8)  # recomputed: first value <= 2.8
    assert g.direction == "lower"
    assert [r.time_s for r in g.runs] == [20.0, 24.0]
    for rec in recs:
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["stability", str(tmp_path), "--threshold", "3.0"]) == 0
    out = capsys.readouterr().out
    assert "log_perplexity <= 3.0 (2/2 reached" in out and ">=" not in out.splitlines()[0]
    inf = make_record(run_id="i", source={"kind": "dawnbench", "entry_type": "inference"})
    assert is_inference_only(inf) and not is_inference_only(recs[0])
    assert training_records([inf, recs[0]]) == ([recs[0]], [inf])


def test_group_page_shows_the_spread_of_repeats(make_record):
    """A multi-run page of repeats shows CoV, CI and the fraction reaching."""
    import json
    import re

    from perfsuite.report.build import report_html

    text = report_html(_group(make_record))
    ids = re.findall(r'<section id="([^"]+)">', text)
    assert "stability" in ids and ids.index("stability") < ids.index("summary")
    body = text[text.index('id="stability"') : text.index('id="summary"')]
    assert "2/3 reached, 67%" in body
    # CoV of [20, 33] is 9.19/26.5 = 34.7%; a bug in the rows would change it
    assert f"{math.sqrt(2 * 6.5**2) / 26.5:.1%}" in body
    assert re.search(r"olympic mean \([^)]*\): 33\.00 s", body)
    assert "1 of 3 runs did not reach the threshold" in body
    figs = dict(re.findall(r'psDraw\("([^"]+)",(.*?)\);</script>', text))
    fig = json.loads(figs["fig-stability"])
    dots, mean = fig["data"][0], fig["data"][1]
    assert sorted(dots["x"]) == [20.0, 33.0]  # only the runs that reached
    assert mean["x"] == [26.5] and mean["error_x"]["array"][0] > 0


def test_single_runs_of_different_groups_get_no_stability_section(make_record):
    from perfsuite.report.build import report_html

    recs = _group(make_record)
    for i, r in enumerate(recs):
        r["group"] = {"id": f"g{i}", "index": 0, "size": 1}
    assert 'id="stability"' not in report_html(recs)


def test_statistics_of_huge_finite_times_do_not_overflow():
    """epoch_times_s = [0, 1.9e154] (a `make fuzz` case): squares must not overflow in fsum."""
    from perfsuite import stats

    big = 1.8961503816218355e154
    assert stats.mean([0.0, big]) == big / 2
    assert stats.sample_std([0.0, big]) == pytest.approx(big / math.sqrt(2), rel=1e-15)
    assert stats.cov([0.0, big]) == pytest.approx(math.sqrt(2), rel=1e-15)
    assert stats.mean([1.7e308, 1.7e308]) == 1.7e308
    assert stats.sample_std([1.7e308, -1.7e308]) is None  # beyond the float range
    assert stats.cov([1.7e308, 1.6e308]) == pytest.approx(0.1e308 / math.sqrt(2) / 1.65e308)
    lo, hi = stats.bootstrap_ci([1.7e308, 1.6e308, 1.5e308])
    assert 1.5e308 <= lo <= hi <= 1.7e308
    assert stats.olympic_mean([1.7e308] * 4).value == 1.7e308
    # ordinary inputs are unchanged by the scaling (a power of two divides exactly)
    assert stats.mean([20.0, 33.0]) == 26.5


def test_runs_that_did_not_reach_are_dnc_and_diverged_ones_say_so(make_record, tmp_path, capsys):
    """One word for "finished without reaching the target" in every command: DAWNBench's DNC;
    a run ended by a NaN loss is a DNC too, named as diverged."""
    from perfsuite.views.stability_rows import outcome_rows

    recs = _group(make_record)
    recs.append(
        _finish(
            make_record(CURVES[2][:1], run_id="s3", hardware={"name": "cpu"}, model="mlp"),
            group={"id": "g1", "index": 3, "size": 4},
            seed=3,
        )
    )
    recs[3]["status"], recs[3]["error"] = "diverged", "did not converge: loss is nan"
    (g,) = stability(recs)
    assert [row[2] for row in outcome_rows(g)][2:] == ["DNC", "DNC (diverged)"]
    dnc = next(w for w in g.warnings if w.startswith("2 of 4 runs did not reach"))
    assert "(DNC; 1 diverged)" in dnc
    for rec in recs:
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["stability", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "DNC (diverged)" in text and "DNR" not in text
