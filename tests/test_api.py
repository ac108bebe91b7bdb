"""perfsuite.open and compare against the CLI's --json for the same records.

A digits run is made here (with user-set roofs, so every roofline column has numbers) and a
5-run group of repeats; every DataFrame is checked column by column against `roofline`,
`timeline`, `cost` and `stability --json`, and against run.json itself for the record tables.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import subprocess
import sys

import pytest

import perfsuite
from perfsuite.record import RecordError
from tests.api_compare import ROOT, assert_rows, dig, same_value
from tests.conftest import extract_h100_run, shared_path

PLACEMENT = {
    "flops": "placement.flops",
    "bytes": "placement.bytes",
    "intensity_flop_per_byte": "placement.intensity",
    "achieved_flop_per_s": "placement.achieved_flops",
    "achieved_byte_per_s": "placement.achieved_bandwidth",
    "bound": "placement.bound",
    "math": "placement.math",
    "math_evidence": "placement.math_evidence",
    "peak_flop_per_s": "placement.peak",
    "roof_flop_per_s": "placement.attainable",
    "frac_of_roof": "placement.frac_of_roof",
    "frac_of_peak": "placement.frac_of_peak",
    "over_roof": "placement.over_roof",
    "flag": "placement.flag",
}
OPS = {
    "op": "op",
    "status": "status",
    "calls": "calls",
    "time_s": "time_s",
    "time_kind": "time_kind",
    "own_time_s": "own_time_s",
    "wrapper": "wrapper",
    "share": "time_share",
    **PLACEMENT,
    "lost_time_s": "lost_time_s",
    "lost_time_why": "lost_time_why",
}
LEVELS = {
    "name": "name",
    "level": "level",
    "bytes_provenance": "bytes_provenance",
    "ceiling_byte_per_s": "ceiling_bandwidth",
    **PLACEMENT,
    "time_s": "placement.time_s",
}
STEP = {
    "op": "name",
    "time_s": "time_s",
    "share": "share",
    "provenance": "provenance",
    "profiled_s": "profiled_s",
}
RATES = {
    "scope": "scope",
    "achieved_flop_per_s": "achieved_flops",
    "achieved_byte_per_s": "achieved_bandwidth",
    "of_measured_peak": "of_measured_peak",
    "of_spec_peak": "of_spec_peak",
    "of_measured_bandwidth": "of_measured_bandwidth",
    "of_spec_bandwidth": "of_spec_bandwidth",
}
COST = {
    "run_id": "run_id",
    "task": "task",
    "entry_type": "entry_type",
    "instance_type": "instance_type",
    "usd_per_hour": "price.usd_per_hour",
    "price_origin": "price.origin",
    "price_provenance": "price.provenance",
    "price_source": "price.source",
    "reached": "reached",
    "training_time_s": "training_time_s",
    "training_cost_usd": "training_cost_usd",
    "training_cost_provenance": "training_cost_provenance",
    "inference_latency_s": "inference_latency_s",
    "inference_cost_per_10k_usd": "inference_cost_per_10k_usd",
    "inference_cost_provenance": "inference_cost_provenance",
    "inference_rule": "inference_rule",
    "inference_p50_s": "inference_p50_s",
    "inference_p90_s": "inference_p90_s",
    "inference_p99_s": "inference_p99_s",
    "energy_to_accuracy_j": "energy_to_accuracy_j",
    "energy_per_10k_j": "energy_per_10k_j",
    "energy_source": "energy_source",
    "notes": "notes_joined",
}
RUNS = {
    "group": "group_label",
    "run_id": "run_id",
    "seed": "seed",
    "status": "status",
    "reached": "reached",
    "time_to_accuracy_s": "time_s",
    "epochs_to_threshold": "epochs",
    "time_per_epoch_s": "time_per_epoch_s",
    "epoch_time_cov": "epoch_time_cov",
    "epoch_times_from": "epoch_times_from",
    "path": "path",
}
SUMMARY_STATS = ["n", "mean", "std", "cov", "ci_low", "ci_high", "ci_half_width_rel", "min", "max"]


def cli_json(*args: str, cache=None):
    """`perfsuite ARGS --json` (with `cache` as its perfsuite cache), parsed; run in this
    process: what is compared is the JSON, and a process start is a second of imports."""
    from perfsuite.__main__ import main

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        if cache is not None:
            mp.setenv("PERFSUITE_CACHE_DIR", str(cache))
        code = main([*args, "--json"])
    assert code == 0, f"perfsuite {' '.join(args)} --json: exit status {code}"
    return json.loads(out.getvalue())


def _cost_rows(ref: dict) -> list[dict]:
    return [{**c, "notes_joined": "; ".join(c["notes"])} for c in ref["costs"]]


# --------------------------------------------------------------------------- fixtures
# The run, the group and their cache are made once per session (tests/conftest.py): the
# runner's own tests (tests/test_runner.py) read the same command lines' records.
@pytest.fixture(scope="module")
def cache(cli_roofs_cache):
    """A private perfsuite cache with user-set CPU roofs (no op flagged above its roof)."""
    return cli_roofs_cache


@pytest.fixture(scope="module")
def digits_run(digits_cli_run):
    """`perfsuite run digits --quiet --no-peaks` with `cache`'s roofs: its run folder."""
    return digits_cli_run


@pytest.fixture(scope="module")
def group_dir(digits_cli_group):
    """3 repeats of digits to 80%, seeds 7-9 (the point is the group, not the accuracy)."""
    return digits_cli_group[0]


def in_api_order(ops, rows):
    """The roofline JSON's op rows (status order) in the order of `Run.ops` (the CLI's per-op
    table: ops by time, then wrapper rows; tests/roofline/test_doubt.py checks that order)."""
    by_op = {r["op"]: r for r in rows}
    assert len(by_op) == len(rows) and set(by_op) == set(ops["op"])
    return [by_op[op] for op in ops["op"]]


# --------------------------------------------------------------------------- a run
@pytest.mark.slow
def test_run_roofline_tables_equal_roofline_json(digits_run, cache):
    ref = cli_json("roofline", str(digits_run), cache=cache)
    roof = ref["roofline"]
    run = perfsuite.open(digits_run)
    assert isinstance(run, perfsuite.Run) and run.run_id == roof["run"]["run_id"]
    assert_rows(run.ops, in_api_order(run.ops, roof["ops"]), OPS)
    assert_rows(run.ranking, roof["ranking"], OPS)
    assert list(run.ranking.index) == list(range(1, len(roof["ranking"]) + 1))
    assert_rows(run.step_breakdown, roof["time_rows"]["rows"], STEP)
    assert_rows(run.hierarchical, roof["hierarchical"]["points"], LEVELS)
    util = ref["utilization"]
    doubts = ["peak_doubt", "bandwidth_doubt"]  # from the roofline's doubts, not in the JSON
    assert_rows(run.utilization().drop(columns=doubts), [util["run"], *util["ops"]], RATES)
    # the whole-run block: value, unit, provenance, source of every field
    block = run.roofline()
    for field in ref["explain"]:
        want = roof["run"][field]
        got = block.loc[field]
        if isinstance(want, dict):
            assert [got["value"], got["unit"], got["provenance"], got["source"]] == [
                want["value"], want["unit"], want["provenance"], want["source"]]  # fmt: skip
        else:
            assert same_value(got["value"], want), field
        assert got["meaning"] == ref["explain"][field]
    roofs = run.roofs
    assert list(roofs["roof"]) == list(roof["run"]["roofs_used"])
    for r in roofs.to_dict("records"):
        want = roof["run"]["roofs_used"][r["roof"]]
        assert (r["value"], r["provenance"]) == (want["value"], want["provenance"])
        assert same_value(r["flops"], roof["run"]["flops_by_math"].get(r["roof"]))
    # real numbers, not an empty conversion: roofs were set, so joined ops have fractions
    joined = run.ops[run.ops["status"] == "joined"]
    assert len(joined) > 5 and joined["frac_of_roof"].notna().all()
    s = run.summary
    for col, key in [("frac_of_roof", "frac_of_roof"), ("frac_of_peak", "frac_of_peak"),
                     ("bound", "bound"), ("flops_per_step", "flops_per_step.value"),
                     ("achieved_flop_per_s", "achieved_flops.value")]:  # fmt: skip
        assert same_value(s[col], dig(roof["run"], key)), col
    assert same_value(s["spec_peak_flop_per_s"], util["spec_peak"])
    assert same_value(s["cpu_util_pct_mean"], util["cpu"]["util_pct_mean"])
    assert run.notes == roof["notes"] + roof["hierarchical"]["notes"] + util["notes"]


@pytest.mark.slow
def test_run_record_tables_equal_the_record(digits_run, cache):
    rec = json.loads((digits_run / "run.json").read_text())
    run = perfsuite.open(digits_run / "run.json")
    ev = rec["evaluations"]
    ep = run.epochs
    assert list(ep.columns) == ["epoch", "train_time_s", "epoch_time_s", "train_loss",
                                "eval_time_s", "samples", "top1"]  # fmt: skip
    assert_rows(ep.drop(columns=["epoch_time_s"]), ev,
                {c: c for c in ep.columns if c not in ("epoch_time_s", "top1")}
                | {"top1": "metrics.top1"})  # fmt: skip
    assert list(ep["epoch_time_s"]) == rec["throughput"]["epoch_times_s"][: len(ev)]
    s = run.summary
    assert s["time_to_accuracy_s"] == rec["time_to_accuracy"]["time_s"] == ev[-1]["train_time_s"]
    assert s["step_time_s"] == rec["throughput"]["step_time"]["value"]
    with open(digits_run / "telemetry.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    tel = run.telemetry
    assert len(tel) == len(rows) > 0
    assert list(tel.columns) == list(rows[0])
    assert tel["rss_bytes"].tolist() == [float(r["rss_bytes"]) for r in rows]
    assert tel["gpu_util_pct"].isna().all()  # a CPU run: empty GPU cells, never zeros
    cfg = run.config["value"]
    assert cfg["seed"] == rec["config"]["seed"]
    assert cfg["recipe_values.extra.width"] == rec["config"]["recipe_values"]["extra"]["width"]
    # the trace sidecar: what `perfsuite timeline RUN` reads (a CPU run: ops, no kernels)
    ref = cli_json("timeline", str(digits_run), "--top", "0", cache=cache)["traces"][0]
    assert run.kernels.empty and ref["top_kernels"] == []
    ops = run.trace().ops
    assert list(ops["name"]) == [o["name"] for o in ref["ops"]]
    assert list(ops["self_s"]) == [o["self_s"] for o in ref["ops"]]


@pytest.mark.slow
def test_run_mllog_stops_when_training_stops(digits_run):
    """run_stop is logged at the evaluation that ended training, not after the inference
    latency, profile window and checkpoint that follow (the MLPerf clock is training's)."""
    from perfsuite.importers.mlperf import parse_events

    rec = perfsuite.open(digits_run).record
    events, _ = parse_events(digits_run / rec["sidecars"]["mllog"])
    times = {e["key"]: e["time_ms"] for e in events}  # the last of each key
    after_s = (times["run_stop"] - times["eval_accuracy"]) / 1000
    assert rec["status"] == "reached" and events[-1]["key"] == "run_stop"
    assert after_s < rec["extra"]["setup_s"]["inference_latency_s"]


@pytest.mark.slow
def test_run_cost_equals_cost_json(digits_run, cache):
    ref = cli_json("cost", str(digits_run), "--instance-type", "n2-standard-2", cache=cache)
    df = perfsuite.open(digits_run).cost(instance_type="n2-standard-2")
    assert_rows(df, _cost_rows(ref), COST)
    assert df["training_cost_usd"].iloc[0] > 0
    with pytest.raises(ValueError, match="instance_type nope: not in the price table"):
        perfsuite.open(digits_run).cost(instance_type="nope")


@pytest.mark.slow
def test_run_figures_are_the_report_figures(digits_run):
    run = perfsuite.open(digits_run)
    fig = run.figures.roofline()
    star = next(t for t in fig.data if t.name == "whole run")
    assert star.x[0] == run.roofline().loc["intensity", "value"]
    assert star.y[0] == run.roofline().loc["achieved_flops", "value"]
    curve = run.figures.curves().data[0]
    assert list(curve.y) == list(run.epochs["top1"])
    bars = run.figures.ops(top=5).data[0]
    assert list(bars.y) == list(run.ops["op"][:5])
    assert {t.name for t in run.figures.telemetry().data} >= {"cpu_util_pct", "rss_bytes"}


# --------------------------------------------------------------------------- a group
@pytest.mark.slow
def test_group_tables_equal_stability_json(group_dir, cache):
    ref = cli_json("stability", str(group_dir), cache=cache)
    g = perfsuite.open(group_dir)
    assert isinstance(g, perfsuite.Group) and len(g) == 3
    (grp,) = ref["groups"]
    rows = [{**r, "group_label": grp["label"]} for r in grp["runs"]]
    assert_rows(g.runs, rows, RUNS)
    assert sorted(g.runs["seed"]) == [7, 8, 9]
    stats = [{"group": grp["label"], "statistic": name, "unit": unit, **grp[name]}
             for name, unit in [("time_to_accuracy", "s"), ("epochs_to_threshold", "epoch"),
                                ("time_per_epoch", "s")]]  # fmt: skip
    assert_rows(g.stability, stats, {c: c for c in ["group", "statistic", "unit", *SUMMARY_STATS]})
    assert g.stability["n"].iloc[2] == 3
    row = g.groups.iloc[0]
    for col, key in [("n_runs", "n_runs"), ("n_reached", "n_reached"),
                     ("reached_fraction", "reached_fraction"), ("threshold", "threshold"),
                     ("time_to_accuracy_mean_s", "time_to_accuracy.mean"),
                     ("time_to_accuracy_ci_low_s", "time_to_accuracy.ci_low"),
                     ("olympic_mean_s", "olympic_mean.value"),
                     ("olympic_mean_reason", "olympic_mean.reason"),
                     ("olympic_rule", "olympic_rule")]:  # fmt: skip
        assert same_value(row[col], dig(grp, key)), col
    assert g.warnings == [f"{grp['label']}: {w}" for w in grp["warnings"]]
    costs = cli_json("cost", str(group_dir), "--instance-type", "n2-standard-2", cache=cache)
    assert_rows(g.cost(instance_type="n2-standard-2"), _cost_rows(costs), COST)
    # the stacked curves are each run's own
    assert len(g.epochs) == sum(len(r.epochs) for r in g)
    assert len(g.figures.curves().data) == 3


@pytest.mark.slow
def test_compare_puts_runs_and_groups_side_by_side(digits_run, group_dir):
    run, g = perfsuite.open(digits_run), perfsuite.open(group_dir)
    table = perfsuite.compare(run, g, str(digits_run))
    label = g.groups["group"].iloc[0]
    assert list(table.columns) == [run.run_id, label, f"{run.run_id} (2)"]
    assert table.loc["frac_of_roof", run.run_id] == run.summary["frac_of_roof"]
    assert table.loc["olympic_mean_s", label] == g.groups["olympic_mean_s"].iloc[0]
    assert math.isnan(table.loc["olympic_mean_s", run.run_id])
    named = perfsuite.compare(before=run, after=g)
    assert list(named.columns) == ["before", "after"]
    assert named["before"].equals(run.summary.rename("before").reindex(named.index))
    with pytest.raises(TypeError, match="compare takes runs, groups or their paths"):
        perfsuite.compare(run, 3)


# --------------------------------------------------------------------------- shared H100 run
@pytest.fixture(scope="module")
def h100_run(tmp_path_factory):
    return extract_h100_run(tmp_path_factory.mktemp("h100"))


@pytest.mark.shared
def test_h100_run_with_a_peaks_file_equals_roofline_json(h100_run):
    peaks = shared_path("gpu", "h100-peaks.json")
    ref = cli_json("roofline", str(h100_run), "--peaks", str(peaks))
    run = perfsuite.open(h100_run, peaks=peaks)
    assert_rows(run.ops, in_api_order(run.ops, ref["roofline"]["ops"]), OPS)
    assert run.roofline().loc["frac_of_roof", "value"] == ref["roofline"]["run"]["frac_of_roof"]
    kernels = cli_json("timeline", str(h100_run), "--top", "0")["traces"][0]["top_kernels"]
    assert len(run.kernels) == len(kernels) > 10
    assert list(run.kernels["total_s"]) == [k["total_s"] for k in kernels]
    tel = run.telemetry
    assert tel["gpu_sm_clock_hz"].notna().all() and run.summary["throttled"] is False


# --------------------------------------------------------------------------- errors
def test_bad_paths_and_records_are_one_line_errors(tmp_path):
    with pytest.raises(RecordError, match=r"nowhere: no such file or folder$"):
        perfsuite.open(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordError, match=r"empty: no run\.json in this folder or below it$"):
        perfsuite.open(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.json").write_text('{"schema": "perfsuite.run", "schema_version": 1}')
    with pytest.raises(RecordError, match=r"bad/run\.json: field \(top level\): 'run_id'"):
        perfsuite.open(bad)


# --------------------------------------------------------------------------- no framework
_NO_FRAMEWORK = r"""
import sys
import perfsuite
assert "pandas" not in sys.modules, "import perfsuite loaded pandas"
run, group = perfsuite.open(sys.argv[1]), perfsuite.open(sys.argv[2])
for table in (run.epochs, run.ops, run.ranking, run.step_breakdown, run.roofs, run.hierarchical,
              run.roofline(), run.utilization(), run.cost(), run.summary, run.config,
              run.telemetry, run.kernels, group.runs, group.stability, group.groups,
              group.epochs, group.cost(), perfsuite.compare(run, group)):
    assert len(table) > 0 or table is run.kernels
t = run.trace()
for table in (t.temporal, t.idle, t.categories, t.streams, t.kernels, t.ops, t.summary):
    table
run.figures.roofline(), run.figures.ops(), group.figures.curves()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "tensorflow"))
print(" ".join(loaded) or "none")
"""


@pytest.mark.slow
def test_open_and_every_table_import_no_framework(digits_run, group_dir):
    out = subprocess.run(
        [sys.executable, "-c", _NO_FRAMEWORK, str(digits_run), str(group_dir)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "none"


def readme_python_example() -> str:
    """The first python block under the README's "From Python" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## From Python\n", 1)[1]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


@pytest.mark.slow
@pytest.mark.shared
def test_readme_python_example_runs(digits_run, group_dir, tmp_path):
    shared = shared_path()
    repo = tmp_path / "repo"
    (repo / "runs").mkdir(parents=True)
    (repo / "runs" / "demo").symlink_to(digits_run)
    (repo / "runs" / "digits-x5").symlink_to(group_dir)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared)
    out = subprocess.run(
        [sys.executable, "-c", readme_python_example()],
        capture_output=True, text=True, cwd=repo, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "time_to_accuracy_mean_s" in out.stdout and "aten::" in out.stdout


_NO_IRI_GRAMMAR = r"""
import importlib.util, sys
from perfsuite.record import new_record, validate_record
record = new_record(run_id="r", task={"name": "t", "metric": "top1", "threshold": 0.9})
validate_record(record)  # the compiled schema test passes it: jsonschema is not needed
assert "jsonschema" not in sys.modules
validate_record(record, fast=False)  # the reference path imports jsonschema
assert "jsonschema" in sys.modules and "rfc3987_syntax" not in sys.modules
if importlib.util.find_spec("rfc3987_syntax"):  # hidden during the import only
    import rfc3987_syntax
print("ok")
"""


def test_validation_does_not_pay_for_the_iri_grammar():
    """Opening a record validates it: a valid record through the compiled schema test alone;
    where jsonschema is imported, it must not build rfc3987-syntax's grammar (seconds on import)
    for a format check records never use, and the module stays importable."""
    out = subprocess.run(
        [sys.executable, "-c", _NO_IRI_GRAMMAR], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
