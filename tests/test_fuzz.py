"""Property-based fuzzing of every reader of outside input: each outcome is a result or the
project's one-line error type, never another exception, a hang or a blow-up.

Bounded for CI (PERFSUITE_FUZZ_EXAMPLES, default 40 per target); `make fuzz` runs many more.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.analyzers.roofline.utilization import utilization
from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.analyzers.runs.stability import stability
from perfsuite.analyzers.timeline import TraceError, analyze_trace, read_trace
from perfsuite.counters import CountersError
from perfsuite.counters.ncu_csv import read_ncu_csv
from perfsuite.importers import ImportFailure
from perfsuite.importers.dawnbench import load_entry
from perfsuite.importers.mlperf import load_result
from perfsuite.record import RecordError, load_record, quantity

EXAMPLES = int(os.environ.get("PERFSUITE_FUZZ_EXAMPLES", "40"))
REPORT = os.environ.get("PERFSUITE_FUZZ_REPORT", "1") == "1"  # the HTML report too (slower)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _dump(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


# ------------------------------------------------------------------------- record loader
def _base_record() -> dict[str, Any]:
    from perfsuite.record import new_record

    rec = new_record(run_id="r", task={"name": "toy", "metric": "top1", "threshold": 0.9})
    rec["status"] = "reached"
    rec["evaluations"] = [
        {"epoch": 1, "train_time_s": 10.0, "metrics": {"top1": 0.5}},
        {"epoch": 2, "train_time_s": 20.0, "metrics": {"top1": 0.95}},
    ]
    rec["time_to_accuracy"].update({"reached": True, "time_s": 20.0, "epoch": 2})
    rec["throughput"] = {"step_time": quantity(0.25, "s", "measured", "t"), "epoch_times_s": [10]}
    rec["work"] = {
        "flops_per_step": quantity(1e9, "FLOP", "counted", "t"),
        "bytes_per_step": quantity(1e8, "byte", "modeled", "t"),
        "dtype": "float32",
        "batch_size": 32,
        "per_op": [{"op": "aten::mm", "family": "matmul", "calls": 1, "flops": 1e9, "bytes": 1e8}],
    }
    rec["timeline"] = {
        "trace": None,
        "tool": "torch.profiler",
        "steps": 3,
        "ops": [{"op": "aten::mm", "calls": 3, "self_time_s": 0.3, "total_time_s": 0.3}],
    }
    rec["ceilings"] = {
        "device": "cpu",
        "dtype": "float32",
        "peak_flops": quantity(1e11, "FLOP/s", "measured", "t"),
        "memory_bandwidth": quantity(1e10, "byte/s", "measured", "t"),
        "spec": {"id": "x", "flops": {"float32": 1e11}, "memory_bandwidth": 1e10},
    }
    rec["telemetry"] = {"cpu": {"util_pct_mean": 50.0}, "gpu": {"sm_clock_hz_mean": 1e9}}
    rec["counters"] = {"window_steps": 3, "kernels": [{"name": "k", "calls": 3, "flops": 1e9}]}
    rec["cost"] = {"usd_per_hour": quantity(3.0, "USD/h", "spec", "t")}
    rec["inference"] = {
        "latency": quantity(0.01, "s", "measured", "t"),
        "metrics": {"top1": 0.9},
        "rule": "dawnbench",
    }
    return rec


BASE = _base_record()


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


PATHS = [p for p in _paths(BASE) if p]


def _analyze(rec: dict[str, Any]) -> None:
    """Everything that reads a loaded record; only RooflineInputError is a normal outcome."""
    with contextlib.suppress(RooflineInputError):
        roofline(rec)
    with contextlib.suppress(RooflineInputError):
        utilization(rec)
    cost_of(rec, {})
    leaderboard([rec])
    stability([rec])
    if REPORT:
        from perfsuite.report.build import report_html

        report_html([rec], 5)


@FUZZ
@given(path=st.sampled_from(PATHS), value=json_values)
def test_record_mutations_load_cleanly_or_fail_in_one_line(tmp_path, path, value):
    rec = copy.deepcopy(BASE)
    node = rec
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    f = tmp_path / "run.json"
    f.write_text(_dump(rec))
    try:
        loaded = load_record(f)
    except RecordError as exc:
        assert "\n" not in str(exc) and str(f) in str(exc)
        return
    _analyze(loaded)


@FUZZ
@given(data=st.binary(max_size=300) | json_values.map(lambda v: _dump(v).encode()))
def test_record_loader_on_arbitrary_bytes(tmp_path, data):
    f = tmp_path / "run.json"
    f.write_bytes(data)
    try:
        load_record(f)
    except RecordError as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------------------------------- trace reader
event_keys = st.sampled_from(["ph", "cat", "pid", "tid", "ts", "dur", "name", "args"])
field_values = st.one_of(
    json_values,
    st.sampled_from(["X", "i", "kernel", "cpu_op", "cuda_runtime", "user_annotation"]),
    st.floats(min_value=0, max_value=1e6),
)
args_values = st.dictionaries(
    st.sampled_from(["device", "stream", "correlation", "Input Dims", "Input type",
                     "Concrete Inputs"]),
    field_values,
    max_size=4,
)  # fmt: skip
events = st.lists(
    st.fixed_dictionaries(
        {"ph": st.just("X") | field_values, "ts": st.floats(0, 1e6) | field_values},
        optional={
            "cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "cuda_sync"])
            | field_values,
            "dur": field_values,
            "pid": field_values,
            "tid": field_values,
            "name": field_values,
            "args": args_values | field_values,
        },
    )
    | json_values,
    max_size=12,
)


@FUZZ
@given(evs=events)
def test_trace_reader_on_arbitrary_events(tmp_path, evs):
    f = tmp_path / "trace.json"
    f.write_text(_dump({"traceEvents": evs}))
    try:
        analyze_trace(read_trace(f))
    except TraceError as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(data=st.binary(max_size=300))
def test_trace_reader_on_arbitrary_bytes(tmp_path, data):
    f = tmp_path / "trace.json"
    f.write_bytes(data)
    with contextlib.suppress(TraceError):  # anything else fails the test
        read_trace(f)


# ------------------------------------------------------------------------- importers
MLPERF = Path(__file__).parent / "fixtures" / "mlperf" / "resnet_5runs" / "result_0.txt"
MLPERF_LINES = MLPERF.read_text().splitlines()
mllog_events = st.fixed_dictionaries(
    {"key": st.sampled_from(["run_start", "run_stop", "eval_accuracy", "epoch_start"])
     | json_values, "time_ms": st.integers(0, 2**40) | json_values},
    optional={"value": json_values, "metadata": json_values},
)  # fmt: skip


@FUZZ
@given(
    extra=st.lists(mllog_events.map(lambda e: ":::MLLOG " + _dump(e)) | st.text(max_size=30)),
    keep=st.integers(0, len(MLPERF_LINES)),
)
def test_mlperf_importer_on_arbitrary_lines(tmp_path, extra, keep):
    f = tmp_path / "result_0.txt"
    f.write_text("\n".join(MLPERF_LINES[:keep] + extra + MLPERF_LINES[keep:]))
    try:
        load_result(f)
    except ImportFailure as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(
    entry=st.fixed_dictionaries(
        {"model": json_values, "hardware": json_values},
        optional={
            "version": json_values,
            "author": json_values,
            "framework": json_values,
            "timestamp": json_values,
            "costPerHour": json_values,
            "misc": json_values,
            "latency": json_values,
            "cost": json_values,
            "top1Accuracy": json_values,
        },
    )
    | json_values,
    tsv=st.lists(
        st.lists(st.sampled_from(["1", "0.5", "94", "-1", "x", "nan", "1e999", ""]), max_size=4),
        max_size=4,
    ),
)
def test_dawnbench_importer_on_arbitrary_entries(tmp_path, entry, tsv):
    folder = tmp_path / "CIFAR10" / "train"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "e.json").write_text(_dump(entry))
    rows = ["epoch\thours\ttop1Accuracy"] + ["\t".join(r) for r in tsv]
    (folder / "e.tsv").write_text("\n".join(rows))
    try:
        load_entry(folder / "e.json")
    except ImportFailure as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------------------------------- counters CSV
cells = st.sampled_from(["", "1", "1,024", "n/a", "nan", "1e999", "x", "Kernel Name", "ID",
                         "Metric Name", "Metric Value", "Metric Unit", "byte", "ns",
                         "gpu__time_duration.sum", '"q"'])  # fmt: skip


@FUZZ
@given(rows=st.lists(st.lists(cells, min_size=1, max_size=6), min_size=1, max_size=5))
def test_ncu_csv_reader_on_arbitrary_tables(tmp_path, rows):
    f = tmp_path / "c.csv"
    text = "\n".join(",".join('"' + c.replace('"', '""') + '"' for c in r) for r in rows)
    f.write_text(text)
    try:
        read_ncu_csv(f)
    except CountersError as exc:
        assert "\n" not in str(exc)


# ------------------------------------------------- the record's semantic rules (consistency)
@st.composite
def _curves(draw: Any) -> dict[str, Any]:
    """A record whose claims follow from its curve by the one rule (`perfsuite.record.tta`)."""
    from perfsuite.record.tta import crossing_dict, first_crossing

    n = draw(st.integers(min_value=1, max_value=8))
    epochs, times = [], []
    epoch = time_s = 0.0
    for _ in range(n):
        epoch += draw(st.sampled_from([0.5, 1.0, 2.0]))
        time_s += draw(st.floats(min_value=0.001, max_value=1e5))
        epochs.append(epoch)
        times.append(round(time_s, 6))
    values = draw(st.lists(st.floats(min_value=0, max_value=1), min_size=n, max_size=n))
    rec = copy.deepcopy(BASE)
    rec["task"]["threshold"] = draw(st.floats(min_value=0, max_value=1))
    rec["task"]["direction"] = draw(st.sampled_from(["higher", "lower"]))
    rec["evaluations"] = [
        {"epoch": e, "train_time_s": t, "metrics": {"top1": v}}
        for e, t, v in zip(epochs, times, values, strict=True)
    ]
    task = rec["task"]
    c = first_crossing(rec["evaluations"], "top1", task["threshold"], task["direction"])
    rec["time_to_accuracy"] = crossing_dict(c)
    rec["status"] = "reached" if c.reached else "not_reached"
    rec["inference"]["metrics"] = {"top1": values[-1]}
    return rec


def _board_row(rec: dict[str, Any]) -> Any:
    (board,) = leaderboard([rec])
    (row,) = board.rows
    return row


@FUZZ
@given(rec=_curves())
def test_consistent_records_stay_consistent_through_every_analysis(tmp_path, rec):
    from perfsuite.record.consistency import problems

    assert problems(rec) == []
    from perfsuite.record import write_record

    write_record(tmp_path / "r", rec)
    loaded = load_record(tmp_path / "r")
    assert problems(loaded) == []  # a write and a read change no claim
    tta = loaded["time_to_accuracy"]
    row = _board_row(loaded)
    (group,) = stability([loaded])
    if tta["reached"]:
        assert (row.status, row.value) == ("ranked", tta["time_s"])
        assert cost_of(loaded, {}).training_time_s == tta["time_s"]
        assert group.n_reached == 1
    else:
        assert row.status == "DNC" and group.n_reached == 0


_CLAIMS = ["reached", "time", "epoch", "status", "drop_evaluations"]


@FUZZ
@given(rec=_curves(), claim=st.sampled_from(_CLAIMS), shift=st.floats(0.5, 1e4))
def test_inconsistent_claims_are_refused_everywhere(tmp_path, rec, claim, shift):
    from perfsuite.cli import main
    from perfsuite.record import write_record
    from perfsuite.record.consistency import problems

    tta = rec["time_to_accuracy"]
    if claim == "reached":
        tta["reached"] = not tta["reached"]
    elif claim == "time":
        tta["time_s"] = (tta["time_s"] or 0.0) + shift
        tta["reached"] = True
    elif claim == "epoch":
        tta.update(reached=True, epoch=(tta["epoch"] or 0) + shift, time_s=tta["time_s"] or 1.0)
    elif claim == "status":
        rec["status"] = "not_reached" if tta["reached"] else "reached"
    else:
        rec["evaluations"] = []
        tta.update(reached=True, time_s=tta["time_s"] or 1.0)
    assert problems(rec), claim
    row = _board_row(rec)
    assert row.status == "n/a" and row.note.startswith("inconsistent record: field ")
    assert cost_of(rec, {}).training_time_s is None
    (group,) = stability([rec])
    assert group.n_reached == 0
    write_record(tmp_path / "r", rec)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["validate", str(tmp_path / "r")]) == 1


@FUZZ
@given(n=st.integers(min_value=2, max_value=6), same_id=st.booleans())
def test_concurrent_reservations_never_share_a_folder(tmp_path_factory, n, same_id):
    """Writers reserving run folders at once (threads here; real processes in
    test_import_integrity) get a folder each: the mkdir is the reservation."""
    import threading

    from perfsuite.importers.base import reserve
    from perfsuite.importers.common import Imported

    out = tmp_path_factory.mktemp("out")
    items = [
        Imported(
            {"run_id": "x" if same_id else f"x{i}", "source": {"sha256": f"{i:08x}" + "0" * 56}}
        )
        for i in range(n)
    ]
    folders: list[Path] = []
    gate = threading.Barrier(n)

    def one(it: Imported) -> None:
        gate.wait()
        folders.append(reserve(out, it))

    threads = [threading.Thread(target=one, args=(it,)) for it in items]
    # A writer that finds a folder taken waits for its record to settle (5 s); no record is
    # ever written here, so the wait only adds time: cut it to 10 ms for this test.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("perfsuite.importers.base.RESERVED_WAIT_S", 0.01)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # one bare id, and a suffix of its own for every other content: a folder each
    assert len(set(folders)) == len(folders) == n
    assert sorted(it.record["run_id"] for it in items) == sorted(f.name for f in folders)
