"""Nsight Systems export read against a cold Kineto trace of the same event count.

`python -m bench nsys_throughput [--events N]` (default 1,000,000; the goal is stated for about
5,000,000) writes an nsys SQLite export with the schema of the shared real one (half kernels,
half launch calls: bench.nsys_export) and a Kineto trace of N events (trace_throughput's
synthetic trace, gzipped), then reads each in a process of its own: the export through
`read_profile` + `analyze_trace` (what `perfsuite timeline report.sqlite` computes), the trace
cold as `perfsuite timeline` reads it (no column cache yet). Wall time, peak RSS of the process
tree (trace_throughput's sampler) and the memory the read costs (RSS after imports
subtracted). Goal: the export read in at most the cold Kineto time, at most 1 GB peak RSS.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench.nsys_export import synthetic_export
from bench.trace_throughput import ROOT, measure, run_child, synthetic_trace
from perfsuite.fmt import si, table

SOURCE = Path(os.environ.get("PERFSUITE_SHARED_DATA", ROOT.parent / "shared" / "data"))
SCHEMA = SOURCE / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
RSS_GOAL = 1e9

_CHILD = r"""
import json, os, sys, time, subprocess, tempfile
import psutil
path = sys.argv[1]
peak_file = os.path.join(tempfile.mkdtemp(prefix="perfsuite-bench-"), "peak")
sampler = subprocess.Popen([sys.executable, "-c", @SAMPLER@, str(os.getpid()), peak_file])
from perfsuite.analyzers.timeline import analyze_trace, read_profile
base = psutil.Process().memory_info().rss
t0 = time.perf_counter()
data = read_profile(path)
read_s = time.perf_counter() - t0
analyze_trace(data)
wall = time.perf_counter() - t0
with open("/proc/self/status") as fh:
    hwm = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) * 1024
sampler.terminate()
sampler.wait()
try:
    tree = int(open(peak_file).read())
except (OSError, ValueError):
    tree = 0
print(json.dumps({"wall_s": wall, "read_s": read_s, "events": data.events_total,
                  "mem_bytes": max(hwm - base, 0), "tree_peak_bytes": max(tree, hwm),
                  "backend": data.backend}))
"""


def _measure_export(path: Path) -> dict:
    return run_child(_CHILD, str(path))


def _row(label: str, res: dict | None, size: int) -> list[str]:
    if res is None or "error" in res:
        return [label, "-", "-", "-", "-", si(size, "B"), (res or {}).get("error", "")]
    return [
        label,
        str(res["events"]),
        f"{res['wall_s']:.2f}",
        f"{res['read_s']:.2f}",
        si(res["tree_peak_bytes"], "B"),
        si(size, "B"),
        res.get("backend", ""),
    ]


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench nsys_throughput")
    ap.add_argument("--events", type=int, default=1_000_000, help="events in each file")
    args = ap.parse_args(argv)
    if not SCHEMA.is_file():
        print(f"[bench] nsys_throughput skipped: {SCHEMA} not found (the schema to copy)")
        return
    with tempfile.TemporaryDirectory(prefix="perfsuite-nsys-bench-") as tmp:
        export, kineto = Path(tmp) / "big.sqlite", Path(tmp) / "big.json.gz"
        t0 = time.perf_counter()
        n_export = synthetic_export(export, SCHEMA, args.events)
        print(
            f"[bench] export of {n_export} events written in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        t0 = time.perf_counter()
        n_kineto = synthetic_trace(kineto, args.events)
        print(
            f"[bench] Kineto trace of {n_kineto} events written in "
            f"{time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        nsys = _measure_export(export)
        cold = measure("perfsuite-cold", kineto)
        if cold is not None and "error" not in cold:
            cold["events"] = n_kineto
        rows = [
            _row("nsys export (sqlite3)", nsys, export.stat().st_size),
            _row("Kineto trace, cold", cold, kineto.stat().st_size),
        ]
    print(
        table(rows, ["file", "events", "wall s", "read s", "peak RSS", "size", "reader"], "lrrrrrl")
    )
    if "wall_s" in nsys and cold and "wall_s" in cold:
        ok_time = nsys["wall_s"] <= cold["wall_s"]
        ok_rss = nsys["tree_peak_bytes"] <= RSS_GOAL
        print(
            f"goal: export read in at most the cold Kineto time ({nsys['wall_s']:.2f} s vs "
            f"{cold['wall_s']:.2f} s: {'met' if ok_time else 'NOT met'}) and at most 1 GB "
            f"peak RSS ({si(nsys['tree_peak_bytes'], 'B')}: {'met' if ok_rss else 'NOT met'})"
        )
    print(
        "wall s: read + analysis (what `perfsuite timeline FILE` computes); read s: the read "
        "alone; peak RSS: the process tree, imports included"
    )
