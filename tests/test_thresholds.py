"""Threshold analysis: times at several thresholds, ranks, DNC and ranking swaps."""

from __future__ import annotations

import json

import pytest

from perfsuite.analyzers.runs.thresholds import (
    Placing,
    Ranking,
    _rank,
    analyze_thresholds,
    find_swaps,
)
from perfsuite.cli import main
from perfsuite.record import write_record
from tests.conftest import settle

CURVES = {
    # A: steady; B: slow start, reaches 0.93 first; C: fast start, plateaus below 0.92
    "A": [(1, 10.0, 0.90), (2, 20.0, 0.92), (3, 30.0, 0.93)],
    "B": [(1, 15.0, 0.89), (2, 25.0, 0.93)],
    "C": [(1, 5.0, 0.905), (2, 10.0, 0.91), (3, 15.0, 0.915)],
}
TS = [0.93, 0.90, 0.91, 0.92]  # unsorted on purpose


def _records(make_record):
    return [make_record(c, run_id=name) for name, c in CURVES.items()]


def _table(res):
    return {r.threshold: [(p.name, p.time_s, p.rank) for p in r.placings] for r in res.rankings}


def test_times_ranks_and_dnc(make_record):
    res = analyze_thresholds(_records(make_record), TS)
    assert res.metric == "top1" and res.thresholds == [0.90, 0.91, 0.92, 0.93]
    assert _table(res) == {
        0.90: [("C", 5.0, 1), ("A", 10.0, 2), ("B", 25.0, 3)],
        0.91: [("C", 10.0, 1), ("A", 20.0, 2), ("B", 25.0, 3)],
        0.92: [("A", 20.0, 1), ("B", 25.0, 2), ("C", None, None)],
        0.93: [("B", 25.0, 1), ("A", 30.0, 2), ("C", None, None)],
    }


def test_swaps_between_consecutive_thresholds(make_record):
    res = analyze_thresholds(_records(make_record), TS)
    got = [(s.from_threshold, s.to_threshold, s.faster_before, s.faster_after) for s in res.swaps]
    assert got == [
        (0.91, 0.92, "C", "A"),  # C drops to DNC: was ahead of A ...
        (0.91, 0.92, "C", "B"),  # ... and of B
        (0.92, 0.93, "A", "B"),  # A ahead of B at 0.92, behind at 0.93
    ]


def test_ties_share_rank_and_both_dnc_is_not_a_swap():
    ranked = _rank([("b", 5.0, 1, 1), ("a", 5.0, 1, 1), ("c", 7.0, 1, 1), ("d", None, 0, 1)])
    assert [(p.name, p.rank) for p in ranked] == [("a", 1), ("b", 1), ("c", 3), ("d", None)]
    r1 = Ranking(0.9, [Placing("x", 1.0, 1, 1, 1), Placing("y", 2.0, 2, 1, 1)])
    r2 = Ranking(0.95, [Placing("x", None, None, 0, 1), Placing("y", None, None, 0, 1)])
    r3 = Ranking(0.97, [Placing("x", 3.0, 1, 1, 1), Placing("y", 3.0, 1, 1, 1)])
    assert find_swaps([r1, r2]) == [] and find_swaps([r1, r3]) == []


def test_groups_use_mean_and_need_every_run(make_record):
    def rec(gid, i, t, metric):
        group = {"id": gid, "index": i, "size": 2}
        return make_record([(1, t, metric)], run_id=f"{gid.lower()}{i}", group=group)

    recs = [rec("G", 0, 10.0, 0.95), rec("G", 1, 14.0, 0.95)]
    recs += [rec("H", 0, 11.0, 0.95), rec("H", 1, 9.0, 0.85)]
    res = analyze_thresholds(recs, [0.8, 0.9], by_group=True)
    assert [e.members for e in res.entries] == [["g0", "g1"], ["h0", "h1"]]
    assert _table(res) == {
        0.8: [("group:H", 10.0, 1), ("group:G", 12.0, 2)],
        0.9: [("group:G", 12.0, 1), ("group:H", None, None)],  # h1 never reaches 0.9
    }
    assert res.rankings[1].placings[1].reached_runs == 1
    assert [(s.faster_before, s.faster_after) for s in res.swaps] == [("group:H", "group:G")]


def test_bad_input(make_record):
    with pytest.raises(ValueError, match=r"top1 must be a fraction in \[0, 1\]"):
        analyze_thresholds(_records(make_record), [93])
    mixed = [make_record([(1, 1.0, 0.9)]), make_record([(1, 1.0, 0.9)], metric="f1", run_id="q")]
    with pytest.raises(ValueError, match="different metrics"):
        analyze_thresholds(mixed, [0.9])
    assert analyze_thresholds(mixed, [0.9], metric="f1").rankings[0].placings[0].name == "q"


def test_cli(make_record, tmp_path, capsys):
    for rec in _records(make_record):
        write_record(tmp_path / rec["run_id"], rec)
    args = ["thresholds", str(tmp_path), "--thresholds", "0.90,0.91,0.92,0.93"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in out["rankings"][3]["placings"]] == ["B", "A", "C"]
    assert len(out["swaps"]) == 3
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "top1 >= 0.93: B < A; DNC: C" in text and "DNR" not in text
    assert "A ahead of B at 0.92, behind at 0.93" in text
    assert main(["thresholds", str(tmp_path), "--thresholds", "90,93"]) == 2
    assert "top1 must be a fraction in [0, 1]" in capsys.readouterr().err


def test_inference_only_records_skipped_and_missing_metric_noted(make_record):
    inf = make_record(run_id="inf", source={"kind": "dawnbench", "entry_type": "inference"})
    other = make_record([(1, 1.0, 0.99)], metric="f1", run_id="squad")
    res = analyze_thresholds([*_records(make_record), inf, other], [0.9], metric="top1")
    assert [e.name for e in res.entries] == ["A", "B", "C", "squad"]
    skipped, no_values = res.notes
    assert skipped.startswith("skipped 1 inference-only")
    assert no_values.startswith("no top1 values") and no_values.endswith(": squad")


def test_lower_is_better_records_use_their_direction(tmp_path, make_record):
    from perfsuite.analyzers.runs.stability import run_crossing

    rec = make_record(
        [(1, 10.0, 0.30), (2, 20.0, 0.08), (3, 30.0, 0.05)],
        metric="wer",
        threshold=0.058,
        run_id="wer-run",
    )
    rec["task"]["direction"] = "lower"
    settle(rec)  # its stored time to accuracy in the lower direction, as a writer stores it
    assert run_crossing(rec, threshold=0.1).time_s == 20.0
    table = analyze_thresholds([rec], [0.058, 0.1])  # thresholds are analyzed in ascending order
    assert [r.placings[0].time_s for r in table.rankings] == [30.0, 20.0]


def test_records_of_different_workloads_are_ranked_with_a_note(make_record):
    recs = _records(make_record)
    assert not any("different workloads" in n for n in analyze_thresholds(recs, TS).notes)
    recs[0]["task"] = {**recs[0]["task"], "workload": "digits"}
    recs[1]["task"] = {**recs[1]["task"], "workload": "cifar10"}
    notes = analyze_thresholds(recs, TS).notes
    assert any("different workloads" in n and "(cifar10, digits, toy)" in n for n in notes)


# ----------------------------------------------------------------------------- stopped runs
def _stopping(make_record, run_id, curve, epochs=8, **config):
    """A run with target top1 >= 0.9 that stops there unless it ran out of `epochs`."""
    rec = make_record(curve, run_id=run_id, threshold=0.9)
    rec["config"] = {"epochs": epochs, "all_epochs": False, **config}
    return rec


def test_thresholds_beyond_a_runs_own_stop_are_not_measured(make_record):
    # "fast" stops at epoch 1 of 8 with 0.91; "slow" stops at epoch 2 with 0.96: at 0.95 only
    # slow has a time, but fast was never trained further, so this is no ranking change.
    recs = [
        _stopping(make_record, "fast", [(1, 10.0, 0.91)]),
        _stopping(make_record, "slow", [(1, 10.0, 0.5), (2, 20.0, 0.96)]),
    ]
    res = analyze_thresholds(recs, [0.9, 0.95, 0.98])
    states = {r.threshold: [(p.name, p.state, p.rank) for p in r.placings] for r in res.rankings}
    assert states == {
        0.9: [("fast", "reached", 1), ("slow", "reached", 2)],
        0.95: [("slow", "reached", 1), ("fast", "not_measured", None)],
        0.98: [("fast", "not_measured", None), ("slow", "not_measured", None)],
    }
    assert res.rankings[1].placings[1].stopped_at == [0.9]
    assert res.swaps == []
    assert [n for n in res.notes if n.startswith("no entry was measured at top1 >= 0.98")]
    assert not any(n.startswith("no entry reaches") for n in res.notes)
    assert [n for n in res.notes if n.startswith("not measured: fast, slow ")]


def test_a_run_that_ran_out_of_epochs_is_dnc_and_can_swap(make_record):
    # A pair: "early" stops at 0.9 after epoch 4 of 8 (0.972); "single" reached
    # 0.9 only at its last epoch (2 of 2), so it really did not reach 0.95 within its budget.
    early = _stopping(
        make_record, "early", [(1, 5.0, 0.53), (2, 10.0, 0.87), (3, 15.0, 0.866), (4, 22.6, 0.972)]
    )
    single = _stopping(make_record, "single", [(1, 9.4, 0.71), (2, 18.8, 0.94)], epochs=2)
    res = analyze_thresholds([early, single], [0.9, 0.95, 0.98])
    states = {r.threshold: [(p.name, p.state) for p in r.placings] for r in res.rankings}
    assert states[0.95] == [("early", "reached"), ("single", "dnc")]
    assert states[0.98] == [("single", "dnc"), ("early", "not_measured")]
    got = [(s.from_threshold, s.to_threshold, s.faster_before, s.faster_after) for s in res.swaps]
    assert got == [(0.9, 0.95, "single", "early")]
    (none,) = [n for n in res.notes if n.startswith("no entry reaches top1 >= 0.98")]
    assert "(1 more not measured)" in none


def test_group_with_a_stopped_run_is_not_measured_unless_another_run_failed(make_record):
    def rec(gid, i, curve, epochs=8):
        r = _stopping(make_record, f"{gid.lower()}{i}", curve, epochs)
        r["group"] = {"id": gid, "index": i, "size": 2}
        return r

    recs = [rec("G", 0, [(1, 10.0, 0.91)]), rec("G", 1, [(1, 10.0, 0.5), (2, 14.0, 0.97)])]
    recs += [rec("H", 0, [(1, 9.0, 0.91)]), rec("H", 1, [(1, 9.0, 0.89), (2, 18.0, 0.92)], 2)]
    res = analyze_thresholds(recs, [0.95], by_group=True)
    got = [(p.name, p.state, p.reached_runs, p.not_measured_runs) for p in res.rankings[0].placings]
    # h1 trained all its epochs without 0.95: H is DNC whatever h0 would have done
    assert got == [("group:H", "dnc", 0, 1), ("group:G", "not_measured", 1, 1)]


def test_lower_is_better_stricter_threshold_is_lower(make_record):
    rec = make_record([(1, 10.0, 0.30), (2, 20.0, 0.05)], metric="wer", threshold=0.058)
    rec["task"]["direction"] = "lower"
    settle(rec)
    rec["config"] = {"epochs": 8}
    res = analyze_thresholds([rec], [0.04, 0.058, 0.1])
    assert [(r.threshold, r.placings[0].state) for r in res.rankings] == [
        (0.04, "not_measured"),
        (0.058, "reached"),
        (0.1, "reached"),
    ]
    assert [n for n in res.notes if n.startswith("no entry was measured at wer <= 0.04")]


def test_cli_shows_not_measured(make_record, tmp_path, capsys):
    recs = [
        _stopping(make_record, "fast", [(1, 10.0, 0.91)]),
        _stopping(make_record, "slow", [(1, 10.0, 0.5), (2, 20.0, 0.96)]),
    ]
    for r in recs:
        write_record(tmp_path / r["run_id"], r)
    args = ["thresholds", str(tmp_path), "--thresholds", "0.9,0.95"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "not measured (stopped at 0.9)" in text
    assert "top1 >= 0.95: slow; not measured: fast" in text
    assert "ranking changes: none" in text
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    fast = out["rankings"][1]["placings"][1]
    assert (fast["name"], fast["state"], fast["time_s"], fast["stopped_at"]) == (
        "fast",
        "not_measured",
        None,
        [0.9],
    )


def test_cli_escapes_control_characters_in_names(make_record, tmp_path, capsys):
    evil = _stopping(make_record, "evil\x1b[2J", [(1, 10.0, 0.91)])
    write_record(tmp_path / "e", evil)
    assert main(["thresholds", str(tmp_path), "--thresholds", "0.9,0.95"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "note: not measured: evil\\x1b[2J stopped" in out


def test_diverged_runs_are_dnc_named_as_diverged(make_record, tmp_path, capsys):
    from perfsuite.cli.thresholds_cmd import render

    recs = _records(make_record)
    recs[2]["status"] = "diverged"  # C: its loss became NaN after epoch 3
    res = analyze_thresholds(recs, [0.90, 0.93])
    c = next(p for p in res.rankings[1].placings if p.name == "C")
    assert (c.state, c.diverged_runs) == ("dnc", 1)
    assert [p.diverged_runs for p in res.rankings[0].placings] == [0, 0, 0]  # C reached 0.90
    text = render(res)
    assert "DNC (diverged)" in text and "top1 >= 0.93: B < A; DNC: C (diverged)" in text

    def rec(i, t, metric, status):
        r = make_record([(1, t, metric)], run_id=f"g{i}", group={"id": "G", "index": i, "size": 2})
        r["status"] = status
        return r

    group = analyze_thresholds(
        [rec(0, 10.0, 0.95, "reached"), rec(1, 12.0, 0.5, "diverged")], [0.9], by_group=True
    )
    (p,) = group.rankings[0].placings
    assert (p.state, p.reached_runs, p.runs, p.diverged_runs) == ("dnc", 1, 2, 1)
    assert "DNC (1/2 runs, 1 diverged)" in render(group)


def test_an_inconsistent_record_is_left_out_with_its_reason(make_record):
    """Evaluations reversed in time: the record's curve contradicts itself, so thresholds
    leaves it out as validate, leaderboard, stability, cost and report do."""
    records = _records(make_record)
    bad = make_record([(1, 30.0, 0.90), (2, 20.0, 0.92), (3, 10.0, 0.93)], run_id="R")
    res = analyze_thresholds([*records, bad], TS)
    assert [e.name for e in res.entries] == ["A", "B", "C"]
    (note,) = [n for n in res.notes if n.startswith("left out R: ")]
    assert "inconsistent record: field evaluations[1]" in note and "out of order" in note
    assert _table(res) == _table(analyze_thresholds(records, TS))
    with pytest.raises(ValueError, match="no consistent training records"):
        analyze_thresholds([bad], TS)
