"""Trace analysis throughput and memory: perfsuite timeline vs HTA on the same files.

Files: the largest shared real trace and a synthetic Kineto-like trace (PERFSUITE_BENCH_EVENTS
events, default 1,000,000, gzipped, generated in a temp folder). Every measurement runs in its
own subprocess so peak RSS is that tool's alone; the reported memory is the peak RSS minus the
RSS after imports (what analysing the file costs). Rows:
- perfsuite: read_trace + analyze_trace (everything `perfsuite timeline` computes);
- perfsuite (pure-python ijson): the same with ijson's Python backend, shared trace only;
- json.load: the whole document in memory, events counted (no analysis), for scale;
- HTA: TraceAnalysis load + temporal, kernel and idle-time breakdowns.

Then the "1 GB trace" rows (`--size-gb`, default 1.0; `--no-hta`; `--reference`): one
generated trace of that size uncompressed, gzipped (as profilers write them) and the same
file plain, and a folder of 8 gzipped rank files of the same total size, each read by
perfsuite cold (no column cache beside it: the read writes one), perfsuite warm (the cache),
optionally the reference ijson path, and HTA (not on the plain copy: it holds the gzipped
file's events). Wall, CPU (the process and its worker processes, user + system, less the
memory sampler's own) and peak RSS (the sum over the process tree, sampled every 10 ms from
/proc/<pid>/statm, the tree's members found again every 100 ms; interpreter and imports
included; buffers shared with workers count once per process). The sampler is a process of
its own and took 0.03 to 0.05 CPU-s per second of wall on the 2-core VM of
docs/results/2026-11-27-trace-1gb-cpu.md (scanning every process every 10 ms took 0.1 to
0.17): on 2 cores its CPU competes with the read.
`python -m bench trace_throughput --scale-only` runs only these rows.

The goal for the gzipped 1 GB file's cold read (GOAL_RATIO, GOAL_PEAK_BYTES): at most 5x
the wall time of a plain read of the same file through Python's gzip module (the "gzip
module read" row, measured in a process of its own just before each cold read, so that both
see the same load), at most 700 MB peak RSS. `--cold-reads N` reads it cold N times; the
verdict takes the median ratio and the largest peak.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from perfsuite.fmt import si, table

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES = Path(os.environ.get("PERFSUITE_SHARED_DATA", ROOT.parent / "shared" / "data"))
TIMEOUT_S = 1800
HTA_MAX_EVENTS = 30_000

# The tree's peak RSS, run as `python -c SAMPLER <pid> <out>`: every 10 ms, the sum of the
# resident pages of <pid> and its descendants (/proc/<pid>/statm, each kept open and read
# again from offset 0), the largest written to <out>. Finding the descendants scans every
# process on the machine (psutil reads /proc/*/stat), so the list is refreshed every
# REFRESH-th sample only (every 100 ms): the reader's worker processes live for the whole read.
SAMPLER = r"""
import os, sys, time, psutil
pid, out, me, peak = int(sys.argv[1]), sys.argv[2], os.getpid(), 0
page, REFRESH, n, fds = os.sysconf("SC_PAGE_SIZE"), 10, 0, {}
while True:
    if n % REFRESH == 0:
        try:
            tree = [pid] + [c.pid for c in psutil.Process(pid).children(True) if c.pid != me]
        except psutil.Error:
            break
        for q in set(fds) - set(tree):
            os.close(fds.pop(q))
        for q in tree:
            if q not in fds:
                try:
                    fds[q] = os.open(f"/proc/{q}/statm", os.O_RDONLY)
                except OSError:
                    pass
    n += 1
    rss = 0
    for q, fd in fds.items():
        try:
            rss += int(os.pread(fd, 128, 0).split()[1]) * page
        except (OSError, IndexError, ValueError):  # the process has ended
            if q == pid:
                sys.exit(0)
    if rss > peak:
        peak = rss
        with open(out + ".tmp", "w") as fh:
            fh.write(str(peak))
        os.replace(out + ".tmp", out)
    time.sleep(0.01)
"""

_CHILD = r"""
import json, os, sys, time, warnings, logging, resource
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
mode, path = sys.argv[1], sys.argv[2]
import psutil, subprocess, tempfile
# The memory sampler is a process of its own: a thread here would make this process
# multi-threaded, and the trace reader forks its worker pool only in a single-threaded one.
_SAMPLER = @SAMPLER@
_peak_file = os.path.join(tempfile.mkdtemp(prefix="perfsuite-bench-"), "peak")
_sampler = subprocess.Popen([sys.executable, "-c", _SAMPLER, str(os.getpid()), _peak_file])
if mode.startswith("perfsuite"):
    import perfsuite.traces.reader as reader
    from perfsuite.analyzers.timeline import analyze_trace
    if mode == "perfsuite-python":
        import ijson.backends.python as slow
        reader._ijson_backend = lambda: slow
elif mode == "hta":
    from hta.trace_analysis import TraceAnalysis
base = psutil.Process().memory_info().rss
t0 = time.perf_counter()
if mode.startswith("perfsuite"):
    files = [path]
    if os.path.isdir(path):
        names = [f for f in os.listdir(path) if f.endswith((".json", ".json.gz"))]
        files = sorted(os.path.join(path, f) for f in names)
    events, backend, read_s = 0, "", 0.0
    for f in files:
        t_read = time.perf_counter()
        if mode == "perfsuite":  # the small rows: no cache
            data = reader.read_trace(f, cache=False)
        elif mode in ("perfsuite-reference", "perfsuite-python"):  # ijson, event by event
            data = reader.read_trace(f, fast=False, cache=False)
        else:  # perfsuite-cold / perfsuite-warm: the cache as `perfsuite timeline` uses it
            data = reader.read_trace(f)
        read_s += time.perf_counter() - t_read
        analyze_trace(data)
        events += data.events_total
        backend = data.backend
elif mode == "json":
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as fh:
        events = len(json.load(fh)["traceEvents"])
else:
    ta = TraceAnalysis(trace_dir=path if os.path.isdir(path) else os.path.dirname(path))
    ta.get_temporal_breakdown(visualize=False)
    ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    ta.get_idle_time_breakdown(visualize=False)
    events = None
wall = time.perf_counter() - t0
# VmHWM belongs to this process image; ru_maxrss would keep the high-water mark inherited
# from the (possibly large) parent across fork+exec.
with open("/proc/self/status") as fh:
    hwm = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
peak = hwm * 1024
# the sampler is not yet waited for, so RUSAGE_CHILDREN leaves its CPU time out
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
_sampler.terminate()
_sampler.wait()
try:
    with open(_peak_file) as fh:
        tree_peak = [int(fh.read())]
except (OSError, ValueError):
    tree_peak = [0]
print(json.dumps({"wall_s": wall, "events": events, "mem_bytes": max(peak - base, 0),
                  "cpu_s": cpu, "tree_peak_bytes": max(tree_peak[0], peak),
                  "backend": locals().get("backend", ""), "read_s": locals().get("read_s")}))
"""


def synthetic_trace(path: Path, n_events: int, seed: int = 0, rank: int = 0) -> int:
    """A Kineto-shaped trace: per step a cpu_op with shapes, its launch call, a flow event and
    a kernel on one of two streams; an NCCL kernel every 50 ops. Returns the event count."""
    rng = random.Random(seed)
    pid = 4242
    t = g = 1_000_000.0
    corr = n = 0
    with gzip.open(path, "wt", compresslevel=1) as fh:
        fh.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "synthetic"}], ')
        fh.write(f'"distributedInfo": {{"rank": {rank}}}, "traceEvents": [\n')
        sep = ""
        while n < n_events:
            corr += 1
            d_op = rng.randint(5, 50)
            kd = rng.randint(2, 40)
            stream = 7 if corr % 3 else 13
            name = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"
            if corr % 50:
                name = "void at::native::vectorized_elementwise_kernel<4>(int)"
            gs = max(g, t + 5)
            fh.write(
                f'{sep}{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": {pid}, '
                f'"tid": {pid}, "ts": {t}, "dur": {d_op}, "args": {{"External id": {corr}, '
                f'"Input Dims": [[64, 128], [64, 128], []], '
                f'"Input type": ["float", "float", "Scalar"], '
                f'"Concrete Inputs": ["", "", "1"]}}}},\n'
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, '
                f'"tid": {pid}, "ts": {t + 1}, "dur": 3, "args": {{"cbid": 211, '
                f'"correlation": {corr}}}}},\n'
                f'{{"ph": "s", "id": {corr}, "pid": {pid}, "tid": {pid}, "ts": {t + 1}, '
                f'"cat": "ac2g", "name": "ac2g"}},\n'
                f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": {stream}, '
                f'"ts": {gs}, "dur": {kd}, "args": {{"device": 0, "stream": {stream}, '
                f'"correlation": {corr}, "grid": [64, 1, 1], "block": [128, 1, 1]}}}}'
            )
            sep = ",\n"
            n += 4
            g = gs + kd
            t += d_op + rng.randint(0, 10)
        fh.write("\n]}\n")
    return n


def run_child(code: str, *args: str) -> dict:
    """Run a measuring child (`code`, with the memory sampler pasted in at @SAMPLER@) on
    `args` in a fresh interpreter: its last stdout line as JSON, or {"error": why}."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code.replace("@SAMPLER@", repr(SAMPLER)), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {TIMEOUT_S} s"}
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(mode: str, path: Path) -> dict:
    """One read of `path` by perfsuite (`mode`: cold or warm column cache), in a fresh child."""
    return run_child(_CHILD, mode, str(path))


def _largest_shared() -> Path | None:
    folder = SHARED_TRACES / "traces"
    files = (
        sorted(folder.glob("*.json*"), key=lambda p: p.stat().st_size) if folder.is_dir() else []
    )
    return files[-1] if files else None


def _rows(label: str, path: Path, events: int, modes: list[str]) -> list[list[str]]:
    results = {}
    for mode in modes:
        print(f"[bench] {label}: {mode} ...", file=sys.stderr, flush=True)
        results[mode] = measure(mode, path)
    hta = results.get("hta") or {}
    rows = []
    for mode, res in results.items():
        if res is None or "error" in res:
            rows.append([label, events, mode, "-", "-", "-", "-", (res or {}).get("error", "")])
            continue
        ratio = ""
        if mode != "hta" and "wall_s" in hta:
            ratio = f"{hta['wall_s'] / res['wall_s']:.1f}x"
        rows.append(
            [label, events, mode, f"{res['wall_s']:.2f}", si(events / res["wall_s"], "ev/s"),
             si(res["mem_bytes"], "B"), f"{res['mem_bytes'] / events:.0f}", ratio]
        )  # fmt: skip
    return rows


def _scale_rows(
    size_gb: float, hta: bool, reference: bool, tmp: Path, cold_reads: int = 1
) -> tuple[list[list[str]], list[tuple[dict, dict | None]]]:
    """The "1 GB trace" rows: one file of `size_gb` uncompressed and 8 rank files; the
    gzipped file is read cold `cold_reads` times, each read after a plain gzip read of it.
    Gives the rows and, for goal_lines, each (gzip read, cold read) pair."""
    events = int(size_gb * 1e9 / SYNTH_BYTES_PER_EVENT) // 4 * 4
    label = f"{size_gb:g} GB trace"
    one, plain, ranks = tmp / "one", tmp / "plain", tmp / "ranks"
    for folder in (one, plain, ranks):
        folder.mkdir()
    print(f"[bench] generating {events:,} events ({label}) ...", file=sys.stderr, flush=True)
    path = one / "synthetic.json.gz"
    synthetic_trace(path, events)
    with gzip.open(path, "rb") as src, open(plain / "synthetic.json", "wb") as dst:
        shutil.copyfileobj(src, dst, 16 << 20)
    for r in range(8):
        synthetic_trace(ranks / f"rank-{r}.json.gz", events // 8 // 4 * 4, seed=r, rank=r)
    rows = []
    targets = (
        (f"{label} (gzip)", path, hta),
        (f"{label} (plain JSON)", plain / "synthetic.json", False),
        (f"{label}, 8 ranks (gzip)", ranks, hta),
    )
    goal: list[tuple[dict, dict | None]] = []
    for what, target, with_hta in targets:
        colds = cold_reads if target == path else 1
        modes = ["perfsuite-cold"] * colds + ["perfsuite-warm"]
        modes += ["perfsuite-reference"] if reference else []
        modes += ["hta"] if with_hta else []
        for mode in modes:
            if mode == "perfsuite-cold":
                _drop_caches(target)
            if mode == "perfsuite-cold" and target == path:  # the goal's yardstick, just before
                gz = _measure_gzip_read(path)
                rows.append([what, "gzip module read", "-", f"{gz['wall_s']:.2f}",
                             f"{gz['cpu_s']:.2f}", "-", "gzip.open(...).read(16 MiB)"])  # fmt: skip
            print(f"[bench] {what}: {mode} ...", file=sys.stderr, flush=True)
            res = measure(mode, target)
            if mode == "perfsuite-cold" and target == path:
                goal.append((gz, res))
            if res is None or "error" in res:
                rows.append([what, mode, "-", "-", "-", "-", (res or {}).get("error", "")])
                continue
            read = f"{res['read_s']:.2f}" if res.get("read_s") is not None else "-"
            rows.append(
                [what, mode, read, f"{res['wall_s']:.2f}", f"{res['cpu_s']:.2f}",
                 si(res["tree_peak_bytes"], "B"), res.get("backend", "")[:48]]
            )  # fmt: skip
    return rows, goal


def _drop_caches(target: Path) -> None:
    """Remove the column caches beside a trace file or in a folder of traces."""
    for cache in [*target.parent.glob("*.perfsuite-columns"), *target.glob("*.perfsuite-columns")]:
        cache.unlink()


# The cold read's goal: at most GOAL_RATIO times a plain read of the same gzipped file
# through the standard library's gzip module, at most GOAL_PEAK_BYTES peak RSS.
GOAL_RATIO = 5.0
GOAL_PEAK_BYTES = 700e6

_GZIP_READ = r"""
import gzip, json, resource, sys, time
t0 = time.perf_counter()
with gzip.open(sys.argv[1], "rb") as fh:
    while fh.read(16 << 20):
        pass
wall = time.perf_counter() - t0
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": wall, "cpu_s": r.ru_utime + r.ru_stime}))
"""


def _measure_gzip_read(path: Path) -> dict:
    """Wall and CPU seconds of decompressing `path` with gzip.open in 16 MiB reads, nothing
    else, in a process of its own (interpreter start-up not in the wall time)."""
    proc = subprocess.run(
        [sys.executable, "-c", _GZIP_READ, str(path)],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout)


def goal_lines(goal: list[tuple[dict, dict | None]], what: str) -> list[str]:
    """The 1 GB gzip file's cold reads against the goal: each read's ratio to the gzip read
    measured just before it, then PASS or FAIL on the median ratio and the largest peak."""
    lines, ratios, peaks = [], [], []
    for i, (gz, res) in enumerate(goal, 1):
        if res is None or "error" in res or res.get("read_s") is None:
            lines.append(f"  cold read {i}: failed ({(res or {}).get('error', '')})")
            continue
        ratio = res["read_s"] / gz["wall_s"]
        ratios.append(ratio)
        peaks.append(res["tree_peak_bytes"])
        lines.append(
            f"  cold read {i}: {res['read_s']:.2f} s against a gzip read of {gz['wall_s']:.2f} s"
            f" = {ratio:.1f}x; peak RSS {si(res['tree_peak_bytes'], 'B')}"
        )
    if not ratios:
        return ["Goal: no cold read completed: FAIL", *lines]
    median = statistics.median(ratios)
    time_ok, peak_ok = median <= GOAL_RATIO, max(peaks) <= GOAL_PEAK_BYTES
    return [
        f"Goal, {what} read cold: at most {GOAL_RATIO:g}x the gzip read, at most "
        f"{si(GOAL_PEAK_BYTES, 'B')} peak RSS",
        *lines,
        f"  median {median:.1f}x: {'PASS' if time_ok else 'FAIL'}; largest peak "
        f"{si(max(peaks), 'B')}: {'PASS' if peak_ok else 'FAIL'}",
    ]


# The generator's events average 192.8 bytes of JSON each (1.0025 GB for 5.2M events).
SYNTH_BYTES_PER_EVENT = 192.8


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m bench trace_throughput")
    ap.add_argument("--size-gb", type=float, default=1.0, help="the large trace, GB of JSON")
    ap.add_argument("--no-hta", action="store_true", help="skip HTA on the large traces")
    ap.add_argument("--reference", action="store_true", help="also the ijson reference path")
    ap.add_argument("--scale-only", action="store_true", help="only the large-trace rows")
    ap.add_argument(
        "--cold-reads", type=int, default=1, help="cold reads of the gzipped large trace"
    )
    args = ap.parse_args(argv or [])
    if not args.scale_only:
        _small_main()
    with tempfile.TemporaryDirectory(prefix="perfsuite-trace-bench-") as tmp:
        rows, goal = _scale_rows(
            args.size_gb, not args.no_hta, args.reference, Path(tmp), max(1, args.cold_reads)
        )
    print()
    headers = ["trace", "tool", "read s", "wall s", "CPU s", "peak RSS", "reader"]
    print(table(rows, headers, "llrrrrl"))
    print("read s: wall time of read_trace alone; wall s: read + analysis (what `perfsuite")
    print("timeline` computes), the tool's whole run for HTA.")
    print("CPU s: user + system of the process and its workers; peak RSS: sum over the")
    print("process tree, sampled every 10 ms (its members found every 100 ms). cold: no")
    print("column cache (the read writes one); warm: the cache written by the cold read. HTA")
    print("does not read the plain copy: it holds the gzipped file's events. gzip module read:")
    print("the gzipped file decompressed by Python's gzip module, nothing else (the goal's unit).")
    print()
    print("\n".join(goal_lines(goal, f"{args.size_gb:g} GB trace (gzip)")))


def _small_main() -> None:
    n_events = int(os.environ.get("PERFSUITE_BENCH_EVENTS", "1000000"))
    rows: list[list[str]] = []
    shared = _largest_shared()
    with tempfile.TemporaryDirectory(prefix="perfsuite-trace-bench-") as tmp:
        if shared is not None:
            folder = Path(tmp) / "shared"
            folder.mkdir()
            copy = folder / shared.name
            copy.write_bytes(shared.read_bytes())
            with gzip.open(copy, "rt") as fh:
                events = len(json.load(fh)["traceEvents"])
            modes = ["perfsuite", "perfsuite-python", "json", "hta"]
            rows += _rows(shared.name[:32], copy, events, modes)
        else:
            print(f"[bench] no shared traces under {SHARED_TRACES}; synthetic only")
        # A small synthetic trace too: HTA 0.5 under pandas 3 raises TypeError on traces whose
        # correlation ids all fit in int16 but that hold more than 32,767 events (it stores
        # event indices in the int16-downcast correlation column), e.g. 40,000 generated events.
        for size in sorted({min(HTA_MAX_EVENTS, n_events), n_events}):
            folder = Path(tmp) / f"synthetic-{size}"
            folder.mkdir()
            path = folder / "synthetic.json.gz"
            print(f"[bench] generating {size:,} synthetic events ...", file=sys.stderr, flush=True)
            events = synthetic_trace(path, size)
            label = f"synthetic ({si(path.stat().st_size, 'B')} gz)"
            rows += _rows(label, path, events, ["perfsuite", "json", "hta"])
    headers = ["trace", "events", "tool", "wall s", "throughput", "peak mem", "B/event",
               "speed vs HTA"]  # fmt: skip
    print(table(rows, headers, "lrlrrrrl"))
    print("peak mem: peak RSS (VmHWM) of the measuring subprocess minus its RSS after imports;")
    print("speed vs HTA: HTA wall time / this row's wall time. json = json.load only, no analysis.")


if __name__ == "__main__":
    main(sys.argv[1:])
