"""Data-parallel runs as their records say: processes, ranks, and the communication share
the capture stored (`distributed.communication`, measured by `perfsuite.runner.measure.comm`).

Pure: the record's `distributed` section in, numbers out.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def record_comm_share(record: Mapping[str, Any]) -> float | None:
    """The communication share stored in a run record's `distributed` section, if any."""
    comm = ((record.get("distributed") or {}).get("communication")) or {}
    share = comm.get("share_of_step")
    return float(share) if isinstance(share, (int, float)) else None


def world_size(record: Mapping[str, Any]) -> int:
    """Processes that trained the run (1 for records without a `distributed` section)."""
    size = (record.get("distributed") or {}).get("world_size")
    return int(size) if isinstance(size, int) and size >= 1 else 1


@dataclass(frozen=True)
class RankSummary:
    """One rank of a data-parallel run, from the record's `distributed.per_rank`."""

    rank: int
    threads: int | None
    epochs: int
    epoch_time_s: float | None  # median epoch time, the first left out when there are others
    step_time_s: float | None  # epoch_time_s / steps of those epochs
    samples: int  # over all its epochs
    stall_s: float  # input stall over all its epochs
    comm_time_per_step_s: float | None  # its collectives in flight per profiled step


def rank_summaries(record: Mapping[str, Any]) -> list[RankSummary]:
    """Every rank's timing; empty for a one-process record."""
    out = []
    for entry in (record.get("distributed") or {}).get("per_rank") or []:
        times = [float(t) for t in entry.get("epoch_times_s") or []]
        steps = [int(s) for s in entry.get("steps") or []]
        steady = times[1:] if len(times) > 1 else times
        epoch_s = statistics.median(steady) if steady else None
        steps_steady = (steps[1:] if len(steps) > 1 else steps) or [0]
        per_step = epoch_s / statistics.median(steps_steady) if epoch_s and any(steps) else None
        out.append(
            RankSummary(
                rank=int(entry.get("rank", len(out))),
                threads=entry.get("threads"),
                epochs=len(times),
                epoch_time_s=epoch_s,
                step_time_s=per_step,
                samples=sum(int(s) for s in entry.get("samples") or []),
                stall_s=sum(float(s) for s in entry.get("stall_s") or []),
                comm_time_per_step_s=entry.get("comm_time_per_step_s"),
            )
        )
    return out


def rank_imbalance(ranks: Sequence[RankSummary]) -> float | None:
    """Slowest / fastest median epoch time over ranks (1.0: balanced); None without two."""
    times = [r.epoch_time_s for r in ranks if r.epoch_time_s]
    return max(times) / min(times) if len(times) > 1 else None
