"""The report's data-parallel section: every rank's timing and the collectives' time, for runs
trained with `--nproc N` (the numbers come from perfsuite.analyzers.results.distributed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.results.distributed import rank_imbalance, rank_summaries
from perfsuite.report import html as h

HEADERS = [
    "rank",
    "threads",
    "epochs",
    "s/epoch",
    "step time",
    "samples",
    "input stall",
    "comm./step",
]


def _run_block(rec: Mapping[str, Any]) -> str:
    d = rec.get("distributed") or {}
    ranks = rank_summaries(rec)
    rows = [
        [
            r.rank,
            "n/a" if r.threads is None else r.threads,
            r.epochs,
            fmt.duration(r.epoch_time_s),
            fmt.si(r.step_time_s, "s"),
            r.samples,
            fmt.duration(r.stall_s),
            fmt.si(r.comm_time_per_step_s, "s"),
        ]
        for r in ranks
    ]
    comm = d.get("communication") or {}
    share = comm.get("share_of_step")
    imbalance = rank_imbalance(ranks)
    notes = [
        f"{d.get('world_size')} processes, backend {d.get('backend')}, global batch "
        f"{d.get('global_batch_size')} ({d.get('per_rank_batch_size')} per rank); "
        f"learning rate: {(d.get('lr') or {}).get('source')}",
        f"sharding: {d.get('sharding')}; evaluation: {d.get('evaluation')}",
        "collectives: "
        + (
            f"{fmt.si((comm.get('time_per_step') or {}).get('value'), 's')} per step in flight, "
            f"{fmt.pct(share)} of the profiled step (an upper bound on the exposed part)"
            if share is not None
            else f"not measured ({comm.get('why')})"
        ),
    ]
    if imbalance is not None:
        notes.append(f"slowest / fastest rank's median epoch: {imbalance:.3f}")
    title = f"<h3>{h.esc(rec.get('run_id'))}</h3>"
    return title + h.table(HEADERS, rows, [True] * len(HEADERS)) + h.notes(notes)


def distributed_section(records: Sequence[Mapping[str, Any]]) -> str:
    """HTML of the section ("" when no run is data-parallel)."""
    return "".join(_run_block(r) for r in records if r.get("distributed"))
