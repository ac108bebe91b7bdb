"""Kernel launch statistics: how long the host took to launch each device event, how long it
ran, and how long it waited on the device after the launch call returned.

Definitions follow HTA 0.5's `get_cuda_kernel_launch_stats` (`CudaKernelAnalysis.
cuda_kernel_launch_stats`), so the two tools give the same numbers on the same trace:

- a *launch* is a runtime call named in `categories.QUEUE_LAUNCH_CALLS` (cudaLaunchKernel,
  cudaLaunchKernelExC, cuLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync and their HIP
  equivalents) joined to the device event (kernel, memcpy, memset) with the same
  `args.correlation`; calls without a device event and device events without such a call are
  left out (counted in `unmatched_calls`);
- `cpu_s`: the launch call's duration; `gpu_s`: the device event's duration;
- `delay_s` (HTA's "launch delay"): device event start minus the launch call's end, clipped at
  zero (a copy that starts while its call still runs has delay 0);
- *short* (HTA's short-kernel rule): `gpu_s < cpu_s` and `cpu_s <= runtime_cutoff`: the
  device ran the work for less time than the host took to submit it, so launches, not device
  work, bound such a sequence;
- *runtime outlier*: `cpu_s > runtime_cutoff` (default 50 µs, HTA's); *delay outlier*:
  `delay_s > delay_cutoff` (default 100 µs, HTA's).

One difference: HTA's launch statistics count only cudaLaunchKernel, cudaLaunchKernelExC,
cudaMemcpyAsync and cudaMemsetAsync (and MTIA's call); here cuLaunchKernel (Triton kernels) and
the HIP calls count too, the list HTA itself uses for its queue length, so a ROCm trace has
launch statistics and the queue length and launch tables count the same launches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfsuite.analyzers.timeline.categories import CATEGORIES, QUEUE_LAUNCH_CALLS
from perfsuite.analyzers.timeline.device import US, DeviceArrays
from perfsuite.analyzers.timeline.keys import pairs_sorted, unique_ints
from perfsuite.analyzers.timeline.model import (
    Distribution,
    KernelLaunchStat,
    LaunchGroup,
    LaunchStats,
)
from perfsuite.traces.reader import TraceData

RUNTIME_CUTOFF_US = 50.0  # HTA's default runtime_cutoff
DELAY_CUTOFF_US = 100.0  # HTA's default launch_delay_cutoff
PERCENTILES = (50.0, 90.0, 99.0)


@dataclass
class LaunchPairs:
    """One row per launch (launch call joined to its device event), in device-event order.
    Times in the trace's unit (µs); `cpu_ts`/`gpu_ts` relative to `base` (the trace start)."""

    base: float
    event: np.ndarray  # index into TraceData.device
    call: np.ndarray  # index into TraceData.runtime
    correlation: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    name: np.ndarray  # device event name id (TraceData.names)
    call_name: np.ndarray  # launch call name id
    category: np.ndarray  # index into categories.CATEGORIES
    cpu_ts: np.ndarray
    cpu_dur: np.ndarray
    gpu_ts: np.ndarray
    gpu_dur: np.ndarray
    delay: np.ndarray
    unmatched_calls: int  # launch calls with no device event anywhere in the trace

    def __len__(self) -> int:
        return len(self.event)


def _launch_calls(data: TraceData) -> tuple[np.ndarray, np.ndarray]:
    """(sorted correlation ids, runtime call index) of the launch calls; the first call of a
    correlation id wins when a trace repeats one."""
    rt = data.runtime
    names = data.names.values
    launch_ids = [i for i in set(rt.name) if names[i] in QUEUE_LAUNCH_CALLS]
    if not launch_ids:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    nm = np.asarray(rt.name, dtype=np.int64)
    corr = np.asarray(rt.corr, dtype=np.int64)
    idx = np.flatnonzero(np.isin(nm, launch_ids) & (corr >= 0))
    keys, first = unique_ints(corr[idx], return_index=True)  # sorted; first occurrence
    return keys, idx[first]


def launch_pairs(
    data: TraceData, arrays: DeviceArrays, mask: np.ndarray | None = None
) -> LaunchPairs:
    """Join launch calls to device events by correlation id (`mask`: device events kept)."""
    keys, calls = _launch_calls(data)
    corr = arrays.corr
    if len(keys) and len(corr):
        pos = np.clip(np.searchsorted(keys, corr), 0, len(keys) - 1)
        hit = (keys[pos] == corr) & (corr >= 0)
    else:
        pos = np.zeros(len(corr), np.int64)
        hit = np.zeros(len(corr), bool)
    if mask is not None:
        hit &= mask
    ev = np.flatnonzero(hit)
    call = calls[pos[ev]] if len(ev) else np.zeros(0, np.int64)
    rt = data.runtime
    if len(call):
        rt_ts = np.frombuffer(rt.ts, dtype=np.float64)[call] - arrays.base
        rt_dur = np.frombuffer(rt.dur, dtype=np.float64)[call]
        call_name = np.asarray(rt.name, dtype=np.int64)[call]
    else:
        rt_ts = rt_dur = np.zeros(0)
        call_name = np.zeros(0, np.int64)
    gpu_ts = arrays.ts[ev]
    unmatched = int(len(keys) - np.isin(keys, corr).sum()) if len(keys) else 0
    return LaunchPairs(
        base=arrays.base,
        event=ev,
        call=call,
        correlation=corr[ev],
        device=arrays.device[ev],
        stream=arrays.stream[ev],
        name=arrays.name[ev],
        call_name=call_name,
        category=arrays.category[ev],
        cpu_ts=rt_ts,
        cpu_dur=rt_dur,
        gpu_ts=gpu_ts,
        gpu_dur=arrays.dur[ev],
        delay=np.maximum(gpu_ts - (rt_ts + rt_dur), 0.0),
        unmatched_calls=unmatched,
    )


def distribution(values_us: np.ndarray) -> Distribution:
    """Mean, percentiles (linear interpolation, as numpy and pandas `describe`) and max."""
    if not len(values_us):
        return Distribution()
    p50, p90, p99 = (float(v) * US for v in np.percentile(values_us, PERCENTILES))
    return Distribution(float(values_us.mean()) * US, p50, p90, p99, float(values_us.max()) * US)


@dataclass
class LaunchFlags:
    """Per launch of a LaunchPairs: short kernel, runtime outlier, delay outlier."""

    short: np.ndarray
    runtime: np.ndarray
    delay: np.ndarray


def launch_flags(
    p: LaunchPairs,
    runtime_cutoff_us: float = RUNTIME_CUTOFF_US,
    delay_cutoff_us: float = DELAY_CUTOFF_US,
) -> LaunchFlags:
    """The short-kernel and outlier rules of the module docstring, per launch."""
    return LaunchFlags(
        short=(p.gpu_dur < p.cpu_dur) & (p.cpu_dur <= runtime_cutoff_us),
        runtime=p.cpu_dur > runtime_cutoff_us,
        delay=p.delay > delay_cutoff_us,
    )


def _group(p: LaunchPairs, f: LaunchFlags, m: np.ndarray, device: int, stream: int) -> LaunchGroup:
    return LaunchGroup(
        device=device,
        stream=stream,
        launches=int(m.sum()),
        cpu=distribution(p.cpu_dur[m]),
        gpu=distribution(p.gpu_dur[m]),
        delay=distribution(p.delay[m]),
        gpu_total_s=float(p.gpu_dur[m].sum()) * US,
        short=int(f.short[m].sum()),
        runtime_outliers=int(f.runtime[m].sum()),
        delay_outliers=int(f.delay[m].sum()),
    )


def _kernels(p: LaunchPairs, f: LaunchFlags, names: list[str]) -> list[KernelLaunchStat]:
    out = []
    order = np.argsort(p.name, kind="stable")
    uniq, starts = unique_ints(p.name[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    for k, nm in enumerate(uniq.tolist()):
        rows = order[bounds[k] : bounds[k + 1]]
        cpu, delay = p.cpu_dur[rows], p.delay[rows]
        out.append(
            KernelLaunchStat(
                name=names[nm],
                category=CATEGORIES[int(p.category[rows[0]])],
                launches=len(rows),
                gpu_total_s=float(p.gpu_dur[rows].sum()) * US,
                cpu_mean_s=float(cpu.mean()) * US,
                cpu_max_s=float(cpu.max()) * US,
                delay_mean_s=float(delay.mean()) * US,
                delay_p90_s=float(np.percentile(delay, 90.0)) * US,
                delay_max_s=float(delay.max()) * US,
                short=int(f.short[rows].sum()),
                runtime_outliers=int(f.runtime[rows].sum()),
                delay_outliers=int(f.delay[rows].sum()),
            )
        )
    # the kernels with the most outliers first, then by device time
    out.sort(key=lambda k: (-(k.runtime_outliers + k.delay_outliers), -k.gpu_total_s, k.name))
    return out


def launch_stats(
    data: TraceData,
    pairs: LaunchPairs,
    runtime_cutoff_us: float = RUNTIME_CUTOFF_US,
    delay_cutoff_us: float = DELAY_CUTOFF_US,
) -> LaunchStats | None:
    """Summaries of `pairs`; None when the trace has no launch joined to a device event."""
    if not len(pairs):
        return None
    f = launch_flags(pairs, runtime_cutoff_us, delay_cutoff_us)
    every = np.ones(len(pairs), bool)
    overall = _group(pairs, f, every, -1, -1)
    streams = []
    keys = pairs_sorted(pairs.device, pairs.stream)
    for dev, s in keys:
        m = (pairs.device == dev) & (pairs.stream == s)
        streams.append(_group(pairs, f, m, dev, s))
    short_gpu = float(pairs.gpu_dur[f.short].sum()) * US
    return LaunchStats(
        runtime_cutoff_s=runtime_cutoff_us * US,
        delay_cutoff_s=delay_cutoff_us * US,
        launches=len(pairs),
        unmatched_calls=pairs.unmatched_calls,
        gpu_total_s=overall.gpu_total_s,
        short=overall.short,
        short_gpu_s=short_gpu,
        short_share=short_gpu / overall.gpu_total_s if overall.gpu_total_s > 0 else None,
        runtime_outliers=overall.runtime_outliers,
        delay_outliers=overall.delay_outliers,
        overall=overall,
        streams=streams,
        kernels=_kernels(pairs, f, data.names.values),
    )
