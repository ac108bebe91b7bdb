"""A real `perfsuite run digits` record in the history: its series key, its commit (the run
started in this checkout), its metrics, and `run --history` adding it when it ends."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from perfsuite.analyzers.history.records import metrics, rows_of, series_key
from perfsuite.cli import build_parser
from perfsuite.cli.run_cmd import _add_to_history
from perfsuite.history_store.store import open_store
from perfsuite.record import load_record, qvalue

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_a_real_run_gives_its_rows(digits_cli_run) -> None:
    record = load_record(digits_cli_run)
    key = series_key(record)
    assert (key["task"], key["workload"], key["framework"]) == ("digits", "digits", "pytorch")
    assert (key["recipe"], key["switches"], key["precision"]) == ("default", "none", "float32")
    assert key["device"] == record["hardware"]["name"]
    values = metrics(record)
    assert values["time_to_accuracy_s"] == record["time_to_accuracy"]["time_s"]
    assert values["step_time_s"] == qvalue(record["throughput"]["step_time"])
    assert values["samples_per_s"] == qvalue(record["throughput"]["samples_per_s"])
    assert values["latency_s"] == qvalue(record["inference"]["latency"])
    assert "mfu" not in values  # digits has no transformer FLOP model
    rows = rows_of(record)
    assert {r.metric for r in rows} == set(values)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if head.returncode == 0:
        assert rows[0].attributes["commit"] == head.stdout.strip()
    assert rows[0].attributes["batch_size"] == str(record["config"]["recipe_values"]["batch_size"])


def test_run_history_flag_adds_the_finished_run(digits_cli_run, tmp_path) -> None:
    db = tmp_path / "h.sqlite"
    parser = build_parser()
    assert parser.parse_args(["run", "digits"]).history is None
    assert parser.parse_args(["run", "digits", "--history"]).history == ""
    args = parser.parse_args(["run", "digits", "--history", str(db)])
    _add_to_history(args, [digits_cli_run])
    _add_to_history(args, [digits_cli_run])
    with open_store(str(db)) as store:
        assert store.count() == len(rows_of(load_record(digits_cli_run)))
