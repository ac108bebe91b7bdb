"""Versioned records: an older record is migrated to the current shape once, at load
(perfsuite/record/migrate.py), validates as a current one and gives the analysis figures the
readers gave it before they lost their branches for older shapes; a newer record is refused in
one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.results.inference import OLDER_RULE, inference_view
from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.analyzers.runs.stability import stability
from perfsuite.record import (
    SCHEMA_VERSION,
    RecordError,
    load_record,
    load_records,
    quantity,
    validate_record,
    write_record,
)
from perfsuite.record.io import strip_private
from perfsuite.record.migrate import migrate

# Figures of the version-1 records below as the analyzers computed them while they still read
# version-1 shapes themselves (the MLPerf olympic mean: 14.5 min, tests/test_stability_mlperf).
OLDER_LATENCY_S = 0.002
OLDER_COST_PER_10K_USD = 0.002 * 10_000 / 3600 * 3.6
OLDER_NOTE = "older rule: median of a few batch-1 calls of the last model, not the mean"
UNET3D_OLYMPIC_S = 14.5 * 60


def _write_v1(folder: Path, rec: dict) -> Path:
    """`rec` written as a version-1 file: plain JSON, as a version-1 writer left it."""
    folder.mkdir(parents=True, exist_ok=True)
    rec = {**strip_private(rec), "schema_version": 1}
    (folder / "run.json").write_text(json.dumps(rec), encoding="utf-8")
    return folder / "run.json"


def _write_v2(folder: Path, rec: dict) -> Path:
    """`rec` written as a version-2 file, as a version-2 writer left it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(strip_private(rec)), encoding="utf-8")
    return folder / "run.json"


def _older_inference_record(make_record) -> dict:
    """A perfsuite record of version 1 whose inference section names no rule: it measured
    the median of a few batch-1 calls."""
    rec = make_record([(1, 10.0, 0.95)], threshold=0.9)
    rec["inference"] = {"latency": quantity(OLDER_LATENCY_S, "s", "measured"), "metrics": {}}
    rec["inference"]["metrics"]["top1"] = 0.95
    rec["cost"] = {"usd_per_hour": quantity(3.6, "USD/h", "spec", "test")}
    return rec


def test_current_version_is_5():
    assert SCHEMA_VERSION == 5


def test_a_version_1_inference_record_loads_migrated_with_the_same_figures(tmp_path, make_record):
    path = _write_v1(tmp_path / "r1", _older_inference_record(make_record))
    rec = load_record(path)
    assert rec["schema_version"] == SCHEMA_VERSION and rec["_migrated_from"] == 1
    assert rec["inference"]["rule"] == OLDER_RULE == "older rule"
    view = inference_view(rec)
    assert (view.rule, view.latency_s, view.note) == (OLDER_RULE, OLDER_LATENCY_S, OLDER_NOTE)
    c = cost_of(rec, {})
    assert c.inference_rule == OLDER_RULE and c.inference_p50_s is None
    assert c.inference_cost_per_10k_usd == pytest.approx(OLDER_COST_PER_10K_USD)
    (board,) = leaderboard([rec], "inference-latency")
    assert board.rows[0].note.startswith("older rule")
    # the file itself is untouched: migration is at load
    assert json.loads(path.read_text())["schema_version"] == 1


def test_a_migrated_record_validates_and_is_written_as_the_current_version(tmp_path, make_record):
    path = _write_v1(tmp_path / "r1", _older_inference_record(make_record))
    rec = load_record(path)
    validate_record(strip_private(rec), "migrated")
    write_record(path.parent, rec)
    on_disk = json.loads(path.read_text())
    assert on_disk["schema_version"] == SCHEMA_VERSION and "_migrated_from" not in on_disk
    assert on_disk["inference"]["rule"] == "older rule"
    assert "_migrated_from" not in load_record(path)  # current now: nothing to migrate


def test_the_current_schema_requires_the_rule_a_version_1_record_lacked(make_record):
    rec = _older_inference_record(make_record)  # current, as a writer would make it
    with pytest.raises(RecordError, match=r"^x: field inference: 'rule' is a required"):
        validate_record(rec, "x")


def test_a_version_1_imported_inference_follows_its_own_rule(make_record):
    rec = _older_inference_record(make_record)
    rec["source"] = {"kind": "dawnbench"}
    rec["schema_version"] = 1
    assert migrate(rec)["inference"]["rule"] == "imported"
    assert inference_view(rec).rule == "imported"


def test_a_version_1_not_measured_section_and_a_dawnbench_rule_are_kept(make_record):
    rec = make_record([(1, 1.0, 0.5)])
    rec["schema_version"] = 1
    rec["inference"] = {"rule": "dawnbench", "not_measured": "did not reach", "batch_size": 1}
    assert migrate(rec)["inference"]["rule"] == "dawnbench"
    rec = make_record([(1, 1.0, 0.5)])
    rec["schema_version"] = 1
    assert "inference" not in migrate(rec) or not rec["inference"]


def test_version_1_mlperf_imports_get_their_benchmarks_olympic_rule(tmp_path):
    from perfsuite.importers.mlperf import discover, load_result, score_folders
    from tests.test_import_mlperf_rules import _folder
    from tests.test_stability_mlperf import UNET3D_MINUTES

    items = [load_result(p) for p in discover([_folder(tmp_path, "unet3d", 0.908, UNET3D_MINUTES)])]
    score_folders(items)
    for i, it in enumerate(items):
        rec = it.record
        del rec["extra"]["mlperf"]["dropped_each_end"]  # version 1 importers did not store it
        _write_v1(tmp_path / "runs" / f"r{i}", rec)
    recs = load_records([tmp_path / "runs"])
    assert {r["extra"]["mlperf"]["dropped_each_end"] for r in recs} == {4}
    (g,) = stability(recs)
    assert g.olympic_rule == "MLPerf unet3d" and g.olympic_mean.dropped == 4
    assert g.olympic_mean.value == pytest.approx(UNET3D_OLYMPIC_S)
    rec = {"schema_version": 1, "source": {"kind": "mlperf"}, "task": {"name": "resnet"},
           "extra": {"mlperf": {"round": "4.0"}}}  # fmt: skip
    assert migrate(rec)["extra"]["mlperf"]["dropped_each_end"] == 1


def test_a_record_newer_than_the_code_is_refused_in_one_line(tmp_path, make_record):
    rec = make_record([(1, 1.0, 0.95)])
    rec["schema_version"] = SCHEMA_VERSION + 1
    rec["a_field_of_the_future"] = {"x": 1}
    (tmp_path / "run.json").write_text(json.dumps(rec), encoding="utf-8")
    with pytest.raises(RecordError) as err:
        load_record(tmp_path)
    message = str(err.value)  # one line naming the file, the field and both versions
    assert message.startswith(f"{tmp_path / 'run.json'}: field schema_version: ")
    assert f"{SCHEMA_VERSION + 1} is newer" in message and f"({SCHEMA_VERSION})" in message
    assert "\n" not in message and message.endswith("upgrade perfsuite")


def test_a_value_that_is_no_record_is_left_to_validation():
    assert migrate([1]) == [1]
    assert migrate({"schema_version": "1"}) == {"schema_version": "1"}
    with pytest.raises(RecordError, match="field schema_version: '1' is not an integer"):
        validate_record({"schema_version": "1"}, "x")


# -- version 2 -> 3: framework, math and counters.tensor_unmeasured are filled at load ------


def _v2(make_record) -> dict:
    """A version-2 record as its writers left it: no `math`, the framework named only in
    `environment`."""
    rec = make_record([(1, 10.0, 0.95)], threshold=0.9)
    rec["schema_version"] = 2
    rec.pop("math", None)
    rec["framework"] = None
    rec["environment"] = {"frameworks": {"torch": "1.10.2+cu113"}}
    return rec


def test_a_version_2_record_gets_its_framework_from_the_environment(tmp_path, make_record):
    from perfsuite.analyzers.results.record_view import framework

    rec = load_record(_write_v2(tmp_path / "r2", _v2(make_record)))
    assert rec["_migrated_from"] == 2 and rec["framework"] == "pytorch 1.10.2+cu113"
    assert framework(rec) == "pytorch 1.10.2+cu113"
    older = _v2(make_record)
    older["environment"] = {"framework": {"name": "tensorflow", "version": "2.21.0"}}
    assert framework(migrate(older)) == "tensorflow 2.21.0"
    older = _v2(make_record)  # two training libraries and no word on which trained
    older["environment"] = {"frameworks": {"torch": "2.1", "tensorflow": "2.15"}}
    assert migrate(older)["framework"] is None and framework(older) == "unknown"
    kept = {**_v2(make_record), "framework": "jax 0.4"}
    assert migrate(kept)["framework"] == "jax 0.4"


def test_a_version_2_record_without_math_gets_the_assumed_defaults(tmp_path, make_record):
    from perfsuite.devices.maths import from_policy, math_section

    rec = load_record(_write_v2(tmp_path / "r2", _v2(make_record)))
    math = math_section(rec)
    assert (math["provenance"], math["torch"]) == ("assumed", "1.10.2+cu113")
    assert math["source"].startswith("assumed PyTorch 1.10 defaults")
    # PyTorch 1.7-1.11 ran fp32 matmuls in TF32 by default: the roof the analyses pick
    assert from_policy("matmul", math, "cuda").math == "tf32"
    half = _v2(make_record)
    half["environment"] = {}
    half["ceilings"] = {"dtype": "bfloat16"}
    math = migrate(half)["math"]
    assert (math["torch"], math["autocast_dtype"]) == (None, "bfloat16")
    assert from_policy("matmul", math, "cuda").math == "bf16"
    written = {**_v2(make_record), "math": {"source": "read from torch at run time"}}
    assert migrate(written)["math"] == {"source": "read from torch at run time"}


def test_version_2_counters_get_the_precisions_they_left_unmeasured():
    from perfsuite.analyzers.roofline.measured import unmeasured_precisions

    by_prec = {"fp16": 0.0, "bf16": None, "tf32": 5.0, "fp8": None, "fp64": 0.0}

    def section(cc: str | None) -> dict:
        counters = {"device": {"cc": cc}, "totals": {"flops_tensor_by_precision": by_prec}}
        return migrate({"schema_version": 2, "counters": counters})["counters"]

    assert unmeasured_precisions(section("8.6")) == ["bf16"]  # Ampere: no fp8 to miss
    assert unmeasured_precisions(section("9.0")) == ["bf16", "fp8"]
    assert unmeasured_precisions(section("7.5")) == []  # Turing: fp16 only, measured
    assert unmeasured_precisions(section(None)) == ["bf16", "fp8"]
    kept = {"schema_version": 2, "counters": {"tensor_unmeasured": ["fp64"], "totals": {}}}
    assert migrate(kept)["counters"]["tensor_unmeasured"] == ["fp64"]


def test_imports_write_the_assumed_math_of_the_current_version():
    from perfsuite.importers.dawnbench import load_entry

    path = Path(__file__).parent / "fixtures" / "dawnbench" / "entries" / "CIFAR10" / "train"
    rec = load_entry(path / "normal_resnet9.json").record
    assert rec["schema_version"] == SCHEMA_VERSION
    math = rec["math"]  # the result names no math: PyTorch's defaults, labeled assumed
    assert (math["provenance"], math["torch"]) == ("assumed", None)
    assert math["source"].startswith("assumed PyTorch >= 1.12 defaults")


def test_version_2_calibrations_without_a_basis_say_their_older_rule():
    from perfsuite.analyzers.roofline.measured import calibration_text

    cal = {"precisions": {"tf32": True, "bf16": False}, "device_cc": "9.0"}
    counters = {"device": {"name": "NVIDIA H200", "cc": "9.0"}, "calibrated": cal}
    basis = migrate({"schema_version": 2, "counters": counters})["counters"]["calibrated"]["basis"]
    assert "older rule" in basis and "cc 9.0" in basis and basis.endswith("NVIDIA H200")
    assert calibration_text(counters).startswith("calibration: tf32 calibrated;")
    kept = {"precisions": {}, "basis": "the reference chip (X)"}
    migrate({"schema_version": 2, "counters": {"calibrated": kept}})
    assert kept["basis"] == "the reference chip (X)"


def _v3_ceilings(dtype: str = "bfloat16") -> dict:
    """A version-3 `ceilings` as its writers left it: one peak (of `dtype`) and a bandwidth, no
    `roofs`, the threads named only in the measured peak's source."""
    src = "matmul n=2048, 2n^3/t; torch 2.5.0, threads 4, load 0.10"
    return {
        "device": "Test CPU",
        "dtype": dtype,
        "peak_flops": quantity(2e11, "FLOP/s", "measured", src),
        "memory_bandwidth": quantity(1e10, "byte/s", "spec", "datasheet"),
        "spec": None,
    }


def test_version_3_ceilings_get_their_roofs_and_measured_threads(tmp_path, make_record):
    from perfsuite.analyzers.roofline.above_roof import measured_threads
    from perfsuite.devices.roofs import record_roofs

    rec = {**make_record([(1, 10.0, 0.95)], threshold=0.9), "schema_version": 3}
    rec["ceilings"] = _v3_ceilings()
    rec = load_record(_write_v2(tmp_path / "r3", rec))
    assert rec["_migrated_from"] == 3
    roofs = record_roofs(rec["ceilings"])
    assert sorted(roofs) == ["bf16", "memory"]  # the dtype's math, and memory
    assert roofs["bf16"]["peak_flops"]["value"] == 2e11
    assert roofs["memory"]["bandwidth"]["value"] == 1e10
    assert measured_threads(roofs["bf16"]["peak_flops"]) == 4
    assert measured_threads(rec["ceilings"]["peak_flops"]) == 4
    assert "measured_under" not in roofs["memory"]["bandwidth"]  # spec: no threads
    # roofs a version-3 writer kept are kept; the single peak only fills a missing math
    kept = {"schema_version": 3, "ceilings": _v3_ceilings("float32")}
    own = quantity(5e11, "FLOP/s", "spec", "datasheet")
    kept["ceilings"]["roofs"] = {"fp32": {"peak_flops": own}}
    roofs = migrate(kept)["ceilings"]["roofs"]
    assert roofs["fp32"]["peak_flops"] is own and roofs["memory"]["bandwidth"]["value"] == 1e10
    # a measured quantity that already says its threads keeps them
    said = {"schema_version": 3, "ceilings": _v3_ceilings()}
    said["ceilings"]["peak_flops"]["measured_under"] = {"threads": 8, "size": 2048}
    peak = migrate(said)["ceilings"]["roofs"]["bf16"]["peak_flops"]
    assert peak["measured_under"] == {"threads": 8, "size": 2048}
    assert migrate({"schema_version": 3, "ceilings": None})["ceilings"] is None


def test_version_4_config_keep_going_is_all_epochs(tmp_path, make_record):
    from perfsuite.record.tta import stopped_at_target

    rec = {**make_record([(1, 5.0, 0.91)], threshold=0.9), "schema_version": 4}
    rec["config"] = {"epochs": 5, "keep_going": True}
    rec = load_record(_write_v2(tmp_path / "r4", rec))
    assert rec["_migrated_from"] == 4
    assert rec["config"] == {"epochs": 5, "all_epochs": True}
    assert stopped_at_target(rec) is None  # it trained on past the target: read as such
    both = {"schema_version": 4, "config": {"keep_going": True, "all_epochs": False}}
    assert migrate(both)["config"] == {"all_epochs": False}
    assert migrate({"schema_version": 4, "config": None})["config"] is None
