"""Host side: which operator launched which kernel, and operator self time.

Kineto links a device event to the host runtime call that submitted it by a shared
`args.correlation` id; the operator responsible is the innermost cpu_op whose time range
encloses that runtime call on the same thread. One sweep per thread over ranges and runtime
calls, sorted by start, with a stack of open ranges, gives both the enclosing operator and
the nesting needed for self time (duration minus direct children).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfsuite.analyzers.timeline.categories import is_step_annotation
from perfsuite.traces.reader import TraceData


@dataclass
class HostMap:
    """Per runtime call: innermost enclosing cpu_op and annotation (-1: none).
    Per range: parent range (-1: top level) and self time (trace units)."""

    call_op: np.ndarray
    call_annotation: np.ndarray
    parent: np.ndarray
    self_time: np.ndarray
    corr_to_call: dict[int, int]


def build_host_map(data: TraceData) -> HostMap:
    rg, rt = data.ranges, data.runtime
    n_rg, n_rt = len(rg.ts), len(rt.ts)
    r_ts = np.frombuffer(rg.ts, dtype=np.float64) if n_rg else np.zeros(0)
    r_dur = np.frombuffer(rg.dur, dtype=np.float64) if n_rg else np.zeros(0)
    c_ts = np.frombuffer(rt.ts, dtype=np.float64) if n_rt else np.zeros(0)
    step_names = {i for i, name in enumerate(data.names.values) if is_step_annotation(name)}

    # One timeline of items: ranges (0..n_rg-1) then runtime calls (n_rg..). Sort by thread,
    # start, then ranges before calls and longer ranges first, so parents precede children.
    thread = np.concatenate(
        [np.asarray(rg.thread, dtype=np.int64), np.asarray(rt.thread, dtype=np.int64)]
    )
    start = np.concatenate([r_ts, c_ts])
    is_call = np.concatenate([np.zeros(n_rg, dtype=np.int8), np.ones(n_rt, dtype=np.int8)])
    neg_len = np.concatenate([-r_dur, np.zeros(n_rt)])
    order = np.lexsort((neg_len, is_call, start, thread)) if len(start) else np.zeros(0, int)

    call_op = np.full(n_rt, -1, dtype=np.int64)
    call_ann = np.full(n_rt, -1, dtype=np.int64)
    parent = np.full(n_rg, -1, dtype=np.int64)
    child_time = np.zeros(n_rg)
    kind = rg.kind
    names = rg.name
    r_end = (r_ts + r_dur).tolist()
    r_dur_l = r_dur.tolist()
    start_l = start.tolist()
    thread_l = thread.tolist()

    stack: list[int] = []
    cur_thread = None
    for idx in order.tolist():
        th = thread_l[idx]
        if th != cur_thread:
            stack.clear()
            cur_thread = th
        t = start_l[idx]
        while stack and r_end[stack[-1]] <= t:
            stack.pop()
        if idx < n_rg:
            if stack:
                parent[idx] = stack[-1]
                child_time[stack[-1]] += r_dur_l[idx]
            stack.append(idx)
            continue
        c = idx - n_rg
        for r in reversed(stack):
            if kind[r] == 0:
                if call_op[c] < 0:
                    call_op[c] = r
                break
            if call_ann[c] < 0 and names[r] not in step_names:
                call_ann[c] = r
    self_time = np.maximum(r_dur - child_time, 0.0) if n_rg else np.zeros(0)

    corr_to_call: dict[int, int] = {}
    for i, c in enumerate(rt.corr):
        if c >= 0:
            corr_to_call.setdefault(c, i)
    return HostMap(call_op, call_ann, parent, self_time, corr_to_call)


def calls_for(host: HostMap, corr: np.ndarray) -> np.ndarray:
    """Runtime call index for each correlation id (-1: none), vectorized."""
    if not host.corr_to_call or len(corr) == 0:
        return np.full(len(corr), -1, dtype=np.int64)
    keys = np.fromiter(host.corr_to_call.keys(), dtype=np.int64, count=len(host.corr_to_call))
    vals = np.fromiter(host.corr_to_call.values(), dtype=np.int64, count=len(keys))
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    pos = np.clip(np.searchsorted(keys, corr), 0, len(keys) - 1)
    return np.where((keys[pos] == corr) & (corr >= 0), vals[pos], -1)
