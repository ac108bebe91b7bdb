"""The allocator's `[memory]` instant events (profile_memory=True) read into TraceData.memory."""

from __future__ import annotations

import json
from pathlib import Path

from perfsuite.traces.reader import read_trace

FIXTURE = Path(__file__).parent / "fixtures" / "timeline" / "cpu_profile_memory.json.gz"


def test_real_cpu_trace_memory_columns():
    mem = read_trace(FIXTURE).memory
    assert len(mem.ts) == 11
    assert list(mem.bytes) == [256, 128, 4, 4, 512, 128, -128, 32, -256, -4, -4]
    assert list(mem.total_allocated) == [256, 384, 388, 392, 904, 1032, 904, 936, 680, 676, 672]
    assert sum(mem.bytes) == mem.total_allocated[-1]  # every allocation and free recorded
    assert set(mem.total_reserved) == {0} and set(mem.device_type) == {0}
    assert set(mem.device) == {-1}
    assert mem.addr[0] == 93937585787456 and mem.addr[8] == mem.addr[0]  # freed block
    assert mem.ts[0] == 4935399873067.387 and mem.ts[-1] == 4935399874241.276
    assert mem.threads.values == [(3876, 3876)] and set(mem.thread) == {0}


def test_odd_memory_events(tmp_path):
    base = {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 5}
    events = [
        dict(base, args={"Bytes": 10, "Total Allocated": 10, "Device Id": 0, "Device Type": 1}),
        dict(base, ts=6, args={"Bytes": "-4", "Total Allocated": 6.0, "Addr": [1]}),
        dict(base, args=[1]),  # not an object: skipped
        dict(base, ts="x", args={}),  # no usable timestamp: skipped
        dict(base, ts=1e30, args={}),  # beyond any clock: skipped
        dict(base, ph="X", args={"Bytes": 1}),  # a complete event of that name: not memory
        dict(base, tid=[3], args={}),  # a list as the thread: skipped
        dict(base, ph="I", pid="w", tid=9, ts=7, args={"Bytes": -7}),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    data = read_trace(path)
    mem = data.memory
    assert list(mem.ts) == [5.0, 6.0, 7.0]
    assert list(mem.bytes) == [10, -4, -7]
    assert list(mem.total_allocated) == [10, 6, -1]
    assert list(mem.total_reserved) == [-1, -1, -1]
    assert list(mem.device) == [0, -1, -1] and list(mem.device_type) == [1, -1, -1]
    assert list(mem.addr) == [-1, -1, -1]
    assert mem.threads.values == [(1, 2), ("w", 9)] and list(mem.thread) == [0, 0, 1]
    assert data.threads.values == []  # host-range threads unaffected
    assert data.events_by_phase == {"i": 6, "X": 1, "I": 1}
