"""`perfsuite stability`: which runs a group's statistics count.

Crashed or unfinished runs and runs not measured at a stricter `--threshold` are left out
(and named), and loose runs of different configurations are never pooled into one group.
"""

from __future__ import annotations

import json
import re

import pytest

from perfsuite.analyzers.runs.stability import group_records, stability
from perfsuite.cli import main
from perfsuite.record import write_record
from perfsuite.record.tta import crossing_dict, first_crossing


def _run(make_record, run_id, curve, status=None, error=None, seed=0, config=None, **fields):
    """A finished (or crashed) run as the runner writes it; `config` as in run.json."""
    rec = make_record(curve, run_id=run_id, hardware={"name": "cpu"}, model="mlp", **fields)
    task = rec["task"]
    c = first_crossing(
        rec["evaluations"], task["metric"], task["threshold"], task.get("direction", "higher")
    )
    rec["time_to_accuracy"] = crossing_dict(c)
    rec["status"] = status or ("reached" if c.reached else "not_reached")
    rec["error"] = error
    rec["config"] = {"seed": seed, "epochs": 5, "all_epochs": False, **(config or {})}
    return rec


# ----------------------------------------------------------------------------- crashed runs
def _with_crash(make_record):
    grp = {"id": "G", "index": 0, "size": 5}
    return [
        _run(make_record, "r0", [(1, 10.0, 0.95)], seed=0, group=grp),
        _run(make_record, "r1", [(1, 20.0, 0.95)], seed=1, group=grp),
        _run(make_record, "r2", [(1, 30.0, 0.95)], seed=2, group=grp),
        _run(make_record, "r3", [(1, 12.0, 0.5)], "crashed", "OSError: disk full", 3, group=grp),
        _run(
            make_record,
            "r4",
            [(1, 11.0, 0.5)],
            "interrupted",
            "interrupted by SIGINT",
            4,
            group=grp,
        ),
    ]


def test_crashed_and_interrupted_runs_are_left_out_and_named(make_record):
    (g,) = stability(_with_crash(make_record))
    # n, the fraction reaching and the olympic mean count the three finished runs only
    assert (g.n_runs, g.n_reached, g.reached_fraction) == (3, 3, 1.0)
    # olympic mean of [10, 20, 30] is 20; a crash counted as the slowest run would give 25
    assert g.olympic_mean.value == 20.0 and g.olympic_mean.n == 3
    assert [r.counted for r in g.runs] == [True, True, True, False, False]
    (left_out,) = [w for w in g.warnings if "r3" in w]  # one warning names both, with why
    assert "r3 (crashed: OSError: disk full)" in left_out
    assert "r4 (interrupted: interrupted by SIGINT)" in left_out
    assert not any("did not reach" in w for w in g.warnings)
    # time per epoch measures the machine: the crashed runs' finished epochs still count
    assert g.time_per_epoch.n == 5


def test_crashed_run_that_had_reached_keeps_its_measured_time(make_record):
    recs = _with_crash(make_record)[:3]
    recs.append(_run(make_record, "r5", [(1, 40.0, 0.95)], "crashed", "inference failed", 5))
    recs[3]["group"] = recs[0]["group"]
    (g,) = stability(recs)
    assert (g.n_runs, g.n_reached) == (4, 4)
    assert g.time_to_accuracy.mean == 25.0
    assert any(w.startswith("r5 (crashed) reached the target") for w in g.warnings)


def test_cli_text_names_the_crash(make_record, tmp_path, capsys):
    for rec in _with_crash(make_record):
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["stability", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "top1 >= 0.9 (3/3 reached, 100%)" in text
    (olympic,) = [line for line in text.splitlines() if line.startswith("olympic mean")]
    assert olympic.endswith(": 20.00 s")
    assert [line for line in text.splitlines() if line.startswith("warning: ") and "r3" in line]
    assert re.search(r"\nr3\s+3\s+crashed\s", text)  # the run's row says why it has no time


# ----------------------------------------------------------------------------- --threshold
def _stop_runs(make_record):
    """Own target 0.9, 5 epochs planned. a stops at its target (0.91) after epoch 2; b trains
    on (--all-epochs) to 0.93; c reaches 0.9 only at its last epoch; d stops at 0.96."""
    return [
        _run(make_record, "a", [(1, 10.0, 0.5), (2, 20.0, 0.91)], seed=0),
        _run(
            make_record,
            "b",
            [(e, 10.0 * e, 0.86 + 0.014 * e) for e in range(1, 6)],
            seed=1,
            config={"all_epochs": True},
        ),
        _run(make_record, "c", [(e, 11.0 * e, 0.8 + 0.024 * e) for e in range(1, 6)], seed=2),
        _run(make_record, "d", [(1, 12.0, 0.7), (2, 24.0, 0.8), (3, 36.0, 0.96)], seed=3),
    ]


def test_stricter_threshold_is_not_measured_for_a_run_that_stopped_at_its_target(make_record):
    (g,) = stability(_stop_runs(make_record), threshold=0.95)
    by_id = {r.run_id: r for r in g.runs}
    assert by_id["a"].stopped_at == 0.9 and not by_id["a"].counted
    assert [by_id[x].stopped_at for x in "bcd"] == [None, None, None]
    # b and c trained to the end without 0.95 (DNC); d's stopping evaluation was 0.96
    assert (g.n_runs, g.n_reached) == (3, 1)
    assert g.time_to_accuracy.mean == 36.0
    assert [w for w in g.warnings if w.startswith("2 of 3 runs did not reach")]
    (stopped,) = [w for w in g.warnings if "a (stopped at its own target 0.9)" in w]
    assert "top1 >= 0.95" in stopped and "--all-epochs" in stopped
    # at or below the own target nothing changes: every run is measured
    (own,) = stability(_stop_runs(make_record), threshold=0.9)
    assert (own.n_runs, own.n_reached) == (4, 4)


def test_every_run_not_measured_gives_no_fraction(make_record, tmp_path, capsys):
    recs = _stop_runs(make_record)[:1]
    (g,) = stability(recs, threshold=0.99)
    assert (g.n_runs, g.n_reached, g.reached_fraction) == (0, 0, None)
    write_record(tmp_path / "a", recs[0])
    assert main(["stability", str(tmp_path), "--threshold", "0.99"]) == 0
    text = capsys.readouterr().out
    assert "(0/0 reached, n/a)" in text and "not measured" in text
    assert main(["stability", str(tmp_path), "--threshold", "0.99", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["groups"][0]["runs"][0]
    assert (run["counted"], run["stopped_at"], run["reached"]) == (False, 0.9, False)


def test_lower_is_better_stricter_means_lower(make_record):
    def rec(run_id, curve):
        r = make_record(curve, metric="wer", threshold=0.1, run_id=run_id)
        r["task"]["direction"] = "lower"
        return _run_like(r)

    def _run_like(r):
        c = first_crossing(r["evaluations"], "wer", 0.1, "lower")
        r["time_to_accuracy"], r["status"] = crossing_dict(c), "reached"
        r["config"] = {"epochs": 5}
        return r

    recs = [rec("w1", [(1, 10.0, 0.3), (2, 20.0, 0.08)]), rec("w2", [(1, 9.0, 0.05)])]
    (g,) = stability(recs, threshold=0.06)  # stricter: w1 stopped at 0.08, w2 measured
    assert [r.stopped_at for r in g.runs] == [0.1, None]
    assert (g.n_runs, g.n_reached) == (1, 1)
    (looser,) = stability(recs, threshold=0.2)
    assert (looser.n_runs, looser.n_reached) == (2, 2)


# ----------------------------------------------------------------------------- grouping
def test_loose_runs_of_different_configurations_are_separate_groups(make_record):
    base = _run(make_record, "plain", [(1, 10.0, 0.95)], config={"switches": []})
    other = _run(
        make_record,
        "cl",
        [(1, 8.0, 0.95)],
        config={"switches": ["channels_last"], "batch_size": 256},
    )
    groups = group_records([base, other])
    assert [[r["run_id"] for r in recs] for _, _, recs in groups] == [["plain"], ["cl"]]
    labels = [label for _, label, _ in groups]
    assert labels[0] != labels[1]
    assert "switches=channels_last" in labels[1] and "batch_size=256" in labels[1]


@pytest.mark.parametrize(
    "field, value",
    [
        ("batch_size", 128),
        ("recipe", "dawnbench"),
        ("overrides", ["width=0.25"]),
        ("device", "cuda:0"),
        ("epochs", 24),
        ("nproc", 2),
    ],
)
def test_each_configuration_field_splits_loose_groups(make_record, field, value):
    a = _run(make_record, "a", [(1, 10.0, 0.95)], seed=0)
    b = _run(make_record, "b", [(1, 10.0, 0.95)], seed=1, config={field: value})
    assert len(group_records([a, b])) == 2
    same = _run(make_record, "c", [(1, 10.0, 0.95)], seed=2)
    assert len(group_records([a, same])) == 1


def test_framework_splits_loose_groups(make_record):
    a = _run(make_record, "a", [(1, 10.0, 0.95)], seed=0, framework="pytorch 2.13.0+cpu")
    b = _run(make_record, "b", [(1, 10.0, 0.95)], seed=1, framework="tensorflow 2.21.0")
    groups = group_records([a, b])
    assert len(groups) == 2 and "framework=tensorflow 2.21.0" in groups[1][1]


def test_a_repeated_seed_is_warned_about(make_record):
    recs = [
        _run(make_record, f"r{i}", [(1, 10.0 + i, 0.95)], seed=s) for i, s in enumerate([0, 0, 1])
    ]
    (g,) = stability(recs)
    assert [w for w in g.warnings if w.startswith("seed 0 is repeated (r0, r1)")]
    distinct = [_run(make_record, f"r{i}", [(1, 10.0 + i, 0.95)], seed=i) for i in range(3)]
    assert not any("repeated" in w for w in stability(distinct)[0].warnings)
