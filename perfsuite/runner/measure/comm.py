"""Communication in a data-parallel run, read from its profile window's ops.

Why a separate reading: process groups record each collective as an op named
`<backend>:<collective>` (`gloo:all_reduce`, `nccl:all_reduce`) whose inclusive time is the
time the collective was in flight, from enqueue to completion. DistributedDataParallel launches
its gradient all-reduces while backward is still computing, so in-flight time is an upper bound
on the communication the step waited for (the exposed part), not the exposed part itself.
Pure: the profile window's op table in, the record's `distributed.communication` out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Prefixes under which torch's process groups name their collectives in the profiler.
COMM_PREFIXES = ("gloo:", "nccl:", "mpi:", "ucc:")


def is_comm_op(name: str) -> bool:
    """A collective of a process group (not the c10d launch stub around it)."""
    return str(name).lower().startswith(COMM_PREFIXES)


def comm_from_ops(ops: Sequence[Mapping[str, Any]], steps: int) -> dict[str, Any] | None:
    """Per-step in-flight time of every collective in a window of `steps` steps:
    `{time_per_step_s, ops: [{op, calls_per_step, time_per_step_s}]}`; None when the window
    holds no collective (a single-process run) or no steps."""
    if steps <= 0:
        return None
    rows = [
        {
            "op": str(o.get("op")),
            "calls_per_step": float(o.get("calls") or 0) / steps,
            "time_per_step_s": float(o.get("total_time_s") or 0.0) / steps,
        }
        for o in ops
        if is_comm_op(str(o.get("op")))
    ]
    if not rows:
        return None
    rows.sort(key=lambda r: -r["time_per_step_s"])
    return {"time_per_step_s": sum(r["time_per_step_s"] for r in rows), "ops": rows}


def comm_share(time_per_step_s: float | None, step_time_s: float | None) -> float | None:
    """In-flight communication time as a fraction of the step (None when either is unknown).
    It can exceed what the step waited for, since collectives overlap backward."""
    if time_per_step_s is None or not step_time_s:
        return None
    return time_per_step_s / step_time_s
