"""The performance history's two speed goals, with Apache Otava's own code timed beside ours.

- add: 10,000 run records on disk into a new SQLite store through `perfsuite history add`'s
  path (find, load and validate each record, make its rows, one transaction): goal <= 10 s.
  Made from one real-shaped record written with `write_record`, copied with new run ids and
  times (the copying is not timed). Beside it, validation alone on 1,000 of those records:
  the loader's path (the schema compiled once into a yes/no test, perfsuite.record.fastschema)
  and jsonschema's alone, the reference that words every error.
- analyse: 100 seeded series of 1,000 points (a step in most), change points at Otava's
  defaults (window 50, p 0.001): goal <= 2 s for all 100. The same series go to
  `otava.analysis.compute_change_points` in a child process of a virtual environment that has
  apache-otava (PERFSUITE_OTAVA_PYTHON, default /tmp/otava-venv/bin/python; skipped with the
  reason when absent), timed inside the child, and the indices are compared series by series.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from perfsuite.fmt import table

ADD_RECORDS = int(os.environ.get("PERFSUITE_BENCH_HISTORY_RECORDS", "10000"))
VALIDATE_RECORDS = 1000  # records validated on each path for the side-by-side rows
SERIES, POINTS = 100, 1000
OTAVA_PYTHON = os.environ.get("PERFSUITE_OTAVA_PYTHON", "/tmp/otava-venv/bin/python")

_OTAVA_CHILD = r"""
import json, sys, time
from otava.analysis import compute_change_points
series = json.load(open(sys.argv[1]))
t0 = time.perf_counter()
found = [[int(p.index) for p in compute_change_points(list(s))[0]] for s in series]
print(json.dumps({"s": time.perf_counter() - t0, "indices": found}))
"""


def _record_folders(root: Path, n: int) -> None:
    from perfsuite.record import new_record, quantity, write_record

    rec = new_record(
        run_id="bench-000000",
        task={"name": "digits", "workload": "digits", "metric": "top1", "threshold": 0.9},
    )
    rec["evaluations"] = [{"epoch": 1, "train_time_s": 40.0, "metrics": {"top1": 0.95}}]
    rec["time_to_accuracy"] = {"metric": "top1", "threshold": 0.9, "reached": True,
                               "time_s": 40.0, "epoch": 1, "evaluation_index": 0,
                               "provenance": "measured"}  # fmt: skip
    rec["status"] = "reached"
    rec["throughput"] = {"step_time": quantity(0.01, "s", "measured", "bench")}
    rec["hardware"] = {"name": "Bench CPU", "accelerator": "cpu", "count": 1}
    text = write_record(root.parent / "template", rec).read_text()
    for i in range(n):
        folder = root / f"r{i:06d}"
        folder.mkdir(parents=True)
        hour, sec = divmod(i, 3600)
        stamp = f"2026-01-{1 + hour:02d}T00:{sec // 60:02d}:{sec % 60:02d}Z"
        (folder / "run.json").write_text(
            text.replace("bench-000000", f"bench-{i:06d}").replace(rec["created_at"], stamp)
        )


def bench_add() -> list[list[str]]:
    from perfsuite.cli.history_add import add_records
    from perfsuite.history_store.series import Row
    from perfsuite.history_store.store import open_store

    with tempfile.TemporaryDirectory(prefix="perfsuite-bench-history-") as tmp:
        root = Path(tmp)
        _record_folders(root / "runs", ADD_RECORDS)
        t0 = time.perf_counter()
        added, _, _ = add_records([str(root / "runs")], str(root / "h.sqlite"))
        seconds = time.perf_counter() - t0
        with open_store(str(root / "h.sqlite")) as store:
            rows = [
                Row(f"copy-{i}", p.run, {}, s.metric, p.time, p.value, p.attributes, p.run)
                for s in store.series() for i, p in enumerate(s.points)
            ]  # fmt: skip
        t0 = time.perf_counter()
        with open_store(str(root / "copy.sqlite"), create=True) as store:
            store.add(rows)
        store_s = time.perf_counter() - t0
        fast_s, reference_s, checked = _validation_paths(root / "runs")
    goal = 10 * ADD_RECORDS / 10000
    return [
        [f"add {ADD_RECORDS:,} records to SQLite (load, validate, rows, store)",
         f"{seconds:.2f} s", f"{added:,} rows",
         f"<= {goal:g} s: {'met' if seconds <= goal else 'MISSED'}"],
        [f"  of which the store alone: the same {len(rows):,} rows, one transaction",
         f"{store_s:.2f} s", f"{len(rows):,} rows", ""],
        [f"  validating {checked:,} of the records: the loader (compiled schema test)",
         f"{fast_s:.2f} s", f"{checked:,} valid", ""],
        [f"  the same {checked:,} with jsonschema alone (the reference path)",
         f"{reference_s:.2f} s", f"{checked:,} valid",
         f"loader / reference: {fast_s / reference_s:.2f}"],
    ]  # fmt: skip


def _validation_paths(runs: Path) -> tuple[float, float, int]:
    """Seconds to validate up to VALIDATE_RECORDS of the records already on disk (loaded
    first, untimed) on the loader's path and on jsonschema's alone, and how many."""
    from perfsuite.record import find_records, load_record, validate_record
    from perfsuite.record.io import strip_private

    files = list(find_records([runs]))[:VALIDATE_RECORDS]
    records = [strip_private(load_record(f)) for f in files]
    seconds = []
    for fast in (True, False):
        t0 = time.perf_counter()
        for record in records:
            validate_record(record, "run.json", fast=fast)
        seconds.append(time.perf_counter() - t0)
    return seconds[0], seconds[1], len(records)


def _series() -> list[list[float]]:
    rng = np.random.default_rng(51)
    out = []
    for k in range(SERIES):
        cut = int(rng.integers(100, 900))
        base = float(rng.uniform(10, 1000))
        shift = 0.0 if k % 5 == 0 else float(rng.choice([-1, 1]) * rng.uniform(0.01, 0.1))
        values = np.concatenate(
            [
                rng.normal(base, base * 0.01, cut),
                rng.normal(base * (1 + shift), base * 0.01, POINTS - cut),
            ]
        )
        out.append([round(float(v), 6) for v in values])
    return out


def bench_analyse() -> list[list[str]]:
    from perfsuite.analyzers.history.changepoints import change_points

    series = _series()
    t0 = time.perf_counter()
    ours = [[p.index for p in change_points(s)] for s in series]
    seconds = time.perf_counter() - t0
    rows = [[f"analyse {SERIES} series x {POINTS:,} points (perfsuite)", f"{seconds:.2f} s",
             f"{sum(map(len, ours))} change points",
             f"<= 2 s: {'met' if seconds <= 2 else 'MISSED'}"]]  # fmt: skip
    if not Path(OTAVA_PYTHON).is_file():
        rows.append(["the same in Apache Otava", "skipped", f"no {OTAVA_PYTHON}", ""])
        return rows
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(series, fh)
    try:
        done = subprocess.run([OTAVA_PYTHON, "-c", _OTAVA_CHILD, fh.name], capture_output=True,
                              text=True, check=True)  # fmt: skip
    finally:
        os.unlink(fh.name)
    theirs = json.loads(done.stdout)
    same = sum(a == b for a, b in zip(ours, theirs["indices"], strict=True))
    rows.append([f"the same in Apache Otava ({OTAVA_PYTHON})", f"{theirs['s']:.2f} s",
                 f"same indices in {same}/{SERIES} series",
                 f"perfsuite / Otava time: {seconds / theirs['s']:.2f}"])  # fmt: skip
    return rows


def main() -> None:
    rows = [*bench_add(), *bench_analyse()]
    print(table(rows, ["what", "time", "result", "goal"]))
