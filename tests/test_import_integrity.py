"""Imports hold the record's rules: bad DAWNBench values are refused by field in one line, two
imports running at the same time into one `--out` never write one run folder, colliding ids
never lose a record, bad MLPerf lines are skipped instead of aborting the import, MLPerf's
scaling.json is applied as the published scores do, and a file that is not an entry (gzip,
binary) is named as such."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.importers.base import run_import
from perfsuite.importers.common import ImportFailure
from perfsuite.importers.dawnbench import DawnBenchImporter, load_entry
from perfsuite.importers.mlperf import MLPerfImporter, load_result
from perfsuite.record import load_records
from perfsuite.stats import olympic_mean
from tests.conftest import shared_path

FIXTURES = Path(__file__).parent / "fixtures" / "dawnbench" / "entries" / "CIFAR10"
ROOT = Path(__file__).resolve().parents[1]


def _entry(tmp_path, name="e", kind="train", tsv=None, **fields):
    src = FIXTURES / kind / ("normal_resnet9.json" if kind == "train" else "normal_infer.json")
    folder = tmp_path / "CIFAR10" / kind
    folder.mkdir(parents=True, exist_ok=True)
    entry = {**json.loads(src.read_text()), **fields}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(entry))
    if kind == "train":
        text = tsv or (FIXTURES / "train" / "normal_resnet9.tsv").read_text()
        (folder / f"{name}.tsv").write_text(text)
    return path


@pytest.mark.parametrize(
    ("fields", "tsv", "kind", "words"),
    [
        (
            {},
            "epoch\thours\ttop1Accuracy\n1\t0.1\t1e300\n",
            "train",
            "field top1: 1e+298 is outside",
        ),
        ({}, "epoch\thours\ttop1Accuracy\n1\t1e300\t95\n", "train", "field epoch/hours: 1 epochs,"),
        ({"costPerHour": True}, None, "train", "field costPerHour: True is not a number"),
        ({"model": {"a": 1}}, None, "train", "field model: {'a': 1} is not a string"),
        ({}, "epoch\thours\ttop1Accuracy\n-5\t0.1\t95\n", "train", "field epoch/hours: negative"),
        ({"costPerHour": 10**400}, None, "train", "field costPerHour: 10000"),
        ({}, "epoch\thours\ttop1Accuracy\n1\t" + "9" * 400 + "\t95\n", "train", "field hours:"),
        ({"top1Accuracy": 1e300}, None, "inference", "field top1Accuracy: 1e+300 is outside"),
        ({"latency": 1e308}, None, "inference", "field latency: 1e+308 is beyond reason"),
    ],
)
def test_bad_values_are_refused_by_field_in_one_line(tmp_path, fields, tsv, kind, words):
    if (
        "costPerHour" in fields
        and isinstance(fields["costPerHour"], int)
        and fields["costPerHour"] > 10**300
    ):
        path = _entry(tmp_path, kind=kind)
        text = path.read_text()[:-1] + ', "costPerHour": ' + str(fields["costPerHour"]) + "}"
        path.write_text(text)
    else:
        path = _entry(tmp_path, kind=kind, tsv=tsv, **fields)
    with pytest.raises(ImportFailure) as exc:
        load_entry(path)
    message = str(exc.value)
    assert words in message and "\n" not in message and len(message) < 400


def _import(src, out):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "perfsuite", "import", "dawnbench", str(src), "--out", str(out)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("attempt", range(3))
def test_two_imports_at_once_into_one_out_keep_both_records(tmp_path, attempt):
    """`a b.json` and `a_b.json` want one run id; each import alone sees no clash on disk,
    so only the exclusive reservation of the folder keeps the two apart."""
    one, two = tmp_path / "one", tmp_path / "two"
    for folder, name, hours in ((one, "a b", "0.02"), (two, "a_b", "0.03")):
        path = _entry(folder, name=name)
        tsv = f"epoch\thours\ttop1Accuracy\n1\t{hours}\t95.0\n"
        path.with_suffix(".tsv").write_text(tsv)
    out = tmp_path / "out"
    procs = [_import(one, out), _import(two, out)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    recs = load_records([out])
    assert len(recs) == 2, [r["run_id"] for r in recs]
    assert sorted(r["time_to_accuracy"]["time_s"] for r in recs) == [72.0, 108.0]
    assert len({r["run_id"] for r in recs}) == 2
    shutil.rmtree(out)


def test_two_mlperf_imports_at_once_keep_both_records(tmp_path):
    """Two results named `src/result_0.txt` in different folders want one run id."""
    log = Path(__file__).parent / "fixtures" / "mlperf" / "single" / "rnnt_wer.log"
    text = log.read_text()
    srcs = []
    for name, org in (("a b", "OrgOne"), ("a_b", "OrgTwo")):
        folder = tmp_path / name / "src"
        folder.mkdir(parents=True)
        (folder / "result_0.txt").write_text(text.replace("ExampleOrg", org))
        srcs.append(folder.parent)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "perfsuite", "import", "mlperf", str(s), "--out", str(out)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for s in srcs
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    recs = load_records([out])
    assert len(recs) == 2 and len({r["run_id"] for r in recs}) == 2
    orgs = sorted(r["extra"]["mlperf"]["org"] for r in recs)
    assert orgs == ["OrgOne", "OrgTwo"]


# -----------------------------------------------------------------------------------------------
# Colliding ids, bad MLPerf lines, scaling.json, files that are not entries.


FIX = Path(__file__).parent / "fixtures"
RESNET = FIX / "mlperf" / "resnet_5runs"
TRAIN = FIX / "dawnbench" / "entries" / "CIFAR10" / "train"


def _records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.rglob("run.json"))]


def test_two_systems_same_result_name_both_land(tmp_path, capsys):
    for system in ("sysA", "sysB"):
        dst = tmp_path / "in" / system / "resnet"
        shutil.copytree(RESNET, dst)
    # make system B's logs differ in content (another org)
    for f in (tmp_path / "in" / "sysB" / "resnet").glob("result_*.txt"):
        f.write_text(f.read_text().replace("ExampleOrg", "OtherOrg"))
    out = tmp_path / "runs"
    assert main(["import", "mlperf", str(tmp_path / "in"), "--out", str(out)]) == 0
    recs = _records(out)
    assert len(recs) == 10
    assert len({r["run_id"] for r in recs}) == 10
    assert len({r["group"]["id"] for r in recs}) == 2
    assert "10 record(s) written" in capsys.readouterr().err


def test_dawnbench_names_that_slug_alike_both_land(tmp_path):
    src = tmp_path / "CIFAR10" / "train"
    src.mkdir(parents=True)
    for name, cost in (("a b", 1.0), ("a_b", 2.0)):
        entry = json.loads((TRAIN / "null_cost.json").read_text())
        entry["costPerHour"] = cost
        (src / f"{name}.json").write_text(json.dumps(entry))
        shutil.copy(TRAIN / "null_cost.tsv", src / f"{name}.tsv")
    out = tmp_path / "runs"
    result = run_import(DawnBenchImporter(), [src], out, keep_going=False)
    assert result.written == 2 == len(_records(out))
    assert any("imported as" in n for n in result.notes)


def _slug_alike(src: Path, name: str, cost: float) -> None:
    """A CIFAR-10 entry `name` whose content differs by its costPerHour."""
    src.mkdir(parents=True, exist_ok=True)
    entry = json.loads((TRAIN / "null_cost.json").read_text())
    entry["costPerHour"] = cost
    (src / f"{name}.json").write_text(json.dumps(entry))
    shutil.copy(TRAIN / "null_cost.tsv", src / f"{name}.tsv")


def _ids_and_costs(out: Path) -> dict[str, float]:
    return {r["run_id"]: r["cost"]["usd_per_hour"]["value"] for r in _records(out)}


def test_reimport_keeps_the_id_on_disk_and_suffixes_only_the_newcomer(tmp_path):
    src, out, bare = (
        tmp_path / "CIFAR10" / "train",
        tmp_path / "runs",
        "dawnbench-cifar10-train-a_b",
    )
    _slug_alike(src, "a b", 1.0)
    run_import(DawnBenchImporter(), [src], out, keep_going=False)
    assert _ids_and_costs(out) == {bare: 1.0}
    _slug_alike(src, "a_b", 2.0)  # a different result that slugs to the same id
    result = run_import(DawnBenchImporter(), [src], out, keep_going=False)
    on_disk = _ids_and_costs(out)
    assert len(on_disk) == 2 == result.written  # each result once: no stale copy of "a b"
    assert on_disk[bare] == 1.0
    (newcomer,) = [i for i in on_disk if i != bare]
    assert newcomer.startswith(f"{bare}-") and on_disk[newcomer] == 2.0
    assert result.notes == [f"{src / 'a_b.json'}: run id {bare} taken; imported as {newcomer}"]


def test_json_output_carries_the_renaming_notes(tmp_path, capsys):
    from perfsuite.cli import main

    src, out = tmp_path / "CIFAR10" / "train", tmp_path / "runs"
    _slug_alike(src, "a b", 1.0)
    _slug_alike(src, "a_b", 2.0)
    assert main(["import", "dawnbench", str(src), "--out", str(out), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    taken = "dawnbench-cifar10-train-a_b taken"  # the slug both entries map to
    assert len(notes) == 2 and all(f"run id {taken}" in n for n in notes)


def test_a_suffixed_result_imported_alone_keeps_its_suffixed_id(tmp_path):
    src, out = tmp_path / "CIFAR10" / "train", tmp_path / "runs"
    _slug_alike(src, "a b", 1.0)
    _slug_alike(src, "a_b", 2.0)
    run_import(DawnBenchImporter(), [src], out, keep_going=False)
    before = _ids_and_costs(out)
    assert len(before) == 2 and "dawnbench-cifar10-train-a_b" not in before
    again = run_import(DawnBenchImporter(), [src / "a b.json"], out, keep_going=False)
    assert _ids_and_costs(out) == before  # replaced in place, not written again bare
    assert again.items[0].record["run_id"] in before


def test_a_stale_copy_left_by_an_earlier_import_is_named(tmp_path):
    src, out, bare = (
        tmp_path / "CIFAR10" / "train",
        tmp_path / "runs",
        "dawnbench-cifar10-train-a_b",
    )
    _slug_alike(src, "a b", 1.0)
    first = run_import(DawnBenchImporter(), [src], out, keep_going=False)
    stale = f"{bare}-{first.items[0].record['source']['sha256'][:8]}"
    shutil.copytree(out / bare, out / stale)  # what the old pipeline left behind
    again = run_import(DawnBenchImporter(), [src], out, keep_going=False)
    assert again.items[0].record["run_id"] == bare
    assert any(f"{stale} under {out} is the same result as {bare}" in n for n in again.notes)


def test_reimport_replaces_and_other_content_is_never_overwritten(tmp_path):
    out = tmp_path / "runs"
    one = tmp_path / "single" / "result_0.txt"
    one.parent.mkdir()
    shutil.copy(RESNET / "result_0.txt", one)
    first = run_import(MLPerfImporter(), [one], out, keep_going=False)
    again = run_import(MLPerfImporter(), [one, one], out, keep_going=False)
    assert first.items[0].record["run_id"] == again.items[0].record["run_id"]
    assert len(_records(out)) == 1
    one.write_text(one.read_text().replace("ExampleOrg", "ChangedOrg"))
    changed = run_import(MLPerfImporter(), [one], out, keep_going=False)
    assert changed.items[0].record["run_id"] != first.items[0].record["run_id"]
    assert len(_records(out)) == 2


def test_bad_mllog_lines_are_skipped_not_fatal(tmp_path):
    lines = (RESNET / "result_0.txt").read_text().splitlines()
    bad = [
        ':::MLLOG {"key": 5, "time_ms": 1, "value": null}',
        ':::MLLOG {"key": ["x"], "time_ms": 1, "value": null}',
        ':::MLLOG {"key": "eval_accuracy", "time_ms": NaN, "value": 0.9}',
        ':::MLLOG {"key": "eval_accuracy", "time_ms": 1e999, "value": 0.9}',
        ':::MLLOG {"key": "eval_accuracy", "time_ms": 1' + "0" * 400 + ', "value": 0.9}',
        ':::MLLOG {"key": "eval_accuracy", "time_ms": 1' + "0" * 5000 + ', "value": 0.9}',
        ':::MLLOG {"key": "eval_accuracy", "time_ms": true, "value": 0.9}',
        ':::MLLOG {"key": "epoch_start", "time_ms": 1699999950000, "metadata": {"epoch_num": [1]}}',
        ":::MLLOG " + "[" * 100_000,
    ]
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(lines[:3] + bad + lines[3:]) + "\n")
    it = load_result(path)
    assert it.summary["status"] == "reached"
    assert any("8 unreadable :::MLLOG line(s)" in f for f in it.record["flags"])


def test_run_stop_before_run_start_is_one_line_error(tmp_path):
    text = (RESNET / "result_0.txt").read_text()
    start = next(ln for ln in text.splitlines() if '"run_start"' in ln)
    stop = next(ln for ln in text.splitlines() if '"run_stop"' in ln)
    moved = json.loads(stop.split(":::MLLOG", 1)[1])
    moved["time_ms"] = json.loads(start.split(":::MLLOG", 1)[1])["time_ms"] - 1000
    path = tmp_path / "result_0.txt"
    path.write_text(text.replace(stop, ":::MLLOG " + json.dumps(moved)))
    with pytest.raises(ValueError, match=r"run_stop\.time_ms: before run_start"):
        load_result(path)


def _scores(folder: Path, out: Path) -> dict:
    result = run_import(MLPerfImporter(), [folder], out, keep_going=False)
    (score,) = result.extra["scores"]
    return score


def test_scaling_json_multiplies_the_olympic_mean(tmp_path):
    folder = tmp_path / "resnet"
    shutil.copytree(RESNET, folder)
    plain = _scores(folder, tmp_path / "a")
    (folder / "scaling.json").write_text('{"scaling_factor": 1.0042}')
    scaled = _scores(folder, tmp_path / "b")
    minutes = list(plain["minutes"])
    assert plain["scaling_factor"] == 1.0
    assert plain["score_min"] == pytest.approx(olympic_mean(minutes).value)
    assert scaled["olympic_mean_min"] == pytest.approx(plain["score_min"])
    assert scaled["score_min"] == pytest.approx(plain["score_min"] * 1.0042)
    assert any("1.0042" in f for f in scaled["flags"])


@pytest.mark.parametrize("text", ['{"scaling_factor": -1}', '{"x": 1}', "[", '"1.0"'])
def test_bad_scaling_json_gives_no_score(tmp_path, text):
    folder = tmp_path / "resnet"
    shutil.copytree(RESNET, folder)
    (folder / "scaling.json").write_text(text)
    score = _scores(folder, tmp_path / "out")
    assert score["score_min"] is None
    assert any("scaling.json" in f for f in score["flags"])


# -- DAWNBench: gzip read like everywhere else; a trace or binary file is no entry -----------

NOT_AN_ENTRY = (
    "not a DAWNBench entry (none of the fields version, author, framework, model, hardware, "
    "timestamp; it looks like a Chrome/Kineto trace)"
)


def test_dawnbench_gzipped_entry_reads_like_the_plain_one(tmp_path):
    src = tmp_path / "CIFAR10" / "train"
    src.mkdir(parents=True)
    (src / "r9.json.gz").write_bytes(gzip.compress((TRAIN / "normal_resnet9.json").read_bytes()))
    shutil.copy(TRAIN / "normal_resnet9.tsv", src / "r9.tsv")  # x.json.gz pairs with x.tsv
    rec = load_entry(src / "r9.json.gz").record
    assert rec["run_id"] == "dawnbench-cifar10-train-r9"
    assert rec["time_to_accuracy"]["time_s"] == 144.0
    assert rec["flags"] == []
    from perfsuite.importers.dawnbench import discover

    assert list(discover([tmp_path])) == [src / "r9.json.gz"]  # a folder import finds it too


def test_dawnbench_on_a_gzipped_trace_says_it_is_no_entry(tmp_path, capsys):
    events = [{"ph": "X", "name": "k", "args": {"Input Dims": [[[1, 2]]]}}]  # depth 6
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    with pytest.raises(ImportFailure) as info:
        load_entry(path)
    assert str(info.value) == f"{path}: {NOT_AN_ENTRY}"
    assert main(["import", "dawnbench", str(path), "--out", str(tmp_path / "runs")]) == 2
    assert (
        capsys.readouterr().err.strip().splitlines()[-1]
        == f"perfsuite: error: {path}: {NOT_AN_ENTRY}"
    )


def test_dawnbench_on_the_shared_pytorch_trace(tmp_path, capsys):
    path = shared_path("traces", "trace_filter__sampled_rank-0.json.gz")
    assert main(["import", "dawnbench", str(path), "--out", str(tmp_path / "runs")]) == 2
    assert f"{path}: {NOT_AN_ENTRY}" in capsys.readouterr().err


# bracket-rich binary, once read as Latin-1 and reported as nesting over 64 levels
PNG_LIKE = b"\x89PNG\r\n\x1a\n" + b"[" * 100 + bytes(range(256))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (PNG_LIKE, "not a DAWNBench entry (binary data, NUL byte at offset 108, not JSON text)"),
        (b"\xe9" + b"[" * 100, "not valid JSON (line 1, column 1)"),  # text, but not JSON
        (b"", "empty file"),
        (b" \n", "empty file"),
    ],
)
def test_dawnbench_on_binary_or_non_json_text(tmp_path, body, message):
    path = tmp_path / "CIFAR10" / "x.json"
    path.parent.mkdir()
    path.write_bytes(body)
    with pytest.raises(ImportFailure) as info:
        load_entry(path)
    assert str(info.value) == f"{path}: {message}"


def test_dawnbench_deep_json_entry_is_still_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"model": ' + "[" * 65 + "]" * 65 + "}")
    with pytest.raises(ImportFailure, match="nested deeper than the 64-level limit"):
        load_entry(path)
