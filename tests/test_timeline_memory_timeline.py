"""The memory timeline (perfsuite.analyzers.timeline.memory) on real traces written by torch's CPU
profiler with profile_memory=True, checked against an independent walk of the raw events and
against torch's own accounts: the per-op memory of `key_averages()` (net bytes) and
`export_memory_timeline` (allocated bytes over time, with the tensors that existed before
profiling listed as pre-existing). HTA has no timeline of these events to compare with.
"""

from __future__ import annotations

import gzip
import json
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import perfsuite
from perfsuite.analyzers.timeline import analyze_file

FIXTURE = Path(__file__).parent / "fixtures" / "timeline" / "cpu_profile_memory.json.gz"


def _events(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def independent(path: Path) -> dict:
    """Peak, final, counts and the ops holding the peak, by brute force on json.load output:
    running sum of Bytes from the first event's Total Allocated minus its Bytes, live blocks
    by address, and for each the shortest cpu_op enclosing it on its thread."""
    events = _events(path)
    mem = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    nbytes = np.array([e["args"]["Bytes"] for e in mem])
    total = np.array([e["args"]["Total Allocated"] for e in mem])
    running = total[0] - nbytes[0] + np.cumsum(nbytes)
    assert (running == total).all()  # the allocator's totals are its own running sum
    peak = int(np.argmax(running))
    live: dict[int, dict] = {}
    for e in mem[: peak + 1]:
        if e["args"]["Bytes"] > 0:
            live[e["args"]["Addr"]] = e
        else:
            live.pop(e["args"]["Addr"], None)
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    holders: dict[str, int] = defaultdict(int)
    for e in live.values():
        around = [
            o
            for o in ops
            if (o["pid"], o["tid"]) == (e["pid"], e["tid"])
            and o["ts"] <= e["ts"] <= o["ts"] + o["dur"]
        ]
        name = min(around, key=lambda o: o["dur"])["name"] if around else "(no operator)"
        holders[name] += e["args"]["Bytes"]
    window0 = min(e["ts"] for e in events if e.get("ph") == "X")
    return {
        "peak": int(running[peak]),
        "peak_t_s": (mem[peak]["ts"] - window0) * 1e-6,
        "final": int(running[-1]),
        "start": int(total[0] - nbytes[0]),
        "allocations": int((nbytes > 0).sum()),
        "frees": int((nbytes < 0).sum()),
        "holders": dict(holders),
    }


def check_against_independent(path: Path) -> dict:
    want = independent(path)
    t = perfsuite.trace(path)
    (m,) = t.analysis.memory
    assert (m.device_type, m.device) == ("cpu", -1)
    assert m.peak_allocated_bytes == want["peak"]
    assert m.peak_t_s == pytest.approx(want["peak_t_s"], abs=1e-9)
    assert m.final_allocated_bytes == want["final"]
    assert m.allocated_at_start_bytes == want["start"]
    assert (m.allocations, m.frees) == (want["allocations"], want["frees"])
    holders = t.memory_peak_holders
    assert dict(zip(holders.op, holders.bytes.astype(int), strict=True)) == want["holders"]
    assert m.peak_unattributed_bytes == want["peak"] - sum(want["holders"].values())
    series = t.memory_timeline
    assert series.allocated_bytes.max() == want["peak"]
    assert series.allocated_bytes.iloc[-1] == want["final"]
    return want


def test_committed_cpu_fixture():
    """tests/fixtures/timeline/README.md says how this trace was made (nn.Linear(16, 8))."""
    want = check_against_independent(FIXTURE)
    assert (want["peak"], want["final"]) == (1032, 672)
    assert want["holders"] == {
        "aten::mm": 512,
        "aten::empty": 384,
        "aten::addmm": 128,
        "aten::empty_strided": 4,
        "aten::sum": 4,
    }


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """A real trace of two training steps of a tiny MLP under torch's CPU profiler, and
    torch's own memory accounts of the same profile."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    with profile(
        activities=[ProfilerActivity.CPU],
        profile_memory=True,
        record_shapes=True,
        with_stack=True,
    ) as prof:
        for _ in range(2):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
    folder = tmp_path_factory.mktemp("memprof")
    trace = folder / "trace.json"
    prof.export_chrome_trace(str(trace))
    net = sum(e.self_cpu_memory_usage for e in prof.key_averages())
    timeline = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated in torch 2.x, still there
        if hasattr(prof, "export_memory_timeline"):
            prof.export_memory_timeline(str(folder / "mt.json"), device="cpu")
            prof.export_memory_timeline(str(folder / "mt.raw.json.gz"), device="cpu")
            _times, sizes = json.loads((folder / "mt.json").read_text())
            with gzip.open(folder / "mt.raw.json.gz", "rt") as fh:
                raw = json.load(fh)
            # action 1 is PREEXISTING: tensors alive when profiling began (the parameters)
            before = sum(nb for _ts, action, nb, _cat in raw if action == 1)
            total = np.asarray(sizes).sum(axis=1)
            timeline = {"peak": int(total.max()) - before, "final": int(total[-1]) - before}
    return trace, net, timeline


def test_torch_cpu_profile_matches_independent_sum_and_torch(profiled):
    trace, net, timeline = profiled
    want = check_against_independent(trace)
    assert want["start"] == 0  # the CPU profiler counts from the start of profiling
    # torch's per-op report: the net bytes allocated inside ops over the profile
    assert want["final"] == net
    if timeline is None:
        pytest.skip("this torch has no export_memory_timeline to compare the peak with")
    assert (want["peak"], want["final"]) == (timeline["peak"], timeline["final"])
    assert want["peak"] > 10 * want["final"]  # activations and gradients, freed at the end


def _write(tmp_path: Path, events: list[dict]) -> Path:
    path = tmp_path / "t.json"
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0}
    path.write_text(json.dumps({"traceEvents": [dict(op, dur=100), *events]}))
    return path


def _mem(ts, nbytes, total=None, addr=None, dtype=0, dev=-1):
    args = {"Bytes": nbytes, "Device Type": dtype, "Device Id": dev}
    if total is not None:
        args["Total Allocated"] = total
    if addr is not None:
        args["Addr"] = addr
    return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}


def test_devices_apart_and_memory_from_before_the_trace(tmp_path):
    path = _write(
        tmp_path,
        [
            _mem(10, 100, 1100, addr=1, dtype=1, dev=0),  # 1000 B allocated before the trace
            _mem(20, -400, 700, addr=9, dtype=1, dev=0),  # a block allocated before it
            _mem(30, 300, 1000, addr=2, dtype=1, dev=0),
            _mem(40, 50, 50, addr=5),  # the CPU, apart
            _mem(150, 600, 1600, addr=3, dtype=1, dev=0),  # outside any op: the peak
            _mem(160, -600, 1000, addr=3, dtype=1, dev=0),
        ],
    )
    a = analyze_file(path)
    cpu, cuda = a.memory
    assert (cpu.device_type, cpu.device, cpu.peak_allocated_bytes) == ("cpu", -1, 50)
    assert (cuda.device_type, cuda.device) == ("cuda", 0)
    assert (cuda.events, cuda.allocations, cuda.frees) == (5, 3, 2)
    assert (cuda.bytes_allocated, cuda.bytes_freed) == (1000, 1000)
    assert cuda.allocated_at_start_bytes == 1000
    assert (cuda.peak_allocated_bytes, cuda.final_allocated_bytes) == (1600, 1000)
    assert cuda.peak_t_s == pytest.approx(150e-6)
    assert cuda.frees_of_earlier_blocks == 1
    holders = {h.op: (h.allocations, h.bytes) for h in cuda.peak_holders}
    assert holders == {"aten::empty": (2, 400), "(no operator)": (1, 600)}
    assert cuda.peak_unattributed_bytes == 600  # 1000 before the trace, less 400 freed
    assert not cuda.from_running_sum


def test_without_total_allocated_the_running_sum_stands_in(tmp_path):
    path = _write(tmp_path, [_mem(10, 64, addr=1), _mem(20, 32, addr=2), _mem(30, -64, addr=1)])
    a = analyze_file(path)
    (m,) = a.memory
    assert m.from_running_sum
    assert (m.peak_allocated_bytes, m.final_allocated_bytes) == (96, 32)
    assert any("running sum of Bytes" in n for n in a.notes)


def test_cli_text_and_json(capsys):
    from perfsuite.cli import main

    assert main(["timeline", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "memory (allocator [memory] events)" in out
    assert "peak 1.03 kB allocated" in out and "final 672 B" in out
    assert main(["timeline", str(FIXTURE), "--json"]) == 0
    (m,) = json.loads(capsys.readouterr().out)["traces"][0]["memory"]
    assert (m["peak_allocated_bytes"], m["final_allocated_bytes"]) == (1032, 672)
    assert m["peak_holders"][0] == {"op": "aten::mm", "allocations": 1, "bytes": 512}
