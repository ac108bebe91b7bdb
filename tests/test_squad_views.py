"""F1 tasks in the leaderboard, cost and report views: named F1, threshold as a fraction, on
the same board as DAWNBench's imported SQuAD entries."""

from __future__ import annotations

from pathlib import Path

from perfsuite.cli import main
from perfsuite.importers.dawnbench import load_entry
from perfsuite.record import load_record, new_record, write_record
from perfsuite.task_metrics import metric_text, target_text

SQUAD_ENTRY = (
    Path(__file__).parent / "fixtures" / "dawnbench" / "entries" / "SQuAD/train/normal_drqa.json"
)


def test_targets_in_each_tasks_unit() -> None:
    assert target_text("f1", 0.75) == "F1 >= 0.75"
    assert target_text("top1", 0.94) == "top-1 >= 94%"
    assert target_text("top5", 0.93) == "top-5 >= 93%"
    assert target_text("wer", 0.058, "lower") == "wer <= 0.058"  # unknown metric: as recorded
    assert metric_text("f1", 0.0735932) == "0.0735932"
    assert metric_text("exact_match", 0.5) == "50%"


def _our_squad_run(tmp_path: Path) -> dict:
    rec = new_record(run_id="ours", task={"name": "squad", "metric": "f1", "threshold": 0.75})
    rec["evaluations"] = [{"epoch": 1, "train_time_s": 7200.0, "metrics": {"f1": 0.76}}]
    rec["time_to_accuracy"].update(reached=True, time_s=7200.0, epoch=1, evaluation_index=0)
    rec["status"] = "reached"
    rec["model"], rec["framework"] = "reader", "pytorch 2.13.0"
    write_record(tmp_path / "ours", rec)
    return rec


def test_leaderboard_ranks_our_squad_run_beside_the_dawnbench_import(tmp_path, capsys) -> None:
    _our_squad_run(tmp_path)
    imported = load_entry(SQUAD_ENTRY).record  # reaches 0.75 F1 at 4,500 s
    write_record(tmp_path / imported["run_id"], imported)
    assert main(["leaderboard", str(tmp_path), "--task", "squad"]) == 0
    out = capsys.readouterr().out
    assert "== squad: F1 >= 0.75, ranked by training-time" in out
    assert "top-1" not in out and "%" not in out.splitlines()[0]
    lines = [ln for ln in out.splitlines() if ln.lstrip().startswith(("1 ", "2 "))]
    assert imported["run_id"] in lines[0] and "ours" in lines[1]  # 4,500 s before 7,200 s


def test_cost_table_names_the_f1_target(tmp_path, capsys) -> None:
    _our_squad_run(tmp_path)
    assert main(["cost", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.startswith("ours"))
    assert "squad" in row and "F1 >= 0.75" in row and "top-1" not in out


def test_run_outcome_line_says_f1(tmp_path) -> None:
    from perfsuite.runner.launch.executor import outcome

    rec = _our_squad_run(tmp_path)
    assert load_record(tmp_path / "ours")["task"]["metric"] == rec["task"]["metric"]
    said = outcome(tmp_path / "ours")
    assert said.startswith("reached F1 >= 0.75") and "7200.00 s (epoch 1)" in said
