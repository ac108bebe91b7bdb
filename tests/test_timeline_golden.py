"""The timeline analysis, figure for figure, against stored expected output.

Every figure of `analyze_trace` (all rows: top=0) on each shared real trace and on generated
traces is compared with JSON written by the reference implementation (float repr, so the last
digit counts). Regenerate the fixtures only when a figure is meant to change:
`PYTHONPATH=. python tests/test_timeline_golden.py --write`.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import sys
import tarfile
from pathlib import Path

import pytest

from perfsuite.analyzers.timeline import analyze_trace, read_trace
from tests.conftest import SHARED_DATA

FIXTURES = Path(__file__).parent / "fixtures" / "timeline_golden"
SHARED = SHARED_DATA
SHARED_TRACES = [
    "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz",
    "trace_filter__sampled_rank-0.json.gz",
    "trace_filter__sampled_rank-1.json.gz",
]
# (seed, steps, device filter) of the generated traces; seed 4 is CPU-only (host roofline).
GENERATED = [(1, 400, None), (2, 1500, None), (2, 1500, 1), (3, 60, 0), (4, 300, None)]


def generated_trace(path: Path, seed: int, steps: int) -> None:
    """A Kineto-shaped trace with the shapes the analysis branches on: nested cpu_ops on two
    threads, annotations and ProfilerStep ranges, launches whose kernels overlap on several
    streams of two devices, memcpy/memset, NCCL kernels, unmatched correlations, syncs and
    allocator events. Timestamps are fractional so float sums depend on their order."""
    rng = random.Random(seed)
    ev: list[dict] = []
    pid, tids = 100, (100, 101)
    gpu_free = {0: 2000.0, 1: 2000.0}
    corr = 0
    t = 1000.0
    alloc = {0: 0, 1: 0}
    for step in range(steps):
        tid = tids[step % 2]
        span = rng.uniform(40, 400)
        if step % 25 == 0:
            ev.append(_x("user_annotation", f"ProfilerStep#{step // 25}",
                         pid, tid, t, span * 25))  # fmt: skip
        if step % 7 == 0:
            ev.append(_x("user_annotation", f"region_{step % 3}", pid, tid, t + 0.5, span - 1))
        ev.append(_x("cpu_op", rng.choice(["aten::mm", "aten::add", "aten::conv2d"]), pid, tid,
                     t + 1, span - 3, {"Input Dims": [[64, 32], [32, 16]],
                                       "Input type": ["float", "float"]}))  # fmt: skip
        inner_t = t + 2
        for _ in range(rng.randint(0, 3)):
            d = rng.uniform(1, (span - 6) / 4)
            ev.append(_x("cpu_op", rng.choice(["aten::empty", "aten::copy_"]), pid, tid,
                         inner_t, d))  # fmt: skip
            if seed == 4:
                inner_t += d + rng.uniform(0.1, 2)
                continue
            corr += 1
            dev = rng.choice((0, 1))
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", pid, tid, inner_t + d / 3, d / 3,
                         {"correlation": corr}))  # fmt: skip
            kind = rng.random()
            cat, name = "kernel", rng.choice(["gemm_a", "elementwise_b", "reduce_c"])
            if kind < 0.08:
                cat, name = "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"
            elif kind < 0.12:
                cat, name = "gpu_memset", "Memset (Device)"
            elif kind < 0.18:
                name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
            start = max(gpu_free[dev] - rng.uniform(0, 30), inner_t + d / 3 + rng.uniform(1, 9))
            kd = rng.uniform(0.5, 80)
            # A few kernels without a launch in the trace.
            k_corr = corr if rng.random() > 0.03 else corr + 10_000_000
            stream = 7 + rng.choice((0, 6, 9))
            ev.append(_x(cat, name, dev, stream, start, kd,
                         {"device": dev, "stream": stream, "correlation": k_corr,
                          "grid": [64, 1, 1], "block": [128, 1, 1]}))  # fmt: skip
            gpu_free[dev] = max(gpu_free[dev], start + kd)
            n = rng.choice((512, 4096, 1 << 20))
            alloc[dev] += n
            ev.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid,
                       "tid": tid, "ts": inner_t, "s": "t",
                       "args": {"Addr": 1000 + corr, "Bytes": n, "Total Allocated": alloc[dev],
                                "Total Reserved": 1 << 24, "Device Type": 1,
                                "Device Id": dev}})  # fmt: skip
            inner_t += d + rng.uniform(0.1, 2)
        if step % 50 == 49:
            ev.append(_x("cuda_runtime", "cudaDeviceSynchronize", pid, tid, t + span - 2, 1.5))
        t += span + rng.uniform(0, 30)
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "gen"}, {"id": 1}],
           "distributedInfo": {"rank": seed}, "traceEvents": ev}  # fmt: skip
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)


def _x(cat: str, name: str, pid: int, tid: int, ts: float, dur: float, args=None) -> dict:
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def canonical(analysis) -> dict:
    """Every figure as plain JSON data (the path reduced to its file name)."""
    d = dataclasses.asdict(analysis)
    d["path"] = Path(d["path"]).name
    return json.loads(json.dumps(d, sort_keys=True))


def _cases(tmp: Path) -> list[tuple[str, Path, int | None]]:
    cases = []
    for name in SHARED_TRACES:
        cases.append((name, SHARED / "traces" / name, None))
    tar = SHARED / "gpu" / "h100-cifar10-run.tar.gz"
    if tar.exists():
        with tarfile.open(tar) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("trace.json.gz"))
            t.extract(member, tmp / "h100", filter="data")
        h100 = next((tmp / "h100").glob("*/trace.json.gz"))
        cases.append(("h100-cifar10-trace.json.gz", h100, None))
        cases.append(("h100-cifar10-trace.json.gz@0", h100, 0))
    cases.append(("critical_path@0", SHARED / "traces" / SHARED_TRACES[2], 0))
    for seed, steps, dev in GENERATED:
        path = tmp / f"gen-{seed}-{steps}.json.gz"
        if not path.exists():
            generated_trace(path, seed, steps)
        cases.append((f"gen-{seed}-{steps}@{dev}", path, dev))
    return cases


def _fixture(label: str) -> Path:
    return FIXTURES / (label.replace(".json.gz", "").replace("@", "_dev") + ".json.gz")


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    return {c[0]: c for c in _cases(tmp_path_factory.mktemp("golden"))}


LABELS = [
    *SHARED_TRACES,
    "h100-cifar10-trace.json.gz",
    "h100-cifar10-trace.json.gz@0",
    "critical_path@0",
    *(f"gen-{s}-{n}@{d}" for s, n, d in GENERATED),
]


@pytest.mark.parametrize("label", LABELS)
def test_analysis_equals_reference(cases, label):
    if label not in cases or not cases[label][1].exists():
        from tests.conftest import shared_path

        shared_path("traces")  # skips (or fails in CI) when the shared data is absent
        pytest.skip(f"{label}: not available")
    _, path, dev = cases[label]
    got = canonical(analyze_trace(read_trace(path), top=0, device=dev))
    with gzip.open(_fixture(label), "rt") as fh:
        want = json.load(fh)
    assert got == want


def test_golden_compare_sees_one_last_digit():
    """The comparison is exact: one ulp in one figure is a difference."""
    with gzip.open(_fixture("gen-1-400@None"), "rt") as fh:
        want = json.load(fh)
    got = json.loads(json.dumps(want))
    x = got["overall"]["busy_s"]
    got["overall"]["busy_s"] = float.fromhex(float(x).hex()) + abs(x) * 2**-52
    assert got["overall"]["busy_s"] != x
    assert got != want


def _write(tmp: Path) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for label, path, dev in _cases(tmp):
        if not path.exists():
            print(f"skip {label}: {path} absent")
            continue
        out = canonical(analyze_trace(read_trace(path), top=0, device=dev))
        with gzip.GzipFile(_fixture(label), "wb", mtime=0) as fh:
            fh.write(json.dumps(out, sort_keys=True, indent=0).encode())
        print(f"wrote {_fixture(label)}")


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: PYTHONPATH=. python tests/test_timeline_golden.py --write")
    with tempfile.TemporaryDirectory() as d:
        _write(Path(d))


def _sweep_reference(data) -> tuple:
    """The host map as one sweep with a stack over ranges and runtime calls (the definition
    the vectorized build_host_map must reproduce), including fields no figure shows yet."""
    import numpy as np

    from perfsuite.analyzers.timeline.categories import is_step_annotation

    rg, rt = data.ranges, data.runtime
    n_rg, n_rt = len(rg.ts), len(rt.ts)
    r_ts, r_dur = np.array(rg.ts, float), np.array(rg.dur, float)
    step = {i for i, n in enumerate(data.names.values) if is_step_annotation(n)}
    thread = np.concatenate([np.array(rg.thread, int), np.array(rt.thread, int)])
    start = np.concatenate([r_ts, np.array(rt.ts, float)])
    is_call = np.concatenate([np.zeros(n_rg, int), np.ones(n_rt, int)])
    neg = np.concatenate([-r_dur, np.zeros(n_rt)])
    order = np.lexsort((neg, is_call, start, thread)) if len(start) else []
    call_op, call_ann = [-1] * n_rt, [-1] * n_rt
    parent, child = [-1] * n_rg, [0.0] * n_rg
    r_end = (r_ts + r_dur).tolist()
    stack: list[int] = []
    cur = None
    for idx in list(order):
        if thread[idx] != cur:
            stack, cur = [], thread[idx]
        t = float(start[idx])
        while stack and r_end[stack[-1]] <= t:
            stack.pop()
        if idx < n_rg:
            if stack:
                parent[idx] = stack[-1]
                child[stack[-1]] += float(r_dur[idx])
            stack.append(int(idx))
            continue
        c = idx - n_rg
        for r in reversed(stack):
            if rg.kind[r] == 0:
                call_op[c] = r
                break
            if call_ann[c] < 0 and rg.name[r] not in step:
                call_ann[c] = r
    self_time = [max(d - ch, 0.0) for d, ch in zip(r_dur.tolist(), child, strict=True)]
    first: dict[int, int] = {}
    for i, c in enumerate(rt.corr):
        if c >= 0:
            first.setdefault(c, i)
    return call_op, call_ann, parent, self_time, first


@pytest.mark.parametrize("label", [lb for lb in LABELS if "@" not in lb or lb.startswith("gen")])
def test_host_map_equals_sweep(cases, label):
    from perfsuite.analyzers.timeline.hostmap import build_host_map

    if label not in cases or not cases[label][1].exists():
        pytest.skip(f"{label}: not available")
    data = read_trace(cases[label][1])
    host = build_host_map(data)
    call_op, call_ann, parent, self_time, first = _sweep_reference(data)
    assert host.call_op.tolist() == call_op
    assert host.call_annotation.tolist() == call_ann
    assert host.parent.tolist() == parent
    assert host.self_time.tolist() == self_time
    assert host.corr_to_call == first


@pytest.mark.parametrize("seed", range(6))
def test_range_parents_equal_stack_sweep(seed):
    """Random ranges on a few threads, with ties, touching ends, zero lengths and partial
    overlaps (not nested): the max-tree parents equal the stack sweep's."""
    import numpy as np

    from perfsuite.analyzers.timeline.hostmap import _parents, _parents_sweep

    rng = np.random.default_rng(seed)
    n = 3000
    ts = rng.integers(0, 400, n).astype(float) / 4
    dur = rng.choice([0.0, 0.25, 1.0, 5.0, 40.0, 300.0], n)
    thread = rng.integers(0, 3 + seed, n)
    order = np.lexsort((-dur, ts, thread))
    got = _parents(order, thread, ts, ts + dur)
    assert got.tolist() == _parents_sweep(order, thread, ts, ts + dur).tolist()
    assert (got >= 0).sum() > n // 4  # nesting happened
