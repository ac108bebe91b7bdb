"""Missing numbers in the Python API's tables are NaN, also where a whole column is missing
(docs/api.md: "a value that was not obtained is NaN ..., never 0"); text columns keep None.

Why a test of its own: pandas keeps a column of nothing but None as an object column of None,
so a `perfsuite.track` run (no train loss, no evaluation time) or a group that never reached
its target gave `None` where the same column of another run holds NaN.
"""

from __future__ import annotations

import math

import pytest

import perfsuite
from perfsuite.record import quantity, write_record
from tests.helpers import cpu_record

pytest.importorskip("pandas")


def _nan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def test_run_tables_have_nan_where_a_number_is_missing(make_record, tmp_path):
    rec = cpu_record(make_record, peak=1e11)  # 3.2e10 FLOP/s under a 1e11 roof: not over it
    rec["evaluations"] = [
        {"epoch": 1, "train_time_s": 1.0, "metrics": {"top1": 0.5}},
        {"epoch": 2, "train_time_s": 2.0, "metrics": {"top1": 0.6}},
    ]  # as perfsuite.track writes them: no train_loss, no eval_time_s
    write_record(tmp_path / "r", rec)
    run = perfsuite.open(tmp_path / "r")
    ep = run.epochs
    for col in ("train_loss", "eval_time_s", "epoch_time_s", "samples"):
        assert str(ep[col].dtype) == "float64", col
        assert ep[col].isna().all(), col
    assert ep["train_time_s"].tolist() == [1.0, 2.0]
    whole = run.roofline()["value"]
    assert whole["bound"] == "compute"  # the value column mixes numbers and text
    assert _nan(whole["over_roof"])  # under its roof: no over-roof ratio
    assert whole["frac_of_roof"] == pytest.approx(0.32)
    util = run.utilization()
    assert str(util["of_spec_peak"].dtype) == "float64" and util["of_spec_peak"].isna().all()
    assert util["of_measured_peak"].iloc[0] == pytest.approx(0.32)
    ops = run.ops
    assert str(ops["over_roof"].dtype) == "float64" and ops["over_roof"].isna().all()
    assert ops["flag"].tolist() == [None]  # text: None, not NaN


def test_run_roofline_without_roofs_is_nan_not_none(make_record, tmp_path):
    rec = cpu_record(make_record)
    why = "no cached measurement (not asked to measure) and no spec value"
    rec["ceilings"] = {
        "device": "Test CPU",
        "dtype": "float32",
        "peak_flops": quantity(None, "FLOP/s", "absent", why),
        "memory_bandwidth": quantity(None, "byte/s", "absent", why),
        "spec": None,
        "roofs": {},
    }
    write_record(tmp_path / "r", rec)
    run = perfsuite.open(tmp_path / "r")
    table = run.roofline()
    assert _nan(table.loc["peak_flops", "value"]) and _nan(table.loc["frac_of_roof", "value"])
    assert table.loc["memory_bandwidth", "provenance"] == "absent"
    assert table.loc["memory_bandwidth", "source"] == f"no bandwidth roof: {why}"
    assert any("ceilings missing: run `perfsuite peaks`" in n for n in run.notes)


def test_group_tables_have_nan_when_no_run_reached(make_record, tmp_path):
    for i in range(3):
        rec = make_record(
            [(1, 1.0 + i, 0.5), (2, 2.0 + i, 0.6)],
            threshold=0.9,
            run_id=f"r{i}",
            group={"id": "g", "index": i, "size": 3},
            throughput={"epoch_times_s": [1.0 + i, 1.0]},
        )
        write_record(tmp_path / "g" / f"r{i}", rec)
    group = perfsuite.open(tmp_path / "g")
    runs = group.runs
    assert runs["reached"].tolist() == [False, False, False]
    for col in ("time_to_accuracy_s", "epochs_to_threshold"):
        assert str(runs[col].dtype) == "float64" and runs[col].isna().all(), col
    groups = group.groups
    for col in ("time_to_accuracy_mean_s", "time_to_accuracy_cov", "epochs_to_threshold_mean"):
        assert str(groups[col].dtype) == "float64" and groups[col].isna().all(), col
    assert groups["n_reached"].tolist() == [0]
    assert groups["olympic_mean_reason"].notna().all()  # text stays text
