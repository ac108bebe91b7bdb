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
from perfsuite.analyzers.timeline.keys import unique_ints
from perfsuite.traces.reader import TraceData


@dataclass
class HostMap:
    """Per runtime call: innermost enclosing cpu_op and annotation (-1: none).
    Per range: parent range (-1: top level) and self time (trace units)."""

    call_op: np.ndarray
    call_annotation: np.ndarray
    parent: np.ndarray
    self_time: np.ndarray
    corr_keys: np.ndarray  # correlation ids with a runtime call, sorted
    corr_calls: np.ndarray  # the first runtime call carrying each of them

    @property
    def corr_to_call(self) -> dict[int, int]:
        return dict(zip(self.corr_keys.tolist(), self.corr_calls.tolist(), strict=True))


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
    if np.isfinite(r_dur).all():  # one key: ranges by -duration (<= 0), then calls (+inf)
        tie = np.concatenate([-r_dur, np.full(n_rt, np.inf)])
        order = np.lexsort((tie, start, thread)) if len(start) else np.zeros(0, int)
    else:
        is_call = np.concatenate([np.zeros(n_rg, np.int8), np.ones(n_rt, np.int8)])
        neg_len = np.concatenate([-r_dur, np.zeros(n_rt)])
        order = np.lexsort((neg_len, is_call, start, thread)) if len(start) else np.zeros(0, int)

    r_end = r_ts + r_dur
    r_sorted = order[order < n_rg]
    parent = _parents(r_sorted, thread, r_ts, r_end)
    # Child time summed in start order, as the sweep adds it (bincount adds in input order).
    ps = parent[r_sorted]
    child_time = np.bincount(ps[ps >= 0], weights=r_dur[r_sorted][ps >= 0], minlength=n_rg)
    call_op, call_ann = _call_owners(
        order,
        n_rg,
        thread,
        start,
        r_end,
        parent,
        np.asarray(rg.kind, dtype=np.int64),
        np.isin(np.asarray(rg.name, dtype=np.int64), list(step_names)),
    )
    self_time = np.maximum(r_dur - child_time, 0.0) if n_rg else np.zeros(0)
    corr_keys, corr_calls = _first_calls(np.asarray(rt.corr, dtype=np.int64))
    return HostMap(call_op, call_ann, parent, self_time, corr_keys, corr_calls)


def calls_for(host: HostMap, corr: np.ndarray) -> np.ndarray:
    """Runtime call index for each correlation id (-1: none), vectorized."""
    keys, vals = host.corr_keys, host.corr_calls
    if not len(keys) or len(corr) == 0:
        return np.full(len(corr), -1, dtype=np.int64)
    pos = np.clip(np.searchsorted(keys, corr), 0, len(keys) - 1)
    return np.where((keys[pos] == corr) & (corr >= 0), vals[pos], -1)


def _first_calls(corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct correlation ids (>= 0) and the first call index of each."""
    valid = np.flatnonzero(corr >= 0)
    keys, first = unique_ints(corr[valid], return_index=True)
    return keys.astype(np.int64), valid[first].astype(np.int64)


def _parents(
    r_order: np.ndarray, thread: np.ndarray, r_ts: np.ndarray, r_end: np.ndarray
) -> np.ndarray:
    """Per range, the open range on top of the stack when it starts (-1: none), for a sweep
    in start order per thread that pops ranges ended by then: the latest range before it in
    that order, on its thread, whose end is after its start (ranges popped earlier ended
    before any later start). Found for all ranges at once with a max-tree over the ends."""
    n = len(r_order)
    parent = np.full(len(r_ts), -1, dtype=np.int64)
    if n < 2:
        return parent
    end = r_end[r_order]
    t = r_ts[r_order]
    if not (np.isfinite(end).all() and np.isfinite(t).all()):
        return _parents_sweep(r_order, thread, r_ts, r_end)
    size = 1 << int(n).bit_length()  # leaves 0..n-1 used, and n itself exists
    tree = np.full(2 * size, -np.inf)
    tree[size : size + n] = end
    half = size // 2
    while half >= 1:
        tree[half : 2 * half] = np.maximum(
            tree[2 * half : 4 * half : 2], tree[2 * half + 1 : 4 * half : 2]
        )
        half //= 2
    # Most ranges are settled without the tree: the range just before encloses the start
    # (a first child), or no earlier range on the thread ends after it (top level).
    ths = thread[r_order]
    first = np.flatnonzero(np.r_[True, ths[1:] != ths[:-1]])
    reach = np.empty(n)
    for a, b in zip(first.tolist(), [*first[1:].tolist(), n], strict=True):
        reach[a:b] = np.maximum.accumulate(end[a:b])
    prev_reach = np.r_[-np.inf, reach[:-1]]
    prev_reach[first] = -np.inf
    node = np.full(n, -1, dtype=np.int64)
    enclosed = np.r_[False, end[:-1] > t[1:]]
    enclosed[first] = False
    node[enclosed] = size + np.flatnonzero(enclosed) - 1
    # The rest climb from their leaf: the first left sibling whose max end is after the start
    # holds the answer (positions before the range, nearest first).
    v = size + np.arange(n, dtype=np.int64)
    act = np.flatnonzero(~enclosed & (prev_reach > t))
    while len(act):
        va = v[act]
        hit = ((va & 1) == 1) & (tree[va - 1] > t[act])
        node[act[hit]] = va[hit] - 1
        act, va = act[~hit], va[~hit] >> 1
        v[act] = va
        act = act[va > 1]
    # Descend to the rightmost leaf under that node whose end is after the start.
    act = np.flatnonzero(node >= 0)
    while len(act):
        va = node[act]
        inner = va < size
        act, va = act[inner], va[inner]
        right = 2 * va + 1
        node[act] = np.where(tree[right] > t[act], right, 2 * va)
    found = np.flatnonzero(node >= 0)
    pos = node[found] - size
    same = ths[pos] == ths[found]  # the latest such range on an earlier thread: none here
    parent[r_order[found[same]]] = r_order[pos[same]]
    return parent


def _parents_sweep(
    r_order: np.ndarray, thread: np.ndarray, r_ts: np.ndarray, r_end: np.ndarray
) -> np.ndarray:
    """`_parents` by the sweep itself (timestamps that are not finite compare as the sweep's
    own comparisons do, not as the max-tree's)."""
    parent = np.full(len(r_ts), -1, dtype=np.int64)
    start_l, end_l, thread_l = r_ts.tolist(), r_end.tolist(), thread.tolist()
    parent_l = parent.tolist()
    stack: list[int] = []
    cur_thread = None
    for idx in r_order.tolist():
        th = thread_l[idx]
        if th != cur_thread:
            stack.clear()
            cur_thread = th
        t = start_l[idx]
        while stack and end_l[stack[-1]] <= t:
            stack.pop()
        if stack:
            parent_l[idx] = stack[-1]
        stack.append(idx)
    return np.asarray(parent_l, dtype=np.int64)


def _call_owners(
    order: np.ndarray,
    n_rg: int,
    thread: np.ndarray,
    start: np.ndarray,
    r_end: np.ndarray,
    parent: np.ndarray,
    kind: np.ndarray,
    is_step: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per runtime call: the innermost enclosing cpu_op and the innermost non-step annotation
    inside it (or anywhere, without an op), as the sweep's stack gives them. The stack at a
    call is the latest range before it (same thread) and that range's parent chain; ranges
    ended by the call's start are popped from the top first."""
    n_rt = len(order) - n_rg
    call_op = np.full(n_rt, -1, dtype=np.int64)
    call_ann = np.full(n_rt, -1, dtype=np.int64)
    if not n_rt or not n_rg:
        return call_op, call_ann
    is_range = order < n_rg
    last = np.maximum.accumulate(np.where(is_range, np.arange(len(order)), -1))
    at_call = np.flatnonzero(~is_range)
    c = order[at_call] - n_rg
    prev = last[at_call]
    top = np.where(prev >= 0, order[np.maximum(prev, 0)], -1)
    same = (top >= 0) & (thread[np.maximum(top, 0)] == thread[order[at_call]])
    top = np.where(same, top, -1)
    t = start[order[at_call]]
    act = np.flatnonzero(top >= 0)
    while len(act):  # pop ranges that ended at or before the call's start
        r = top[act]
        ended = r_end[r] <= t[act]
        act = act[ended]
        top[act] = parent[r[ended]]
        act = act[top[act] >= 0]
    act = np.flatnonzero(top >= 0)
    while len(act):  # walk down the stack to the innermost cpu_op
        r = top[act]
        is_op = kind[r] == 0
        call_op[c[act[is_op]]] = r[is_op]
        ann = ~is_op & ~is_step[r] & (call_ann[c[act]] < 0)
        call_ann[c[act[ann]]] = r[ann]
        act = act[~is_op]
        top[act] = parent[r[~is_op]]
        act = act[top[act] >= 0]
    return call_op, call_ann
