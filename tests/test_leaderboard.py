"""Leaderboard ordering, ties, DNC and n/a rows, per-task boards, and `perfsuite leaderboard`."""

from __future__ import annotations

import json

import pytest

from analyzers.leaderboard import leaderboard
from perfsuite.cli import main
from perfsuite.record import new_record, quantity, write_record

PRICES = {"box.large": {"usd_per_hour": 3.6, "source": "test table: box.large"}}


def _rec(run_id, task="cifar10", metric="top1", threshold=0.94, time_s=None, **fields):
    rec = new_record(run_id=run_id, task={"name": task, "metric": metric, "threshold": threshold})
    rec["time_to_accuracy"].update(reached=time_s is not None, time_s=time_s)
    rec["status"] = "reached" if time_s is not None else "not_reached"
    rec["model"] = f"model-{run_id}"
    rec["framework"] = "pytorch 2.13.0"
    rec.update(fields)
    return rec


def _inference(run_id, latency_s, acc, cost_per_item=None):
    inf = {"latency": quantity(latency_s, "s", "imported"), "metrics": {"top1": acc}}
    if cost_per_item is not None:
        inf["cost_per_item"] = quantity(cost_per_item, "USD", "imported")
    rec = _rec(run_id, inference=inf, source={"kind": "dawnbench", "entry_type": "inference"})
    rec["status"] = "reached" if acc >= 0.94 else "not_reached"
    return rec


def _records():
    return [
        _rec(
            "a", time_s=100.0, hardware={"name": "V100", "count": 8, "instance_type": "box.large"}
        ),
        _rec("b", time_s=50.0, cost={"usd_per_hour": quantity(36.0, "USD/h", "imported")}),
        _rec("c", time_s=100.0),  # ties with a; no price
        _rec("d"),  # did not reach
        _inference("e", 0.01, 0.95, cost_per_item=1e-5),
        _inference("f", 0.005, 0.90),
        _rec("g", task="imagenet", metric="top5", threshold=0.93, time_s=1000.0),
    ]


def _summary(board):
    return [(r.rank, r.status, r.run_id, r.value) for r in board.rows]


def test_training_time_ties_and_dnc():
    cifar, imagenet = leaderboard(_records(), "training-time")
    assert (cifar.task, cifar.metric, cifar.threshold) == ("cifar10", "top1", 0.94)
    assert _summary(cifar) == [
        (1, "ranked", "b", 50.0),
        (2, "ranked", "a", 100.0),  # tie: shared rank, listed by run id
        (2, "ranked", "c", 100.0),
        (None, "DNC", "d", None),
    ]
    assert cifar.rows[1].hardware == "V100 x8" and cifar.rows[1].model == "model-a"
    assert _summary(imagenet) == [(1, "ranked", "g", 1000.0)]


@pytest.mark.parametrize(
    "flag",
    [
        # as perfsuite/workloads/squad_examples.py, runner/loop.py and squad.py write them
        "SMOKE TEST: trained on dev-v1.1.json articles (smoke_split), not on train-v1.1.json; "
        "F1/EM are not SQuAD results",
        "trained on a subset: train_limit=5000 examples",
        "evaluated on a subset: eval_limit=60 questions (60 scored), not every question",
    ],
)
def test_smoke_tests_and_subsets_are_listed_unranked(flag):
    fast = _rec("fast", time_s=7.6, flags=[flag])
    (board,) = leaderboard([fast, _rec("full", time_s=100.0)], "training-time")
    assert _summary(board) == [(1, "ranked", "full", 100.0), (None, "n/a", "fast", None)]
    assert board.rows[1].note == f"not the task's benchmark: {flag.split(';')[0]}"


def test_training_cost_ranks_priced_entries_only():
    (cifar, _) = leaderboard(_records(), "training-cost", PRICES)
    assert _summary(cifar) == [
        (1, "ranked", "a", pytest.approx(0.1)),  # 100 s x 3.6 USD/h (price table)
        (2, "ranked", "b", pytest.approx(0.5)),  # 50 s x 36 USD/h (record's own price)
        (None, "DNC", "d", None),
        (None, "n/a", "c", None),
    ]
    assert cifar.rows[3].note.startswith("price unknown (no price: the record has no cost")


def test_inference_boards():
    (lat,) = leaderboard(_records(), "inference-latency")
    assert _summary(lat) == [(1, "ranked", "e", 0.01), (None, "DNC", "f", None)]
    (cost,) = leaderboard(_records(), "inference-cost", PRICES)
    assert _summary(cost) == [(1, "ranked", "e", pytest.approx(0.1)), (None, "DNC", "f", None)]
    assert cost.rows[0].provenance == "imported"


def test_task_filter_and_input_order_does_not_matter():
    boards = leaderboard(list(reversed(_records())), "training-time", task="cifar10")
    assert [b.task for b in boards] == ["cifar10"]
    assert [r.run_id for r in boards[0].rows] == ["b", "a", "c", "d"]
    with pytest.raises(ValueError, match="unknown ranking"):
        leaderboard(_records(), "speed")


def test_cli(tmp_path, capsys):
    for rec in _records():
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["leaderboard", str(tmp_path), "--json", "--task", "cifar10"]) == 0
    (board,) = json.loads(capsys.readouterr().out)["boards"]
    assert [(r["rank"], r["run_id"]) for r in board["rows"]] == [
        (1, "b"),
        (2, "a"),
        (2, "c"),
        (None, "d"),
    ]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"instances": {"box.large": {"usd_per_hour": 7.2}}}))
    assert (
        main(["leaderboard", str(tmp_path), "--by", "training-cost", "--prices", str(prices)]) == 0
    )
    out = capsys.readouterr().out
    assert "== cifar10: top-1 >= 94%, ranked by training-cost" in out
    assert "$0.20" in out and "DNC" in out and "price unknown" in out  # a: 100 s x 7.2 USD/h
    assert main(["leaderboard", str(tmp_path), "--task", "squad"]) == 2
    assert "no training entries for task 'squad'" in capsys.readouterr().err


def test_lower_is_better_board_display_and_inference_qualifies(tmp_path, capsys):
    def wer(run_id, served, time_s=None):
        inf = {"latency": quantity(0.01, "s", "imported"), "metrics": {"wer": served}}
        rec = _rec(run_id, task="rnnt", metric="wer", threshold=0.058, time_s=time_s,
                   inference=inf)  # fmt: skip
        rec["task"]["direction"] = "lower"
        return rec

    recs = [wer("low", 0.05, time_s=100.0), wer("high", 0.07)]
    (board,) = leaderboard(recs, "inference-latency")
    assert board.direction == "lower"
    # 0.05 <= 0.058 qualifies; 0.07 is above the target (a ">=" rule would invert both)
    assert _summary(board) == [(1, "ranked", "low", 0.01), (None, "DNC", "high", None)]
    assert board.rows[1].note == "wer above 0.058"
    for rec in recs:
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["leaderboard", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "== rnnt: wer <= 0.058, ranked by training-time" in out and ">=" not in out
