"""One-off measurements around the training loop: warm-up, FLOP count, profile window,
ceilings (inference latency: runner/measure/inference.py).

Each runs `Workload.train_step` (the step the clock times) inside a `detour`: the run's own
model takes the extra steps off the clock and is then restored exactly, so capture changes
neither the trained model nor the time to accuracy. The seconds these take are recorded under
`extra.setup_s` so nothing is hidden.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import Any

from perfsuite.ceilings import ceilings_for, probe
from perfsuite.workloads.data import Batch, DataSource
from perfsuite.workloads.state import TrainState, detour

WARMUP_STEPS = 2

# What a run loses when a collector fails (runner/engine/contain.py says it in the record).
LOST_WORK = "FLOPs and bytes per step (work), so the roofline and FLOP/s"
LOST_WINDOW = "the profile window (per-op times, trace), so the per-op roofline"
LOST_CHECKPOINT = "the threshold model's checkpoint, so the inference latency on it"


def warm_up(
    workload: Any, state: TrainState, batches: Iterator[Batch], steps: int, tail: int = 0
) -> None:
    """The documented untimed warm-up (MLPerf's init phase allows it), done the same way with
    capture on and off: lazy initialisation, cuDNN autotuning, compilation and the allocator's
    first allocations happen here, not in epoch 1's clock. `tail` (the size of an epoch's last,
    partial batch; 0 if none) adds one step at that size: a new shape is a first use too (new
    cuDNN plans and kernels; on an H200 the GPU cifar10 recipe's first 848-image step took
    32-42 ms against 8 ms). The state is restored afterwards."""
    with detour(state):
        for _ in range(steps):
            workload.train_step(state, next(batches))
        short = head(next(batches), tail) if tail else None
        if short is not None:
            workload.train_step(state, short)


def head(batch: Batch, n: int) -> Batch | None:
    """The batch's first `n` examples; None when it has no more than `n`, or holds anything but
    batch-major tensors (or tuples and lists of them), which cannot be cut the same way."""

    def cut(x: Any) -> Any:
        if isinstance(x, tuple | list):
            return type(x)(cut(v) for v in x)
        if not hasattr(x, "shape") or len(x.shape) == 0 or x.shape[0] != batch.size:
            raise ValueError("not a batch-major tensor")
        return x[:n]

    if not 0 < n < batch.size:
        return None
    try:
        return Batch(cut(tuple(batch.inputs)), cut(batch.target), n)
    except ValueError:
        return None


def count_step_work(workload: Any, state: TrainState, batch: Batch) -> dict[str, Any]:
    """FLOPs (and bytes moved) of one full training step: the workload's own step, on the eager
    module, after one uncounted step so momentum/Adam state exists as in every later step."""
    import dataclasses

    from perfsuite.flops.torch_counter import OpCounter  # imports torch

    eager = dataclasses.replace(state, model=state.module)
    counter = OpCounter()
    with detour(eager):
        workload.train_step(eager, batch)
        with counter:
            workload.train_step(eager, batch, phase=counter.phase)
    work = counter.result().to_work_section()
    work["batch_size"] = batch.size
    work["dtype"] = compute_dtype(batch.inputs, state.module.parameters())
    if state.precision:
        work["autocast"] = {"bf16": "bfloat16", "fp16": "float16"}[state.precision]
    return work


def compute_dtype(inputs: Iterable[Any], params: Iterable[Any]) -> str:
    """The float dtype the step computes in: the first floating-point input's, else (token
    ids, as in question answering) the first floating-point trained tensor's, else float32.
    Token ids, masks and labels are integers; the roofline judges the math by this dtype."""
    floating = (x for x in (*inputs, *params) if getattr(x, "is_floating_point", lambda: 0)())
    first = next(floating, None)
    return str(first.dtype).replace("torch.", "") if first is not None else "float32"


def profile_window(
    workload: Any, state: TrainState, batches: Iterator[Batch], window: Any
) -> dict[str, Any] | None:
    """`window.total_steps` real steps under the profiler, on the warm model after the last
    timed epoch, off the clock, then the state is restored (the model stays the trained one)."""
    with detour(state):
        try:
            for _ in range(window.total_steps):
                workload.train_step(state, next(batches))
                window.step()
                if window.done:  # closed by its schedule or by a bound (time, memory)
                    break
        finally:  # a step that raises must not leave the process-wide profiler running
            window.close()
    return window.result()


def window_steps(min_steps: int, min_seconds: float, step_s: float, cap: int = 1000) -> int:
    """Steps in the profile window: `min_steps`, raised until they cover `min_seconds` of the
    measured step time `step_s` (at most `cap` steps).

    Why: three steps of a millisecond step profile a few microseconds per op, where one
    preemption or the profiler's own per-call cost moves an op's time by tens of percent, and
    repeated runs disagree on its roof fraction. About a second of steps averages that out;
    long steps keep the step count.
    """
    if min_seconds > 0 and step_s > 0:
        return max(min_steps, min(cap, math.ceil(min_seconds / step_s)))
    return min_steps


def endless(data: DataSource, batch_size: int, generator: Any) -> Iterator[Batch]:
    """Training batches across epoch boundaries (for detours that need more than one epoch)."""
    while True:
        empty = True
        for batch in data.train_batches(batch_size, generator):
            empty = False
            yield batch
        if empty:
            raise ValueError(f"data source {data.description!r} yields no training batches")


def resolve_ceilings(
    device: str, dtype: str, measure: bool, policy: dict[str, Any] | None = None
) -> tuple[dict | None, str]:
    """The record's `ceilings` section from perfsuite.ceilings, or None with the reason.

    `policy` (the record's `math`): its autocast dtype's roof is measured too, unless the CPU lacks
    instructions for it (its ops are then judged against float32's,
    perfsuite.analyzers.roofline.mathmode)."""
    try:
        auto = (policy or {}).get("autocast_dtype")
        also = (auto,) if auto and (policy or {}).get("autocast_native") is not False else ()
        ceil = ceilings_for(device, dtype, measure=measure, quick=True, also=also)
    except Exception as exc:  # a failed micro-benchmark must not lose the run
        return None, f"device ceilings could not be determined: {exc}"
    busy = sorted(
        name
        for name, roof in (ceil.get("roofs") or {}).items()
        for q in roof.values()
        if (q.get("measured_under") or {}).get("busy") is True
    )
    if busy:
        return ceil, (
            f"device ceilings {', '.join(busy)}: the best measured so far was taken on a busy "
            "machine (see their source), so it may be too low; each later run measures again "
            "and keeps the best"
        )
    return ceil, absent_roofs_flag(ceil, measure)


def absent_roofs_flag(ceil: dict[str, Any], measure: bool) -> str:
    """Why the record has no roof (a fresh machine's empty cache, --no-peaks), or "": the
    roofline would otherwise show n/a with nothing in the run saying how to get one."""
    absent = [
        k for k in ("peak_flops", "memory_bandwidth") if (ceil.get(k) or {}).get("value") is None
    ]
    if not absent:
        return ""
    if not measure:
        return (
            "no cached peaks for this device: pass measure_peaks=True / drop --no-peaks, "
            "or run `perfsuite peaks`"
        )
    return (
        f"no measured or spec {' or '.join(absent)} for {ceil.get('dtype')} on this device: "
        "set one with `perfsuite peaks --set`"
    )


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


class MachineCheck:
    """The machine's speed just before and just after the profile window (perfsuite.ceilings.
    probe), off the clock. Optional: any failure is kept as the section's `note`, never
    raised, so a probe that cannot run (no measured roof, out of memory) never loses the run."""

    def __init__(self, device: str, ceilings: dict[str, Any] | None) -> None:
        self.device = device
        self.plan, self.why = probe.probe_plan(ceilings)
        self.sides: dict[str, dict[str, float]] = {}
        self.seconds = 0.0

    def _side(self, name: str) -> None:
        if self.plan is None:
            return
        t0 = time.perf_counter()
        try:
            self.sides[name] = probe.run_probe(self.device, self.plan)
        except Exception as exc:  # optional collector: the run goes on without it
            self.plan, self.why = None, f"machine check failed: {type(exc).__name__}: {exc}"
        self.seconds += time.perf_counter() - t0

    def before(self) -> None:
        self._side("before")

    def after(self) -> None:
        self._side("after")

    def section(self) -> dict[str, Any]:
        if self.plan is None or len(self.sides) < 2:
            return {"note": self.why or "machine check not taken"}
        return probe.check_section(self.plan, self.sides["before"], self.sides["after"])
