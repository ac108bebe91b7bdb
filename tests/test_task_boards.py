"""ImageNet and SQuAD on the leaderboard, cost and report views: targets shown as the tasks
state them (top-5 >= 93%, F1 >= 0.75), inference cost per 10,000 images or questions, and
imported DAWNBench entries ranked on the same board as our runs of the same task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite import fmt
from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.cli import main
from perfsuite.importers.dawnbench import load_entry
from perfsuite.importers.dawnbench_detect import TASKS
from perfsuite.record import new_record, quantity, write_record
from perfsuite.task_metrics import items, metric_text, target_text
from perfsuite.workloads import get_workload

ENTRIES = Path(__file__).parent / "fixtures" / "dawnbench" / "entries"
SQUAD = ("squad", "f1", 0.75)  # the squad workload's task, metric and threshold


def test_metric_and_target_text():
    assert [fmt.metric(v) for v in (0.93, 0.935, 0.9999, None)] == ["93%", "93.5%", "99.99%", "n/a"]
    assert fmt.metric(0.75, "score") == "0.75" and fmt.metric(0.7524, "score") == "0.7524"
    assert target_text("top5", 0.93) == "top-5 >= 93%"
    assert target_text("top1", 0.94) == "top-1 >= 94%"
    assert target_text("f1", 0.75) == "F1 >= 0.75"
    assert target_text("wer", 0.058, "lower") == "wer <= 0.058"
    assert metric_text("f1", 0.8) == "0.8"
    assert (items("imagenet"), items("squad"), items("other")) == ("images", "questions", "items")


def test_task_names_agree_between_workload_and_importer():
    wl = get_workload("imagenet")
    imported = TASKS["imagenet"]
    assert (wl.task, wl.metric, wl.default_threshold) == (
        imported.name,
        imported.metric,
        imported.threshold,
    )
    assert (TASKS["squad"].name, TASKS["squad"].metric, TASKS["squad"].threshold) == SQUAD


def _ours(run_id, task, metric, threshold, time_s, **fields):
    """A record as the runner writes it for our own run of `task`."""
    rec = new_record(run_id=run_id, task={"name": task, "metric": metric, "threshold": threshold})
    rec["evaluations"] = [
        {"epoch": 1, "train_time_s": time_s, "metrics": {metric: threshold + 0.001}}
    ]
    rec["time_to_accuracy"].update(reached=True, time_s=time_s, epoch=1, evaluation_index=0)
    rec["time_to_accuracy"]["provenance"] = "measured"
    rec["status"] = "reached"
    rec["model"], rec["framework"] = "ours", "pytorch 2.13.0"
    rec.update(fields)
    return rec


@pytest.fixture
def records():
    wl = get_workload("imagenet")
    target = (wl.task, wl.metric, wl.default_threshold)
    price = {"usd_per_hour": quantity(3.6, "USD/h", "spec", "given by --price")}
    inference = {
        "rule": "dawnbench",
        "latency": quantity(0.002, "s", "measured"),
        "metrics": {"top5": 0.94},
    }
    return [
        load_entry(ENTRIES / "ImageNet/train/normal_resnet50.json").record,  # 9,000 s
        load_entry(ENTRIES / "SQuAD/train/normal_drqa.json").record,  # 4,500 s
        load_entry(ENTRIES / "SQuAD/inference/bidaf_infer.json").record,
        _ours("ours-imagenet", *target, 5000.0, cost=price, inference=inference),
        _ours("ours-squad", *SQUAD, 6000.0),
        _ours(
            "ours-synthetic",
            *target,
            100.0,
            data={"kind": "synthetic", "stall_time": quantity(0.0, "s", "measured")},
        ),
    ]


def _rows(board):
    return [(r.rank, r.status, r.run_id, r.source) for r in board.rows]


def test_dawnbench_entries_rank_beside_our_runs(records):
    imagenet, squad = leaderboard(records, "training-time")
    assert (imagenet.task, imagenet.target, imagenet.unit) == ("imagenet", "top-5 >= 93%", "s")
    assert _rows(imagenet) == [
        (1, "ranked", "ours-imagenet", "perfsuite"),
        (2, "ranked", "dawnbench-imagenet-train-normal_resnet50", "dawnbench"),
        (None, "n/a", "ours-synthetic", "perfsuite"),
    ]
    assert imagenet.rows[2].note.startswith("synthetic data")
    assert squad.target == "F1 >= 0.75"
    assert _rows(squad) == [
        (1, "ranked", "dawnbench-squad-train-normal_drqa", "dawnbench"),
        (2, "ranked", "ours-squad", "perfsuite"),
    ]


def test_inference_cost_units_per_task(records):
    imagenet, squad = leaderboard(records, "inference-cost")
    assert imagenet.unit == "USD per 10,000 images"
    assert squad.unit == "USD per 10,000 questions"
    # ours: 0.002 s x 10,000 / 3600 x 3.6 USD/h; DAWNBench: 0.000158 USD per question x 10,000
    assert imagenet.rows[0].value == pytest.approx(0.02)
    assert squad.rows[0].value == pytest.approx(1.58)
    c = cost_of(records[2], {})
    assert (c.target, c.items) == ("F1 >= 0.75", "questions")


def test_cli_views_show_targets_and_units(records, tmp_path, capsys):
    for rec in records:
        write_record(tmp_path / rec["run_id"], rec)
    assert main(["leaderboard", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    heads = [line for line in out.splitlines() if line.startswith("== ")]
    assert any(h.startswith("== imagenet: top-5 >= 93%,") and "training-time" in h for h in heads)
    assert any(h.startswith("== squad: F1 >= 0.75,") and "training-time" in h for h in heads)
    assert main(["leaderboard", str(tmp_path), "--by", "inference-cost", "--json"]) == 0
    boards = json.loads(capsys.readouterr().out)["boards"]
    assert [(b["task"], b["unit"]) for b in boards] == [
        ("imagenet", "USD per 10,000 images"),
        ("squad", "USD per 10,000 questions"),
    ]
    assert main(["cost", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "top-5 >= 93%" in out and "F1 >= 0.75" in out
    assert "$1.58 per 10k questions" in out and "$0.02 per 10k images" in out


def test_report_summary_states_targets(records, tmp_path):
    from perfsuite.report.build import report_html

    html = report_html(records[:2])
    assert "top-5 &gt;= 93%" in html and "F1 &gt;= 0.75" in html
    assert "fig-compare-curves-1" in html  # top-5 and F1 curves get a figure each
