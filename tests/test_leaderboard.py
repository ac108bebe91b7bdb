"""Leaderboard ordering, ties, DNC and n/a rows, per-task boards, and `perfsuite leaderboard`."""

from __future__ import annotations

import json
import shutil

import pytest

from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.cli import main
from perfsuite.mllog import MLLogWriter
from perfsuite.record import load_record, load_records, new_record, quantity, write_record
from tests.conftest import extract_h100_run, settle
from tests.test_mllog import FakeClock

PRICES = {"box.large": {"usd_per_hour": 3.6, "source": "test table: box.large"}}


def _rec(run_id, task="cifar10", metric="top1", threshold=0.94, time_s=None, **fields):
    rec = new_record(run_id=run_id, task={"name": task, "metric": metric, "threshold": threshold})
    # one evaluation, at the target when reached (below it when not): the claim follows from it
    met = time_s is not None
    value = threshold if met else 0.0
    rec["evaluations"] = [{"epoch": 1, "train_time_s": time_s or 10.0, "metrics": {metric: value}}]
    rec["time_to_accuracy"].update(
        reached=met, time_s=time_s, epoch=1 if met else None, evaluation_index=0 if met else None
    )
    rec["status"] = "reached" if met else "not_reached"
    rec["model"] = f"model-{run_id}"
    rec["framework"] = "pytorch 2.13.0"
    rec.update(fields)
    return rec


def _inference(run_id, latency_s, acc, cost_per_item=None):
    inf = {
        "latency": quantity(latency_s, "s", "imported"),
        "metrics": {"top1": acc},
        "rule": "imported",
    }
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
        # as perfsuite/workloads/squad/examples.py, runner/routes/run.py and squad/workload.py
        # write them
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
    note = cifar.rows[3].note
    assert note.startswith("price unknown (no price:") and "no cost" in note


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
    (head,) = [line for line in out.splitlines() if line.startswith("== cifar10")]
    assert "94%" in head and "training-cost" in head
    assert "$0.20" in out and "DNC" in out and "price unknown" in out  # a: 100 s x 7.2 USD/h
    assert main(["leaderboard", str(tmp_path), "--task", "squad"]) == 2
    assert "no training entries for task 'squad'" in capsys.readouterr().err


def test_lower_is_better_board_display_and_inference_qualifies(tmp_path, capsys):
    def wer(run_id, served, time_s=None):
        inf = {
            "latency": quantity(0.01, "s", "imported"),
            "metrics": {"wer": served},
            "rule": "imported",
        }
        rec = _rec(run_id, task="rnnt", metric="wer", threshold=0.058, time_s=time_s,
                   inference=inf)  # fmt: skip
        rec["task"]["direction"] = "lower"
        rec["evaluations"][0]["metrics"]["wer"] = served  # the curve's claim is the served one
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
    (head,) = [line for line in out.splitlines() if line.startswith("== rnnt")]
    assert "wer <= 0.058" in head and ">=" not in out  # lower is better, said so


# ------------------------------------------------------------- --instance-type (cost boards)
A10G = {"name": "NVIDIA A10G", "accelerator": "cuda", "count": 1}
H100 = {"name": "NVIDIA H100 80GB HBM3", "accelerator": "cuda", "count": 1}
GPU_PRICES = {
    **PRICES,
    "gpu.a10g": {"usd_per_hour": 1.8, "source": "test table: gpu.a10g", "hardware": A10G},
}


def _priced_records():
    return [
        _rec("a", time_s=100.0, hardware={**A10G, "instance_type": "box.large"}),  # its own type
        _rec("b", time_s=50.0, cost={"usd_per_hour": quantity(36.0, "USD/h", "imported")}),
        _rec("c", time_s=100.0, hardware=dict(A10G)),  # names no type: priced at gpu.a10g
        _rec("d"),  # did not reach
        _rec("h", time_s=50.0, hardware=dict(H100)),  # names no type, and is not an A10G
    ]


def test_training_cost_instance_type_prices_only_matching_records_that_name_none():
    (board,) = leaderboard(_priced_records(), "training-cost", GPU_PRICES, instance_type="gpu.a10g")
    assert board.instance_type == "gpu.a10g"
    assert _summary(board) == [
        (1, "ranked", "c", pytest.approx(0.05)),  # 100 s x 1.8 USD/h (--instance-type)
        (2, "ranked", "a", pytest.approx(0.1)),  # 100 s x 3.6 USD/h (its own box.large)
        (3, "ranked", "b", pytest.approx(0.5)),  # 50 s x 36 USD/h (its own price)
        (None, "DNC", "d", None),
        (None, "n/a", "h", None),  # an H100 run is not priced as an A10G
    ]
    notes = {r.run_id: r.note for r in board.rows}
    # each row's price says where it came from and what happened to --instance-type
    assert notes["c"].startswith("price: test table: gpu.a10g;") and "command line" in notes["c"]
    assert notes["a"].startswith("price: test table: box.large;")
    assert "--instance-type gpu.a10g ignored" in notes["a"]
    assert "--instance-type gpu.a10g not used" in notes["b"] and "own price" in notes["b"]
    assert notes["h"].startswith("price unknown (--instance-type gpu.a10g")
    assert "not used" in notes["h"]
    assert "NVIDIA H100 80GB HBM3 (cuda)" in notes["h"] and "NVIDIA A10G (cuda)" in notes["h"]
    # without the option nothing changes: c and h have no price
    (board,) = leaderboard(_priced_records(), "training-cost", GPU_PRICES)
    assert [(r.rank, r.run_id) for r in board.rows] == [
        (1, "a"),
        (2, "b"),
        (None, "d"),
        (None, "c"),
        (None, "h"),
    ]


def test_inference_cost_instance_type_and_latency_measured_elsewhere():
    def served(run_id, inference_hw):
        inf = {
            "latency": quantity(0.02, "s", "measured"),
            "metrics": {"top1": 0.95},
            "hardware": inference_hw,
        }
        return _rec(run_id, time_s=100.0, hardware=dict(A10G), inference=inf)

    recs = [served("same", dict(A10G)), served("other", dict(H100))]
    (board,) = leaderboard(recs, "inference-cost", GPU_PRICES, instance_type="gpu.a10g")
    # 0.02 s x 10,000 = 200 s at 1.8 USD/h = 0.1 USD; the H100 latency is not the A10G's
    assert _summary(board) == [
        (1, "ranked", "same", pytest.approx(0.1)),
        (None, "n/a", "other", None),
    ]
    assert board.rows[1].note.startswith("inference ") and "NVIDIA H100" in board.rows[1].note


def test_cli_instance_type_with_the_builtin_table(tmp_path, capsys):
    """g5.xlarge is an A10G in perfsuite/pricing/prices.json (1.006 USD/h)."""
    for rec in _priced_records():
        write_record(tmp_path / rec["run_id"], rec)
    args = ["leaderboard", str(tmp_path), "--by", "training-cost", "--instance-type", "g5.xlarge"]
    assert main([*args, "--json"]) == 0
    (board,) = json.loads(capsys.readouterr().out)["boards"]
    assert board["instance_type"] == "g5.xlarge"
    assert [(r["rank"], r["status"], r["run_id"]) for r in board["rows"]] == [
        (1, "ranked", "c"),  # 100 s x 1.006 USD/h
        (2, "ranked", "b"),  # 50 s x 36 USD/h (its own price; box.large is not in the table)
        (None, "DNC", "d"),
        (None, "n/a", "a"),  # names box.large, which the built-in table lacks
        (None, "n/a", "h"),
    ]
    assert board["rows"][0]["value"] == pytest.approx(100 / 3600 * 1.006)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "g5.xlarge is NVIDIA A10G (cuda)" in out and "note: --instance-type g5.xlarge" in out
    assert main([*args[:-1], "nope"]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err.startswith("perfsuite: error: ") and "--instance-type nope" in err
    assert main(["leaderboard", str(tmp_path), "--instance-type", "g5.xlarge"]) == 2
    assert "prices the cost rankings" in capsys.readouterr().err


def test_a_price_unknown_row_says_why_there_is_no_price():
    """The first price note was shown: "--instance-type gpu.a10g ignored: ..." said nothing
    about why the record has no price (its own type is not in the table)."""
    recs = [_rec("n", time_s=100.0, hardware={**A10G, "instance_type": "nope"})]
    (board,) = leaderboard(recs, "training-cost", GPU_PRICES, instance_type="gpu.a10g")
    assert _summary(board) == [(None, "n/a", "n", None)]
    assert board.rows[0].note.startswith("price unknown (") and "nope" in board.rows[0].note
    inf = {"latency": quantity(0.02, "s", "measured"), "metrics": {"top1": 0.95}}
    (board,) = leaderboard(
        [{**recs[0], "inference": inf}], "inference-cost", GPU_PRICES, instance_type="gpu.a10g"
    )
    assert board.rows[0].note.startswith("price unknown (") and "nope" in board.rows[0].note


def test_a_recorded_instance_type_of_other_hardware_is_not_ranked():
    """An H100 run made with `--instance-type gpu.a10g` was ranked at the A10G's price."""
    recs = [
        _rec("h", time_s=50.0, hardware={**H100, "instance_type": "gpu.a10g"}),
        _rec("a", time_s=100.0, hardware={**A10G, "instance_type": "gpu.a10g"}),
    ]
    (board,) = leaderboard(recs, "training-cost", GPU_PRICES)
    assert _summary(board) == [
        (1, "ranked", "a", pytest.approx(0.05)),  # 100 s x 1.8 USD/h
        (None, "n/a", "h", None),
    ]
    assert board.rows[0].note == "price: test table: gpu.a10g"
    h = board.rows[1].note
    assert h.startswith("price unknown (") and "instance type gpu.a10g not used" in h
    assert "NVIDIA H100 80GB HBM3 (cuda)" in h and "NVIDIA A10G (cuda)" in h


@pytest.mark.parametrize("by", ["training-time", "training-cost"])
def test_crashed_and_unfinished_runs_are_n_a_rows_not_dnc(by):
    """docs/statistics.md, Terms: a run that crashed or is unfinished without reaching is left
    out (n/a with the reason); DNC is a run that finished without reaching."""
    recs = [_rec("ok", time_s=100.0, cost={"usd_per_hour": quantity(3.6, "USD/h", "imported")})]
    for status in ("crashed", "interrupted", "running", "not_reached", "diverged"):
        recs.append(_rec(status))
        recs[-1]["status"] = status
    (board,) = leaderboard(recs, by, PRICES)
    assert [(r.status, r.run_id, r.note) for r in board.rows[1:]] == [
        ("DNC", "diverged", "diverged: did not reach top-1 >= 94%"),
        ("DNC", "not_reached", "not_reached: did not reach top-1 >= 94%"),
        ("n/a", "crashed", "crashed before reaching the target"),
        ("n/a", "interrupted", "interrupted before reaching the target"),
        ("n/a", "running", "still running"),
    ]


# ------------------------------------------- a run's own mllog.txt imported beside it: once
def _run_with_log(runs, run_id, time_s, accs, task="cifar10", threshold=0.94):
    """A perfsuite run folder as the runner leaves it: run.json naming its mllog.txt."""
    folder = runs / run_id
    folder.mkdir(parents=True)
    config = {"global_batch_size": 256, "seed": 7, "submission_platform": "NVIDIA A10G"}
    with MLLogWriter(folder / "mllog.txt", benchmark=task, clock=FakeClock(step=0.25)) as log:
        log.start(config)
        for epoch, acc in enumerate(accs, start=1):
            log.eval(epoch, acc, samples=1000 * epoch)
        log.stop(success=accs[-1] >= threshold)
    rec = _rec(run_id, task=task, threshold=threshold, time_s=time_s, hardware=dict(A10G))
    rec["evaluations"] = [
        {"epoch": e, "train_time_s": time_s * e / len(accs), "metrics": {"top1": a}}
        for e, a in enumerate(accs, start=1)
    ]
    settle(rec)  # the claim from the curve: the time of its first evaluation at the target
    rec["status"] = "reached" if rec["time_to_accuracy"]["reached"] else "not_reached"
    rec["sidecars"]["mllog"] = "mllog.txt"
    write_record(folder, rec)
    return folder


def test_import_of_a_runs_own_mllog_is_listed_once(tmp_path, capsys):
    runs = tmp_path / "runs"
    run = _run_with_log(runs, "cifar10-20260101T000000-aaaa", 100.0, (0.5, 0.8, 0.95))
    other = _rec("cifar10-20260101T000100-bbbb", time_s=105.0)
    write_record(runs / other["run_id"], other)
    assert main(["import", "mlperf", str(run), "--out", str(runs)]) == 0
    imported = f"mlperf-cifar10-{run.name}-mllog"
    assert (runs / imported / "run.json").is_file()
    capsys.readouterr()
    assert main(["leaderboard", str(runs), "--json"]) == 0
    (board,) = json.loads(capsys.readouterr().out)["boards"]
    # before: the import (MLPerf's clock of the fake log, under a second) ranked 1st as well
    assert [(r["rank"], r["run_id"], r["value"]) for r in board["rows"]] == [
        (1, run.name, 100.0),
        (2, "cifar10-20260101T000100-bbbb", 105.0),
    ]
    (dup,) = board["duplicates"]
    assert (dup["run_id"], dup["same_as"]) == (imported, run.name)
    assert "run.json beside its log" in dup["evidence"]
    assert main(["leaderboard", str(runs)]) == 0
    out = capsys.readouterr().out
    assert f"note: {imported} is an import of {run.name}'s own mllog.txt" in out
    assert f"listed once, as {run.name}" in out and imported not in out.split("note:")[0]
    # the import alone (its run not given) is an entry like any other
    (board,) = leaderboard([load_record(runs / imported)], "training-time")
    assert [r.run_id for r in board.rows] == [imported] and board.duplicates == []


def test_real_h100_run_and_its_imported_mllog_are_one_entry(tmp_path, capsys):
    runs = tmp_path / "runs"
    run = extract_h100_run(runs)
    assert main(["import", "mlperf", str(run), "--out", str(runs)]) == 0
    capsys.readouterr()
    records = load_records([runs])
    assert len(records) == 2
    for by in ("training-time", "training-cost"):
        (board,) = leaderboard(records, by)
        assert _summary(board) == [(None, "DNC", run.name, None)]  # 84.5% < 94%, once
        assert [(d.run_id, d.same_as) for d in board.duplicates] == [
            (f"mlperf-cifar10-{run.name}-mllog", run.name)
        ]


def test_same_run_whatever_the_target_came_from_but_not_a_copy_of_the_log(tmp_path, capsys):
    """The importer records the run named by the run.json beside the log whatever the target:
    a task named like an MLPerf benchmark (resnet: top1 >= 0.759) takes MLPerf's target, and
    `--target` sets its own; both imports are their run. A copy of the log imported away from
    its run.json names no run: it is an entry of its own."""
    runs = tmp_path / "runs"
    run_a = _run_with_log(runs, "resnet-a", 100.0, (0.5, 0.8), task="resnet", threshold=0.759)
    run_b = _run_with_log(runs, "resnet-b", 90.0, (0.5, 0.8), task="resnet", threshold=0.759)
    away = tmp_path / "copy" / "mllog.txt"
    away.parent.mkdir()
    shutil.copy(run_a / "mllog.txt", away)
    assert main(["import", "mlperf", str(run_a), "--out", str(runs)]) == 0
    assert (
        main(["import", "mlperf", str(run_b), "--target", "resnet=0.759", "--out", str(runs)]) == 0
    )
    assert main(["import", "mlperf", str(away), "--out", str(runs)]) == 0
    capsys.readouterr()
    records = load_records([runs])
    (board,) = leaderboard(records, "training-time")
    assert [(r.rank, r.run_id) for r in board.rows] == [
        (1, "mlperf-resnet-copy-mllog"),  # MLPerf's clock of the fake log: under a second
        (2, "resnet-b"),
        (3, "resnet-a"),
    ]
    assert [(d.run_id, d.same_as) for d in board.duplicates] == [
        ("mlperf-resnet-resnet-a-mllog", "resnet-a"),
        ("mlperf-resnet-resnet-b-mllog", "resnet-b"),
    ]
    assert all("run.json beside its log" in d.evidence for d in board.duplicates)
    assert len(board.rows) + len(board.duplicates) == len(records) == 5


def test_import_against_another_target_stays_on_its_board_said_to_be_the_run(tmp_path, capsys):
    """`--target 0.8` on a cifar10 run's log: eval_accuracy >= 0.8, another board."""
    runs = tmp_path / "runs"
    run = _run_with_log(runs, "cifar10-20260101T000000-aaaa", 100.0, (0.5, 0.8, 0.95))
    assert main(["import", "mlperf", str(run), "--target", "cifar10=0.8", "--out", str(runs)]) == 0
    capsys.readouterr()
    imported = f"mlperf-cifar10-{run.name}-mllog"
    boards = leaderboard(load_records([runs]), "training-time")
    assert [(b.metric, [r.run_id for r in b.rows], b.duplicates) for b in boards] == [
        ("eval_accuracy", [imported], []),
        ("top1", [run.name], []),
    ]
    (note,) = boards[0].notes
    assert note.startswith(f"{imported} is an import of {run.name}'s own mllog.txt")
    assert note.endswith(f"{run.name} is on the {boards[1].target} board")
