"""One engine, two routes: the same loop (tests/fixtures/blobs_loop.py) through `perfsuite run
FILE.py:Class` and through `perfsuite.track` gives records with the same fields and the same
time-to-accuracy, and stops the same way when its loss turns NaN."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from perfsuite.record import load_record  # noqa: E402
from perfsuite.record.tta import record_crossing  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.runner.engine.engine import Diverged  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "blobs_loop.py"

pytestmark = pytest.mark.usefixtures("private_cache")

# Keys whose children are data, not fields (environment variables set, phases that ran).
DATA_MAPS = {"environment.perf_env", "extra.setup_s", "evaluations.metrics"}
# What one route has by its nature, each with why; everything else must match (the math
# policy, the machine check around the window, ... are written by both).
RUN_ONLY = {
    "config": "the route's options: RunOptions of `perfsuite run` (a track has its own)",
    "switches": "the optimization switches `perfsuite run` applies to a workload's recipe",
    "sidecars.mllog": "the MLPerf log of a workload's recipe (seed, lr, batch): a user's loop "
    "has no recipe to log",
    "extra.lr_at_epoch_start": "the schedule the runner steps (a track's loop steps its own, "
    "unseen)",
    "extra.steps_per_epoch": "the workload's planned steps; a user's loop plans none (its "
    "epochs may differ in length)",
}
TRACK_ONLY = {
    "config": "the route's options: track(...)'s",
    "work.counted_on": "which call of the user's step was counted (the runner counts a batch "
    "of its own, off the training stream)",
    "timeline.batch": "which call of the user's step the window replayed (the runner's window "
    "draws batches of its own)",
    "timeline.note": "the window replays one call of the user's step",
    "evaluations.train_loss_epoch": "a loop may evaluate inside an epoch, so beside the loss "
    "since the previous evaluation a track keeps the epoch's so far (the runner evaluates "
    "between epochs: its train_loss is the epoch's)",
}


def fields(obj: Any, prefix: str = "") -> set[str]:
    """Dotted paths of every key in a record, recursively (a list's dicts as one)."""
    out: set[str] = set()
    if isinstance(obj, list):
        for item in obj:
            out |= fields(item, prefix)
    if not isinstance(obj, dict) or prefix.rstrip(".") in DATA_MAPS:
        return out
    for key, value in obj.items():
        if key.startswith("_"):  # what load_record adds
            continue
        out.add(prefix + key)
        out |= fields(value, f"{prefix}{key}.")
    return out


def _route_only(paths: set[str], listed: dict[str, str]) -> set[str]:
    return {p for p in paths if not any(p == k or p.startswith(k + ".") for k in listed)}


def _run(out: Path, workload: str = f"{FIXTURE}:Blobs", **options: Any) -> dict[str, Any]:
    opts = RunOptions(
        workload=workload,
        out=str(out),
        progress=False,
        measure_peaks=False,
        inference_repeats=0,
        profile_seconds=0.0,
        **options,
    )
    return load_record(run_workload(opts))


def _track(out: Path, **options: Any) -> Path:
    sys.path.insert(0, str(FIXTURE.parent))
    try:
        from blobs_loop import track_loop
    finally:
        sys.path.pop(0)
    return track_loop(out, measure_peaks=False, **options)


def assert_same_fields(a: dict[str, Any], b: dict[str, Any]) -> None:
    ka, kb = fields(a), fields(b)
    assert sorted(_route_only(ka - kb, RUN_ONLY)) == []
    assert sorted(_route_only(kb - ka, TRACK_ONLY)) == []


def assert_same_tta(a: dict[str, Any], b: dict[str, Any]) -> None:
    for rec in (a, b):  # the record's section is the one rule applied to its evaluations
        crossing = record_crossing(rec)
        tta = rec["time_to_accuracy"]
        assert (tta["reached"], tta["epoch"]) == (crossing.reached, crossing.epoch)
        assert (tta["time_s"], tta["evaluation_index"]) == (
            crossing.time_s,
            crossing.evaluation_index,
        )
    ta, tb = a["time_to_accuracy"], b["time_to_accuracy"]
    assert ta.keys() == tb.keys()
    assert {k: v for k, v in ta.items() if k != "time_s"} == {
        k: v for k, v in tb.items() if k != "time_s"
    }
    assert a["status"] == b["status"] == ("reached" if ta["reached"] else "not_reached")
    same = ("metric", "threshold", "direction")
    assert [a["task"][k] for k in same] == [b["task"][k] for k in same]
    assert [e["epoch"] for e in a["evaluations"]] == [e["epoch"] for e in b["evaluations"]]
    assert [e["metrics"] for e in a["evaluations"]] == [e["metrics"] for e in b["evaluations"]]


def test_the_same_loop_both_ways_gives_the_same_fields_and_time_to_accuracy(tmp_path):
    """Capture on (FLOP count, window, telemetry, energy, checkpoint): the detours, the clock
    and the evaluation fill the same fields whichever route drove the engine."""
    a = _run(tmp_path / "run")
    b = load_record(_track(tmp_path / "track"))
    assert a["time_to_accuracy"]["reached"]  # the fixture reaches its target in epoch 1
    assert_same_fields(a, b)
    assert_same_tta(a, b)
    for rec in (a, b):  # one step time: the window's epoch's clock over its 8 steps
        assert rec["timeline"]["measured_step_time"]["value"] == pytest.approx(
            rec["throughput"]["epoch_times_s"][0] / 8, rel=1e-12
        )


def test_a_nan_loss_stops_both_routes_the_same_way(tmp_path):
    """Diverged in both: the same status and error, the finished epoch kept; `perfsuite run`
    records it and returns, `perfsuite.track` records it and raises it into the user's loop."""
    nan_at = 12  # epoch 2's fourth step (8 steps an epoch)
    spec = tmp_path / "nan_blobs.py"
    spec.write_text(
        f"import sys\nsys.path.insert(0, {str(FIXTURE.parent)!r})\n"
        f"from blobs_loop import Blobs\n\n\nclass NanBlobs(Blobs):\n    nan_at = {nan_at}\n"
    )
    # a threshold no epoch meets: the run goes on to the NaN
    a = _run(tmp_path / "run", f"{spec}:NanBlobs", capture=False, threshold=1.01)
    with pytest.raises(Diverged) as raised:
        _track(tmp_path / "track", nan_at=nan_at, capture=False, threshold=1.01)
    assert isinstance(raised.value, FloatingPointError)
    [b_dir] = [p for p in (tmp_path / "track").iterdir() if (p / "run.json").is_file()]
    b = load_record(b_dir)
    error = f"did not converge: non-finite loss by step {nan_at}"
    assert a["status"] == b["status"] == "diverged"
    assert a["error"] == b["error"] == str(raised.value) == error
    assert [e["epoch"] for e in a["evaluations"]] == [e["epoch"] for e in b["evaluations"]] == [1]
    assert len(a["throughput"]["epoch_times_s"]) == len(b["throughput"]["epoch_times_s"]) == 1
    assert_same_fields(a, b)


def test_a_route_that_drops_a_field_fails_the_comparison():
    """The comparison can fail: a field one route lost is named."""
    a = {"status": "reached", "throughput": {"step_time": {"value": 1.0}, "epoch_times_s": []}}
    b = {"status": "reached", "throughput": {"step_time": {"value": 2.0}}}
    with pytest.raises(AssertionError, match=r"throughput\.epoch_times_s"):
        assert_same_fields(a, b)
    assert_same_fields(a, {**b, "throughput": {**b["throughput"], "epoch_times_s": [1]}})
