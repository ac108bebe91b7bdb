"""Claims follow from evidence: a record's time to accuracy and status are recomputed from its
evaluations by the one rule, its figures checked against physical bounds; `validate` reports a
disagreement naming the field and both values, and the analyses leave the record out with it."""

from __future__ import annotations

import copy

import pytest

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.runs.compare import compare
from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.analyzers.runs.stability import stability
from perfsuite.cli import main
from perfsuite.record import quantity, write_record
from perfsuite.record.consistency import problems, untrusted


@pytest.fixture
def good(make_record):
    rec = make_record([(1, 10.0, 0.5), (2, 20.0, 0.95), (3, 30.0, 0.97)], threshold=0.9)
    rec["status"] = "reached"
    return rec


def _fields(rec):
    return [p.field for p in problems(rec)]


def test_a_consistent_record_has_no_problem(good):
    assert problems(good) == []
    assert good["time_to_accuracy"]["time_s"] == 20.0
    assert untrusted(good) is None


def _mutate(rec, change):
    out = copy.deepcopy(rec)
    change(out)
    return out


CASES = {
    "no evaluations, claims reached": (
        lambda r: r.update(evaluations=[]),
        "time_to_accuracy.reached",
        "stored true, the evaluations give false (no evaluations)",
    ),
    "metrics null": (
        lambda r: [e.update(metrics={}) for e in r["evaluations"]],
        "task.metric",
        "'top1' is in no evaluation",
    ),
    "task metric no evaluation has": (
        lambda r: r["task"].update(metric="f1") or r["time_to_accuracy"].update(metric="f1"),
        "task.metric",
        "'f1' is in no evaluation (they have: top1)",
    ),
    "threshold 1e300": (
        lambda r: r["task"].update(threshold=1e300),
        "task.threshold",
        "1e+300 is outside [0, 1]",
    ),
    "time 1e308": (
        lambda r: r["time_to_accuracy"].update(time_s=1e308),
        "time_to_accuracy.time_s",
        "stored 1e+308 s, the evaluations give 20 s",
    ),
    "epoch 1e308": (
        lambda r: r["time_to_accuracy"].update(epoch=1e308),
        "time_to_accuracy.epoch",
        "stored 1e+308, the evaluations give 2",
    ),
    "evaluation index": (
        lambda r: r["time_to_accuracy"].update(evaluation_index=2),
        "time_to_accuracy.evaluation_index",
        "stored 2, the evaluations give 1",
    ),
    "step time 0 measured": (
        lambda r: r.update(throughput={"step_time": quantity(0.0, "s", "measured")}),
        "throughput.step_time.value",
        "0 s: no step takes no time",
    ),
    "cost 1e308": (
        lambda r: r.update(cost={"usd_per_hour": quantity(1e308, "USD/h", "imported")}),
        "cost.usd_per_hour.value",
        "beyond reason",
    ),
    "op self time 1e308": (
        lambda r: r.update(timeline={"ops": [{"op": "aten::mm", "self_time_s": 1e308}]}),
        "timeline.ops[0].self_time_s",
        "beyond reason",
    ),
    "evaluations unsorted": (
        lambda r: r["evaluations"].reverse(),
        "evaluations[1]",
        "out of order",
    ),
    "evaluation duplicated": (
        lambda r: r["evaluations"].insert(1, dict(r["evaluations"][0])),
        "evaluations[1]",
        "a duplicate",
    ),
    "group index beyond size": (
        lambda r: r.update(group={"id": "g", "index": 3, "size": 3}),
        "group.index",
        "3 is not below the group size 3",
    ),
    "accuracy above 1": (
        lambda r: r["evaluations"][0]["metrics"].update(top1=95.0),
        "evaluations[0].metrics.top1",
        "95 is outside [0, 1]",
    ),
    "status against the claim": (
        lambda r: r.update(status="not_reached"),
        "status",
        "stored 'not_reached', time_to_accuracy.reached is true",
    ),
    "op of 1e308 FLOP in a step of 9.2e8": (
        lambda r: r.update(work=_work(1e308)),
        "work.per_op[1].flops",
        "1e+308 FLOP in one op, more than the step's 9.2e+08 (flops_per_step)",
    ),
    "negative op bytes": (
        lambda r: r.update(work={**_work(3.2e8), "per_op": [{"op": "aten::mm", "bytes": -4.0}]}),
        "work.per_op[0].bytes",
        "-4 is not a count of byte (0 or more)",
    ),
    "task targets of other types": (
        lambda r: r["task"].update(targets=[1, "x", None]),
        "task.targets[0]",
        "1 is not an object {metric, target, direction}",
    ),
    "task target without a number": (
        lambda r: r["task"].update(targets=[{"metric": "top1", "target": "x"}]),
        "task.targets[0].target",
        "'x' is not a finite number",
    ),
    "time of another evaluation": (
        lambda r: r["time_to_accuracy"].update(time_s=30.0),
        "time_to_accuracy.time_s",
        "stored 30 s, the evaluations give 20 s",
    ),
}


def _work(second_op_flops: float) -> dict:
    """A counted step of 9.2e8 FLOP: two matrix products, the second of `second_op_flops`."""
    return {
        "flops_per_step": quantity(9.2e8, "FLOP", "counted"),
        "per_op": [
            {"op": "aten::mm", "calls": 1, "flops": 6e8, "bytes": 1e6},
            {"op": "aten::addmm", "calls": 1, "flops": second_op_flops, "bytes": 1e6},
        ],
    }


def test_each_target_type_is_named(good):
    rec = _mutate(good, lambda r: r["task"].update(targets=[1, "x", None]))
    assert _fields(rec) == ["task.targets[0]", "task.targets[1]", "task.targets[2]"]
    assert _fields(_mutate(good, lambda r: r["task"].update(targets=[]))) == []
    assert _fields(_mutate(good, lambda r: r.update(work=_work(9.2e8)))) == []  # a part <= whole


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_disagreement_is_named_with_both_values(good, case):
    change, field, words = CASES[case]
    rec = _mutate(good, change)
    found = [(p.field, p.why) for p in problems(rec)]
    assert any(f == field and words in why for f, why in found), found
    reason = untrusted(rec)
    assert reason and reason.startswith("inconsistent record: field ")


def test_lower_is_better_reached_later_than_the_first_evaluation_meeting_it(make_record):
    rec = make_record([(1, 10.0, 0.30), (2, 20.0, 0.05), (3, 30.0, 0.04)], metric="wer",
                      threshold=0.1)  # fmt: skip
    rec["task"]["direction"] = "lower"
    rec["time_to_accuracy"].update(reached=True, time_s=30.0, epoch=3, evaluation_index=2)
    found = {p.field: p.why for p in problems(rec)}
    assert found["time_to_accuracy.time_s"] == "stored 30 s, the evaluations give 20 s"
    assert found["time_to_accuracy.epoch"] == "stored 3, the evaluations give 2"


def test_an_mlperf_time_includes_evaluation_but_not_less(good):
    good["source"] = {"kind": "mlperf", "entry_type": "training"}
    good["time_to_accuracy"]["time_s"] = 25.0  # run_stop - run_start: evaluations included
    assert problems(good) == []
    good["time_to_accuracy"]["time_s"] = 15.0
    assert _fields(good) == ["time_to_accuracy.time_s"]
    good["time_to_accuracy"].update(reached=False, time_s=None, epoch=None, evaluation_index=None)
    good["status"] = "not_reached"  # run_stop not success: a crossing curve may be not reached
    assert problems(good) == []


def test_analyses_leave_an_inconsistent_record_out_with_the_reason(good):
    bad = _mutate(good, lambda r: r.update(evaluations=[], run_id="bad"))
    (board,) = leaderboard([good, bad])
    rows = {r.run_id: r for r in board.rows}
    assert rows["r1"].status == "ranked" and rows["r1"].value == 20.0
    assert rows["bad"].status == "n/a" and rows["bad"].rank is None
    assert "time_to_accuracy.reached: stored true" in rows["bad"].note
    c = cost_of(bad, {}, None)
    assert c.training_time_s is None and "inconsistent record" in (c.left_out or "")
    (group,) = stability([good, bad])
    assert group.n_reached == 1
    assert any("bad (inconsistent: inconsistent record" in w for w in group.warnings)
    res = compare([("a", [good]), ("b", [bad])])
    (b,) = [r for r in res.runs if r.run_id == "bad"]
    assert b.status == "inconsistent" and b.reached is False and b.time_to_accuracy_s is None


def test_validate_reports_the_field_and_both_values(good, tmp_path, capsys):
    write_record(tmp_path / "ok", good)
    assert main(["validate", str(tmp_path / "ok")]) == 0
    bad = _mutate(good, lambda r: r["time_to_accuracy"].update(time_s=1e308))
    write_record(tmp_path / "bad", bad)
    assert main(["validate", str(tmp_path / "bad")]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if "field time_to_accuracy.time_s: " in ln)
    assert "stored 1e+308 s" in line and line.endswith("give 20 s"), out
    assert len([ln for ln in out.splitlines() if ln.startswith("error")]) == 2  # and the bound


def test_the_report_does_not_state_a_claim_the_evaluations_do_not_bear(good):
    from perfsuite.report.overview_section import _headline

    assert _headline(good).startswith("Reached top-1 >= 90% in 20.00 s")
    bad = _mutate(good, lambda r: r.update(evaluations=[]))
    line = _headline(bad)
    assert line.startswith("Claims not shown: inconsistent record:")
    assert "field time_to_accuracy.reached" in line
    assert "Reached" not in line


def test_an_absurd_op_is_refused_by_validate_and_never_printed_in_full(
    make_record, tmp_path, capsys
):
    """An op of 1e308 FLOP: validate names the field; the roofline's percentages stop at the
    formatter's limit instead of printing hundreds of digits."""
    import re

    from perfsuite import fmt
    from perfsuite.__main__ import main as program
    from tests.helpers import build_record

    assert fmt.pct(1e306) == fmt.pct(float("inf")) == ">100,000%"
    assert fmt.pct(-1e306) == "<-100,000%"
    assert (fmt.pct(999.0, 0), fmt.pct(float("nan"))) == ("99900%", "n/a")
    rec = build_record(make_record)
    rec["work"]["per_op"][0]["flops"] = 1e308
    write_record(tmp_path / "r", rec)
    assert program(["validate", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    assert "field work.per_op[0].flops: 1e+308 FLOP in one op" in out
    program(["roofline", str(tmp_path / "r")])
    shown = capsys.readouterr()
    assert "the step would take >100,000% of its measured time" in shown.out
    assert not re.search(r"\d{13}", shown.out + shown.err)


def test_a_token_count_beyond_reason_is_named(good):
    rec = _mutate(good, lambda r: r["evaluations"][0].update(tokens=1e30))
    assert _fields(rec) == ["evaluations[0].tokens"]
    assert _fields(_mutate(good, lambda r: r["evaluations"][0].update(tokens=1_207_959_552))) == []
