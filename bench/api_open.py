"""How long `import perfsuite` and opening a record or a trace take, in fresh processes.

Why fresh processes: a notebook pays the imports once per kernel, and a warm process would hide
them. Each row runs PERFSUITE_BENCH_REPEATS (default 5) new interpreters and reports the median
and range of the timed part; the child also says whether torch, tensorflow or pandas was
imported. Inputs: the shared H100 run (extracted to a temp folder) and the shared NCCL rank-0
trace. Rows:
- import perfsuite: the package alone (the API entry points load pandas on first use);
- open run: `import perfsuite` + `perfsuite.open(run folder)` (record loaded and validated);
- open run + ops: the above plus the per-op roofline table (roofline analysis, trace sidecar);
- trace: `import perfsuite` + `perfsuite.trace(file)` (read and analyzed) + its kernel table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from perfsuite.fmt import si, table

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PERFSUITE_SHARED_DATA", ROOT.parent / "shared" / "data"))
TRACE = "trace_filter__sampled_rank-0.json.gz"

_CHILD = r"""
import json, sys, time
mode, path = sys.argv[1], sys.argv[2]
if mode == "again":  # a kernel that has opened a run before: imports paid already
    import perfsuite
    perfsuite.open(path)
t0 = time.perf_counter()
import perfsuite
if mode in ("open", "again"):
    perfsuite.open(path)
elif mode == "ops":
    perfsuite.open(path).ops
elif mode == "trace":
    perfsuite.trace(path).kernels
dt = time.perf_counter() - t0
mods = [m for m in ("torch", "tensorflow", "pandas") if m in sys.modules]
print(json.dumps({"s": dt, "modules": mods}))
"""


def _time(mode: str, path: Path, repeats: int) -> tuple[list[float], list[str]]:
    times, mods = [], []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, mode, str(path)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        res = json.loads(out.stdout)
        times.append(res["s"])
        mods = res["modules"]
    return times, mods


def main() -> None:
    repeats = int(os.environ.get("PERFSUITE_BENCH_REPEATS", "5"))
    tar = SHARED / "gpu" / "h100-cifar10-run.tar.gz"
    trace = SHARED / "traces" / TRACE
    if not tar.is_file() or not trace.is_file():
        print(f"api_open: skipped (shared data not found under {SHARED})")
        return
    with tempfile.TemporaryDirectory(prefix="perfsuite-bench-api-") as tmp:
        with tarfile.open(tar) as tf:
            tf.extractall(tmp, filter="data")
        run = next(Path(tmp).glob("*/run.json")).parent
        rows = []
        for label, mode, path in [
            ("import perfsuite", "import", run),
            ("open run (H100 cifar10)", "open", run),
            ("open run + ops table", "ops", run),
            ("open run, again in the same process", "again", run),
            (f"trace + kernels ({TRACE})", "trace", trace),
        ]:
            times, mods = _time(mode, path, repeats)
            rows.append([label, si(statistics.median(times), "s"),
                         f"{si(min(times), 's')} - {si(max(times), 's')}",
                         ", ".join(mods) or "-"])  # fmt: skip
    print(f"fresh interpreter per measurement, {repeats} each; CPU shared with other jobs")
    print(table(rows, ["what", "median", "range", "imported"], "lrrl"))
