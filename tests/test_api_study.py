"""perfsuite.open on a study folder: the tables equal `perfsuite study show --json`."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from perfsuite.record import RecordError

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def _same(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return a == pytest.approx(b, rel=1e-12) if isinstance(b, float) else a == b


def test_study_tables_equal_study_show_json(tmp_path, digits_lesion_study, monkeypatch, capsys):
    import perfsuite
    from perfsuite.cli import main

    # The study's runs are made once per session from its study file (tests/conftest.py), a
    # copy here since this test breaks its study.json. The command line below is the same
    # study: on the copy it finds every run made and runs none (a study that differs in any
    # field is refused, exit 2), then prints it as a fresh one would
    made, proc = digits_lesion_study
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "study"
    shutil.copytree(made, out)
    made_runs = sorted(p.relative_to(out) for p in out.glob("configs/*/*/run.json"))
    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path / "cache"))
    code = main(
        ["study", "lesion", "digits", "--opts", "channels_last", "--threshold", "0.5",
         "--epochs", "1", "--no-capture", "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err[-2000:]
    assert sorted(p.relative_to(out) for p in out.glob("configs/*/*/run.json")) == made_runs
    capsys.readouterr()
    assert main(["study", "show", str(out), "--json"]) == 0
    want = json.loads(capsys.readouterr().out)["study"]
    study = perfsuite.open(out)
    assert type(study).__name__ == "Study"
    assert (
        list(study.configs["config"])
        == [c["name"] for c in want["configs"]]
        == [
            "full",
            "-channels_last",
        ]
    )
    for row, c in zip(study.configs.to_dict("records"), want["configs"], strict=True):
        assert _same(row["time_to_accuracy_mean_s"], c["time_to_accuracy"]["mean"])
        assert _same(row["epoch_time_mean_s"], c["epoch_time"]["mean"])
        assert _same(row["tta_speedup"], c["tta_speedup"])
        assert _same(row["throughput_speedup"], c["throughput_speedup"])
        assert row["status"] == c["status"] and row["n_runs"] == c["n_runs"] == 1
        assert row["switches"] == ",".join(c["switches"])
    runs = study.runs.to_dict("records")
    want_runs = [(c["name"], r) for c in want["configs"] for r in c["runs"]]
    assert len(runs) == len(want_runs) == 2
    for row, (name, r) in zip(runs, want_runs, strict=True):
        assert row["config"] == name and row["run_id"] == r["run_id"]
        assert _same(row["time_to_accuracy_s"], r["time_s"])
        assert _same(row["samples_per_s"], r["samples_per_s"])
    # the study.json itself opens the same study; a broken manifest is one line
    assert perfsuite.open(out / "study.json").result.study_id == want["study_id"]
    (out / "study.json").write_text("{}")
    with pytest.raises(RecordError, match=r"study\.json"):
        perfsuite.open(out)
