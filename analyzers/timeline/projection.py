"""Host ranges projected onto the GPU, as Nsight Systems' `nvtx_gpu_proj_sum` report does.

A range's GPU work is every device event (kernel, copy, memset) whose launch call started
inside the range on the range's own thread, nested ranges included (a kernel launched inside
an inner range also belongs to every range around it). The projected time of one range runs
from the first of those events' start to the last one's end; ranges with no device work
project to nothing and are counted apart. Projected onto annotations (NVTX ranges, Kineto
user annotations), not onto operators, whose device time the op table already gives.
"""

from __future__ import annotations

import numpy as np

from perfsuite.analyzers.timeline.categories import is_comm_range
from perfsuite.analyzers.timeline.device import US, DeviceArrays
from perfsuite.analyzers.timeline.model import RangeProjection
from perfsuite.traces.reader import TraceData


def _per_call(arrays: DeviceArrays, mask: np.ndarray, n_calls: int) -> tuple[np.ndarray, ...]:
    """Per runtime call: first start, last end, summed duration and count of its device
    events (kept by `mask`); calls without any have count 0."""
    m = mask & (arrays.call >= 0)
    call = arrays.call[m]
    lo = np.full(n_calls, np.inf)
    hi = np.full(n_calls, -np.inf)
    np.minimum.at(lo, call, arrays.ts[m])
    np.maximum.at(hi, call, arrays.end[m])
    dur = np.bincount(call, weights=arrays.dur[m], minlength=n_calls)
    count = np.bincount(call, minlength=n_calls)
    return lo, hi, dur, count


def range_projections(
    data: TraceData, arrays: DeviceArrays, mask: np.ndarray
) -> list[RangeProjection]:
    """The projection of every annotation name, by projected time (descending)."""
    rg, rt = data.ranges, data.runtime
    kind = np.asarray(rg.kind, dtype=np.int64)
    ann = np.flatnonzero(kind == 1)
    if not len(ann) or not len(rt.ts):
        return []
    lo, hi, dur, count = _per_call(arrays, mask, len(rt.ts))
    launched = np.flatnonzero(count > 0)
    c_thread = np.asarray(rt.thread, dtype=np.int64)[launched]
    c_ts = np.frombuffer(rt.ts, dtype=np.float64)[launched] - arrays.base
    order = np.lexsort((c_ts, c_thread))
    launched, c_thread, c_ts = launched[order], c_thread[order], c_ts[order]
    dur_sum = np.concatenate([[0.0], np.cumsum(dur[launched])])
    count_sum = np.concatenate([[0], np.cumsum(count[launched])])
    r_thread = np.asarray(rg.thread, dtype=np.int64)[ann]
    r_ts = np.frombuffer(rg.ts, dtype=np.float64)[ann] - arrays.base
    r_end = r_ts + np.frombuffer(rg.dur, dtype=np.float64)[ann]
    # Calls of a thread are one sorted slice; a range's calls are a sub-slice of it.
    first = np.searchsorted(c_thread, r_thread, side="left")
    last = np.searchsorted(c_thread, r_thread, side="right")
    start = np.zeros(len(ann), np.int64)
    stop = np.zeros(len(ann), np.int64)
    for th in np.unique(r_thread).tolist():
        sel = r_thread == th
        a, b = int(first[sel][0]), int(last[sel][0])
        start[sel] = a + np.searchsorted(c_ts[a:b], r_ts[sel], side="left")
        stop[sel] = a + np.searchsorted(c_ts[a:b], r_end[sel], side="right")
    proj = np.zeros(len(ann))
    for i in np.flatnonzero(stop > start).tolist():
        calls = launched[start[i] : stop[i]]
        proj[i] = hi[calls].max() - lo[calls].min()
    return _by_name(
        data,
        ann,
        r_end - r_ts,
        proj,
        dur_sum[stop] - dur_sum[start],
        count_sum[stop] - count_sum[start],
    )


def _by_name(
    data: TraceData,
    ann: np.ndarray,
    host: np.ndarray,
    proj: np.ndarray,
    gpu: np.ndarray,
    ops: np.ndarray,
) -> list[RangeProjection]:
    names = data.names.values
    name = np.asarray(data.ranges.name, dtype=np.int64)[ann]
    out = []
    for n in np.unique(name).tolist():
        m = name == n
        out.append(
            RangeProjection(
                name=names[n],
                ranges=int(m.sum()),
                host_total_s=float(host[m].sum()) * US,
                projected_s=float(proj[m].sum()) * US,
                gpu_ops=int(ops[m].sum()),
                gpu_time_s=float(gpu[m].sum()) * US,
                without_gpu_work=int((ops[m] == 0).sum()),
                communication=is_comm_range(names[n]),
            )
        )
    out.sort(key=lambda r: (-r.projected_s, -r.host_total_s, r.name))
    return out
