"""The study analysis arithmetic on records built in memory (no training)."""

from __future__ import annotations

import pytest

from perfsuite.analyzers.runs.study import analyze_study, run_point


@pytest.fixture
def run(make_record):
    """A run with epochs of `epoch_s` seconds each, `per_epoch` samples, metric per epoch."""

    def _run(seed, metrics, epoch_s, status=None, per_epoch=1000, threshold=0.9):
        curve = [(e + 1, epoch_s[: e + 1], m) for e, m in enumerate(metrics)]
        rec = make_record(
            [(e, sum(ts), m) for e, ts, m in curve], threshold=threshold, run_id=f"r{seed}"
        )
        for i, ev in enumerate(rec["evaluations"]):
            ev["samples"] = per_epoch * (i + 1)
        reached = [ev for ev in rec["evaluations"] if ev["metrics"]["top1"] >= threshold]
        first = reached[0] if reached else None
        rec["time_to_accuracy"] = {
            "metric": "top1",
            "threshold": threshold,
            "reached": bool(first),
            "time_s": first["train_time_s"] if first else None,
            "epoch": first["epoch"] if first else None,
            "evaluation_index": rec["evaluations"].index(first) if first else None,
            "provenance": "measured",
        }
        rec["status"] = status or ("reached" if first else "not_reached")
        rec["config"] = {"seed": seed}
        rec["throughput"] = {"epoch_times_s": list(epoch_s)}
        return rec

    return _run


def _manifest(*names, repeats=2, kind="factor"):
    return {
        "study_id": "s",
        "spec": {"kind": kind, "workload": "toy", "repeats": repeats},
        "configurations": [
            {"index": i, "name": n, "description": n, "switches": [], "batch_size": None}
            for i, n in enumerate(names)
        ],
    }


def test_speedups_side_by_side_and_statistics(run):
    records = {
        # reference: 3 epochs of 2 s (first epoch 3 s), reaches at epoch 3 -> TTA 7 s
        "baseline": [
            run(0, [0.5, 0.8, 0.91], [3.0, 2.0, 2.0]),
            run(1, [0.5, 0.8, 0.93], [3.0, 2.0, 2.0]),
        ],
        # twice the throughput (1 s epochs) but 5 epochs: TTA 6 s -> only 7/6 faster
        "+fast": [
            run(0, [0.3, 0.5, 0.7, 0.85, 0.9], [2.0, 1.0, 1.0, 1.0, 1.0]),
            run(1, [0.3, 0.5, 0.7, 0.85, 0.92], [2.0, 1.0, 1.0, 1.0, 1.0]),
        ],
    }
    res = analyze_study(_manifest("baseline", "+fast"), records)
    base, fast = res.configs
    assert base.time_to_accuracy.mean == pytest.approx(7.0)
    assert base.epoch_time.mean == pytest.approx(2.0)  # first epoch left out
    assert base.samples_per_s.mean == pytest.approx(500.0)  # 1000 samples / 2 s
    assert fast.epochs_to_threshold.mean == pytest.approx(5.0)
    assert fast.throughput_speedup == pytest.approx(2.0)
    assert fast.tta_speedup == pytest.approx(7.0 / 6.0)
    assert base.tta_speedup == pytest.approx(1.0) and base.throughput_speedup == pytest.approx(1)
    assert fast.epochs_x_epoch_time == pytest.approx(5.0)
    assert fast.best == pytest.approx(0.92) and fast.best_mean == pytest.approx(0.91)
    assert (fast.status, fast.converged_fraction) == ("converged", 1.0)
    assert res.reference == "baseline" and res.threshold == 0.9 and not res.warnings


def test_dnc_partial_and_diverged(run):
    records = {
        "baseline": [run(0, [0.8, 0.95], [1.0, 1.0]), run(1, [0.8, 0.96], [1.0, 1.0])],
        # one repeat misses, one reaches at 4 s
        "+risky": [run(0, [0.8, 0.85], [2.0, 2.0]), run(1, [0.85, 0.91], [2.0, 2.0])],
        # one diverged after a finished epoch, one never got there: DNC
        "+broken": [
            run(0, [0.4], [0.5], status="diverged"),
            run(1, [0.4, 0.5], [0.5, 0.5]),
        ],
    }
    res = analyze_study(_manifest("baseline", "+risky", "+broken"), records)
    _, risky, broken = res.configs
    assert (risky.status, risky.n_reached, risky.n_runs) == ("partial", 1, 2)
    assert risky.converged_fraction == 0.5
    assert risky.tta_speedup == pytest.approx(2.0 / 4.0)
    assert broken.status == "DNC" and broken.n_diverged == 1
    assert broken.tta_speedup is None and broken.time_to_accuracy.mean is None
    assert broken.throughput_speedup == pytest.approx(2.0)  # throughput is still measured
    assert broken.runs[0].epochs_run == 1  # the diverged run kept its finished epoch
    assert any("+risky: 1 of 2 runs reached" in w for w in res.warnings)


def test_crashed_runs_are_not_counted_as_dnc(run):
    records = {
        "baseline": [run(0, [0.95], [1.0])],
        "+x": [run(0, [0.5], [1.0], status="crashed")],
    }
    res = analyze_study(_manifest("baseline", "+x", repeats=1), records)
    x = res.configs[1]
    assert (x.status, x.n_runs, x.n_unfinished) == ("no runs", 0, 1)
    assert any("crashed or unfinished" in w for w in res.warnings)


def test_reference_dnc_gives_no_tta_speedups(run):
    records = {"full": [run(0, [0.5], [1.0])], "-x": [run(0, [0.95], [1.0])]}
    res = analyze_study(_manifest("full", "-x", repeats=1, kind="lesion"), records)
    assert [c.tta_speedup for c in res.configs] == [None, None]
    assert "did not converge" in res.warnings[0]


def test_throughput_counts_the_partial_last_batch(run):
    # 1,438 samples per epoch with batch 512 is 3 steps, but not 3 x 512 samples
    rec = run(0, [0.95], [2.0], per_epoch=1438)
    rec["throughput"]["samples_per_s"] = {"value": 768.0}  # batch x steps / time: overstated
    assert run_point(rec).samples_per_s == pytest.approx(719.0)


def test_corruption_accuracy_per_configuration_and_against_the_reference(run):
    """Mean corruption accuracy over a configuration's runs and its difference from the
    reference's; runs without the measurement are left out, not counted as 0."""
    from perfsuite.study.render import has_robustness, headers, render

    def robust(rec, mean):
        rec["generalization"] = {"corruptions": {"mean": mean, "families": {}}}
        return rec

    records = {
        "full": [
            robust(run(0, [0.95], [1.0]), 0.80),
            robust(run(1, [0.95], [1.0]), 0.70),
        ],
        "-aug": [robust(run(0, [0.95], [1.0]), 0.60), run(1, [0.95], [1.0])],
        "-bf16": [run(0, [0.95], [1.0]), run(1, [0.95], [1.0])],
    }
    result = analyze_study(_manifest("full", "-aug", "-bf16", kind="lesion"), records)
    full, aug, bf16 = result.configs
    assert full.corruption_accuracy.mean == pytest.approx(0.75)
    assert full.corruption_accuracy.n == 2 and aug.corruption_accuracy.n == 1
    assert full.corruption_delta == pytest.approx(0.0)
    assert aug.corruption_delta == pytest.approx(-0.15)
    assert bf16.corruption_accuracy.mean is None and bf16.corruption_delta is None
    assert [r.corruption_accuracy for r in aug.runs] == [0.60, None]
    assert has_robustness(result) and headers(result)[-2:] == ["corruption acc.", "vs reference"]
    text = render(result)
    assert "75.00% ± 7.07" in text and "-15.00 pts" in text

    plain = analyze_study(_manifest("a", "b"), {"a": [run(0, [0.95], [1.0])], "b": []})
    assert not has_robustness(plain) and "corruption acc." not in render(plain)


def test_configurations_whose_cpu_converted_their_autocast_are_named(run):
    def bf16(rec, native):
        rec["math"] = {"autocast_dtype": "bfloat16", "autocast_native": native}
        return rec

    records = {
        "full": [bf16(run(0, [0.95], [9.0]), False)],
        "-bf16": [run(0, [0.95], [1.0])],
        "-channels_last": [bf16(run(0, [0.95], [9.0]), False)],
        "-batch": [bf16(run(0, [0.95], [3.0]), None)],  # flags unknown: nothing said
    }
    res = analyze_study(_manifest(*records, repeats=1, kind="lesion"), records)
    (warning,) = res.warnings  # the configs whose runs said so, not -batch (unknown)
    assert warning.startswith("full, -channels_last: bfloat16 autocast")


def test_crashed_runs_are_left_out_of_epoch_time_throughput_and_best(run):
    """A crashed run's 100 s epochs and its best metric are not the configuration's: before,
    s/epoch read 50.50 s (the mean of 1 s and 100 s) and the throughput speed-up 1.01x."""
    crashed = run(1, [0.99], [100.0, 100.0], status="crashed")
    records = {
        "baseline": [run(0, [0.5, 0.95], [2.0, 2.0]), run(1, [0.5, 0.95], [2.0, 2.0])],
        "+fast": [run(0, [0.5, 0.95], [1.0, 1.0]), crashed],
    }
    res = analyze_study(_manifest("baseline", "+fast"), records)
    fast = res.configs[1]
    assert (fast.n_runs, fast.n_unfinished) == (1, 1)
    assert fast.epoch_time.mean == pytest.approx(1.0) and fast.epoch_time.n == 1
    assert fast.samples_per_s.mean == pytest.approx(1000.0)
    assert fast.throughput_speedup == pytest.approx(2.0)
    assert fast.epochs_x_epoch_time == pytest.approx(2.0)
    assert fast.best == pytest.approx(0.95) and fast.best_mean == pytest.approx(0.95)
    assert len(fast.runs) == 2  # still listed, and warned about
    assert any("+fast: 1 run(s) crashed" in w for w in res.warnings)


def test_reference_without_finished_runs_gives_no_speedups_and_says_so(run):
    """Every reference run crashed: nothing measured to divide by, so no speed-up of either
    kind (before: throughput speed-ups against the crashed runs' epochs, and no warning)."""
    records = {
        "full": [run(0, [0.5], [2.0, 2.0], status="crashed")] * 2,
        "-x": [run(0, [0.5, 0.95], [1.0, 1.0]), run(1, [0.5, 0.95], [1.0, 1.0])],
        "-y": [run(0, [0.5, 0.6], [1.0, 1.0]), run(1, [0.5, 0.6], [1.0, 1.0])],
    }
    res = analyze_study(_manifest("full", "-x", "-y", kind="lesion"), records)
    full, x, y = res.configs
    assert full.status == "no runs" and full.epoch_time.mean is None
    assert full.samples_per_s.mean is None and full.best is None
    assert [c.throughput_speedup for c in res.configs] == [None, None, None]
    assert [c.tta_speedup for c in res.configs] == [None, None, None]
    assert x.samples_per_s.mean == pytest.approx(1000.0)  # its own numbers stay
    assert y.status == "DNC" and y.epoch_time.mean == pytest.approx(1.0)
    assert res.warnings[0].startswith("the reference 'full' has no finished runs")


def test_heading_names_the_target_without_records_and_its_direction(run):
    """No run yet: the study's threshold, else the workload's, and its metric (before:
    `None >= None`); a lower-is-better metric is reached at `<=`."""
    from perfsuite.study.render import render

    manifest = _manifest("baseline", "+x")
    empty = {"baseline": [], "+x": []}
    res = analyze_study(manifest, empty, default_metric="top1", default_threshold=0.98)
    assert (res.metric, res.threshold) == ("top1", 0.98)
    heading = next(line for line in render(res).splitlines() if "speed-ups against" in line)
    assert ": top1 >= 0.98;" in heading and "'baseline'" in heading
    manifest["spec"]["threshold"] = 0.97
    res = analyze_study(manifest, empty, default_metric="top1", default_threshold=0.98)
    assert ": top1 >= 0.97;" in render(res)
    assert "None" not in render(analyze_study(_manifest("a"), {"a": []}))
    rec = run(0, [0.5], [1.0])
    rec["task"]["direction"] = "lower"
    lower = analyze_study(_manifest("a", repeats=1), {"a": [rec]})
    assert lower.direction == "lower" and ": top1 <= 0.9;" in render(lower)
