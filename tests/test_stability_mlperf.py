"""`perfsuite stability` on imported MLPerf runs: the benchmark's own olympic rule (unet3d drops
4 runs at each end, as MLPerf's result summarizer and the import's folder score do), stored in
each imported record and named in the output; the generic rule (1 at each end) elsewhere."""

from __future__ import annotations

import json

import pytest

from perfsuite.analyzers.runs.stability import olympic_rule, stability
from perfsuite.cli import main
from perfsuite.importers.mlperf import discover, load_result
from perfsuite.importers.mlperf_score import score_folders
from perfsuite.record import load_record, validate_record
from tests.test_import_mlperf_rules import _folder

# 10 unet3d runs in minutes, the last one aborted (did not converge: the slowest).
# MLPerf's rule (4 dropped at each end): sorted 10..17, 30, DNC -> keep 14, 15 -> 14.5 min.
# The generic rule (1 at each end) would keep 11..17 and 30 -> 16 min.
UNET3D_MINUTES: list[float | None] = [12.0, 30.0, 10.0, 15.0, 17.0, 11.0, None, 16.0, 13.0, 14.0]
UNET3D_OLYMPIC_S = 14.5 * 60
GENERIC_OLYMPIC_S = 16.0 * 60


def _records(tmp_path, benchmark="unet3d", target=0.908, minutes=UNET3D_MINUTES):
    items = [load_result(p) for p in discover([_folder(tmp_path, benchmark, target, minutes)])]
    scores = score_folders(items)  # sets each record's group, as `perfsuite import` does
    return [it.record for it in items], scores


def test_imported_records_store_the_benchmarks_rule(tmp_path):
    recs, _ = _records(tmp_path / "u")
    for rec in recs:
        validate_record(rec)
        assert rec["extra"]["mlperf"]["dropped_each_end"] == 4
    resnet, _ = _records(tmp_path / "r", "resnet", 0.759, [10.0, 11.0, 12.0])
    assert {r["extra"]["mlperf"]["dropped_each_end"] for r in resnet} == {1}


def test_stability_applies_mlperfs_unet3d_rule(tmp_path):
    recs, (score,) = _records(tmp_path)
    (g,) = stability(recs)
    assert (g.n_runs, g.n_reached) == (10, 9)
    assert g.olympic_rule == "MLPerf unet3d" and g.olympic_mean.dropped == 4
    assert g.olympic_mean.value == pytest.approx(UNET3D_OLYMPIC_S)
    assert list(g.olympic_mean.kept) == pytest.approx([14 * 60.0, 15 * 60.0])
    # the same figure as the import's own folder score (minutes there)
    assert g.olympic_mean.value == pytest.approx(score["olympic_mean_min"] * 60)
    assert not any("olympic" in w for w in g.warnings)


def test_stability_cli_says_which_rule_it_applied(tmp_path, capsys):
    folder = _folder(tmp_path / "logs", "unet3d", 0.908, UNET3D_MINUTES)
    out = tmp_path / "runs"
    assert main(["import", "mlperf", str(folder), "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    assert main(["stability", str(out), "--json"]) == 0
    (g,) = json.loads(capsys.readouterr().out)["groups"]
    assert g["olympic_rule"] == "MLPerf unet3d"
    assert g["olympic_mean"]["dropped"] == 4
    assert g["olympic_mean"]["value"] == pytest.approx(UNET3D_OLYMPIC_S)
    assert main(["stability", str(out)]) == 0
    text = capsys.readouterr().out
    olympic = next(line for line in text.splitlines() if "olympic mean (" in line)
    assert "MLPerf unet3d rule" in olympic and olympic.endswith("14m30s")
    # the stored record keeps the rule
    rec = load_record(next(out.glob("*/run.json")))
    assert rec["extra"]["mlperf"]["dropped_each_end"] == 4


def test_other_benchmarks_and_mixed_groups_keep_the_generic_rule(tmp_path, make_record):
    resnet, _ = _records(tmp_path / "r", "resnet", 0.759, [10.0, 11.0, 12.0, 13.0, 20.0])
    (g,) = stability(resnet)
    assert g.olympic_rule == "generic" and g.olympic_mean.dropped == 1
    assert g.olympic_mean.value == pytest.approx(12.0 * 60)

    recs, _ = _records(tmp_path / "u")
    assert olympic_rule(recs) == (4, "MLPerf unet3d")
    # one record of the group is not an MLPerf import: the generic rule, and a warning
    mine = make_record([(1, 600.0, 0.95)], run_id="mine", group=recs[0]["group"])
    mine["task"] = dict(recs[0]["task"])
    mine["status"] = "reached"
    mixed = [*recs, mine]
    assert olympic_rule(mixed) == (1, "generic")
    (g,) = stability(mixed)
    assert g.olympic_rule == "generic" and g.olympic_mean.dropped == 1
    assert any("generic rule" in w and "10 of 11 runs" in w and "unet3d" in w for w in g.warnings)


def test_unet3d_rule_needs_nine_runs(tmp_path):
    recs, _ = _records(tmp_path, minutes=[10.0, 11.0, 12.0, 13.0, 14.0])
    (g,) = stability(recs)
    assert g.olympic_rule == "MLPerf unet3d" and g.olympic_mean.value is None
    undefined = next(w for w in g.warnings if w.startswith("olympic mean undefined"))
    assert "at least 9 runs" in undefined and undefined.endswith("got 5")
