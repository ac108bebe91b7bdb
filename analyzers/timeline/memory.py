"""Memory timeline from the allocator's `[memory]` instant events (`torch.profiler.profile(
profile_memory=True)`): bytes allocated over time per device, the peak and when, allocation
and free counts, and the operators whose allocations were live at the peak.

Each event is one allocation (`Bytes` > 0) or free (`Bytes` < 0) with the allocator's own
running figures after it (`Total Allocated`, `Total Reserved`), per device (c10 device type
and index; the CPU is index -1). The allocated series is the allocator's `Total Allocated`;
where a trace lacks it, the running sum of `Bytes` from zero stands in (a note says so), which
leaves out what was allocated before profiling began.

Holders of the peak: allocations made up to the peak whose block (`Addr`) was not freed before
it, each credited to the innermost cpu_op enclosing the allocation on the same host thread
(`(no operator)` when none does). What was allocated before the trace began, or by events
without an address, is the rest: `peak_allocated_bytes - sum(holder bytes)`, reported as
`peak_unattributed_bytes`. HTA has no timeline of these events (its memory analysis reads the
separate `export_memory_timeline` file), so there is nothing of HTA's to compare with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfsuite.analyzers.timeline.device import US
from perfsuite.analyzers.timeline.hostmap import HostMap
from perfsuite.analyzers.timeline.keys import pairs_sorted
from perfsuite.analyzers.timeline.model import MemoryStat, PeakHolder
from perfsuite.traces.reader import TraceData

# c10::DeviceType codes as the profiler writes them in `Device Type`.
DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia", 20: "privateuse1"}
NO_OPERATOR = "(no operator)"


def device_type_name(code: int) -> str:
    return DEVICE_TYPES.get(code, f"type {code}")


@dataclass
class MemorySeries:
    """One device's allocated and reserved bytes after each event, in time order; `t` in the
    trace unit (µs) relative to `base` (the trace start)."""

    device_type: str
    device: int
    base: float
    t: np.ndarray
    allocated: np.ndarray
    reserved: np.ndarray  # -1 where the trace does not say


@dataclass
class _Device:
    series: MemorySeries
    order: np.ndarray  # indices into TraceData.memory, time order


def _devices(data: TraceData, base: float) -> list[_Device]:
    mem = data.memory
    n = len(mem.ts)
    if not n:
        return []
    ts = np.frombuffer(mem.ts, dtype=np.float64)
    dtype = np.asarray(mem.device_type, dtype=np.int64)
    dev = np.asarray(mem.device, dtype=np.int64)
    total = np.asarray(mem.total_allocated, dtype=np.int64)
    reserved = np.asarray(mem.total_reserved, dtype=np.int64)
    nbytes = np.asarray(mem.bytes, dtype=np.int64)
    out = []
    for dt, d in pairs_sorted(dtype, dev):
        idx = np.flatnonzero((dtype == dt) & (dev == d))
        idx = idx[np.argsort(ts[idx], kind="stable")]  # trace order breaks ties
        allocated = total[idx]
        if (allocated < 0).any():
            allocated = np.cumsum(nbytes[idx])
        series = MemorySeries(
            device_type_name(dt), d, base, ts[idx] - base, allocated, reserved[idx]
        )
        out.append(_Device(series, idx))
    return out


class _OpFinder:
    """Innermost cpu_op enclosing a time on a host thread, through HostMap's parent links:
    the last range starting at or before t is inside every range that encloses t."""

    def __init__(self, data: TraceData, host: HostMap) -> None:
        rg = data.ranges
        self.data = data
        self.host = host
        self.ts = np.frombuffer(rg.ts, dtype=np.float64) if len(rg.ts) else np.zeros(0)
        self.end = self.ts + (np.frombuffer(rg.dur, dtype=np.float64) if len(rg.ts) else 0.0)
        self.kind = rg.kind
        thread = np.asarray(rg.thread, dtype=np.int64)
        self.by_thread: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for th in np.unique(thread).tolist():
            idx = np.flatnonzero(thread == th)
            idx = idx[np.lexsort((-self.end[idx], self.ts[idx]))]  # parents before children
            self.by_thread[th] = (self.ts[idx], idx)

    def op_name(self, thread_key: object, t: float) -> str:
        th = self.data.threads.ids.get(thread_key)
        if th is None or th not in self.by_thread:
            return NO_OPERATOR
        starts, idx = self.by_thread[th]
        k = int(np.searchsorted(starts, t, side="right")) - 1
        r = int(idx[k]) if k >= 0 else -1
        while r >= 0:
            if self.kind[r] == 0 and self.end[r] >= t:
                return self.data.names.values[self.data.ranges.name[r]]
            r = int(self.host.parent[r])
        return NO_OPERATOR


def _holders(
    data: TraceData, order: np.ndarray, peak: int, finder: _OpFinder
) -> tuple[list[PeakHolder], int, int]:
    """(holders at the event `peak` of `order`, their total bytes, frees of earlier blocks)."""
    mem = data.memory
    live: dict[int, int] = {}  # addr -> memory event index of its allocation
    at_peak: list[int] = []
    earlier_frees = 0
    for pos, i in enumerate(order.tolist()):
        b, addr = mem.bytes[i], mem.addr[i]
        if b > 0 and addr >= 0:
            live[addr] = i
        elif b < 0 and live.pop(addr, None) is None:
            earlier_frees += 1
        if pos == peak:
            at_peak = list(live.values())
    groups: dict[str, list[int]] = {}
    threads = mem.threads.values
    for i in at_peak:
        op = finder.op_name(threads[mem.thread[i]], mem.ts[i])
        g = groups.setdefault(op, [0, 0])
        g[0] += 1
        g[1] += mem.bytes[i]
    holders = [PeakHolder(op, c, b) for op, (c, b) in groups.items()]
    holders.sort(key=lambda h: (-h.bytes, h.op))
    return holders, sum(h.bytes for h in holders), earlier_frees


def memory_series(data: TraceData) -> list[MemorySeries]:
    """Allocated bytes over time, one series per device, ordered by (device type, index)."""
    return [d.series for d in _devices(data, data.window[0] if data.window else 0.0)]


def memory_stats(data: TraceData, host: HostMap, top: int | None = None) -> list[MemoryStat]:
    """Per device: counts, peak and when, final, and the operators holding the peak
    (`top` of them; None/0: all)."""
    base = data.window[0] if data.window else 0.0
    finder = _OpFinder(data, host)
    mem = data.memory
    out = []
    for d in _devices(data, base):
        s = d.series
        nbytes = np.asarray(mem.bytes, dtype=np.int64)[d.order]
        peak = int(np.argmax(s.allocated))
        holders, held, earlier = _holders(data, d.order, peak, finder)
        from_sum = bool((np.asarray(mem.total_allocated, dtype=np.int64)[d.order] < 0).any())
        res = s.reserved[s.reserved >= 0]
        out.append(
            MemoryStat(
                device_type=s.device_type,
                device=s.device,
                events=len(d.order),
                allocations=int((nbytes > 0).sum()),
                frees=int((nbytes < 0).sum()),
                bytes_allocated=int(nbytes[nbytes > 0].sum()),
                bytes_freed=int(-nbytes[nbytes < 0].sum()),
                allocated_at_start_bytes=int(s.allocated[0] - nbytes[0]),
                final_allocated_bytes=int(s.allocated[-1]),
                peak_allocated_bytes=int(s.allocated[peak]),
                peak_t_s=float(s.t[peak]) * US,
                peak_reserved_bytes=int(res.max()) if len(res) else None,
                from_running_sum=from_sum,
                frees_of_earlier_blocks=earlier,
                peak_holders=holders if not top or top <= 0 else holders[:top],
                peak_unattributed_bytes=int(s.allocated[peak]) - held,
            )
        )
    return out
