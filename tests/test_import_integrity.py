"""Imports hold the record's rules: bad DAWNBench values are refused by field in one line, and
two imports running at the same time into one `--out` never write one run folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite.importers.common import ImportFailure
from perfsuite.importers.dawnbench import load_entry
from perfsuite.record import load_records

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
