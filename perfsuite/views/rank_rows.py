"""Rows and lines of a folder of rank traces and of a trace diff
(`perfsuite.analyzers.timeline.ranks` / `.diff`), shared by `perfsuite timeline DIR` and
`--diff A B` and by the report's rank and diff sections: the terminal and the page name the
same columns and say the same about stragglers and the ranks with the highest figures.

`missing` is what a cell shows where a trace has no such figure (`-` in a terminal table,
`n/a` on a page).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perfsuite.fmt import pct, si

if TYPE_CHECKING:
    from perfsuite.analyzers.timeline.diff import DiffRow
    from perfsuite.analyzers.timeline.ranks import FolderScan

RANK_HEADERS = ["rank", "trace", "rank from", "steps", "step mean", "span", "compute",
                "of span", "communication", "idle", "host wait"]  # fmt: skip
ANALYSES_HEADERS = ["rank", "launches", "delay p50", "delay p99", "short", "short share",
                    "call outliers", "delay outliers", "queue max", "device:stream", "memory peak",
                    "peak at", "on"]  # fmt: skip
DIFF_HEADERS = ["kind", "name", "status", "count A", "count B", "delta", "total A", "total B",
                "delta", "mean delta"]  # fmt: skip
TRACE_WIDTH = 40  # a terminal shows a rank's trace by the end of its path


def rank_rows(scan: FolderScan, missing: str, brief: bool = False) -> list[list[Any]]:
    """One row per rank (`RANK_HEADERS`): its trace, where its rank number came from, steps,
    mean step time, device span, compute, communication, idle and host wait. `brief` (a
    terminal): the trace's last characters, and the rank's source as `name` or `meta`."""

    def s(x: float | None) -> str:
        return missing if x is None else si(x, "s")

    def p(x: float | None) -> str:
        return missing if x is None else pct(x)

    rows = []
    for r in scan.ranks:
        trace, source = r.trace, r.rank_source
        if brief:
            trace = trace[-TRACE_WIDTH:]
            source = "name" if source == "file name" else "meta"
        rows.append(
            [r.rank, trace, source, r.steps, s(r.step_mean_s), s(r.span_s), s(r.busy_compute_s),
             p(r.compute_share), s(r.communication_busy_s), p(r.idle_share), s(r.host_wait_s)]
        )  # fmt: skip
    return rows


def analyses_rows(scan: FolderScan, missing: str) -> list[list[Any]]:
    """Per rank (`ANALYSES_HEADERS`): launch statistics, the deepest stream queue and the
    memory peak; no rows when no rank has launches or memory events."""

    def opt(x: Any, text: Any) -> Any:
        return missing if x is None else text

    if not any(r.launches or r.memory_peak_bytes is not None for r in scan.ranks):
        return []
    rows = []
    for r in scan.ranks:
        queue = f"{r.queue_max_device}:{r.queue_max_stream}"
        rows.append(
            [r.rank, r.launches, opt(r.launch_delay_p50_s, si(r.launch_delay_p50_s, "s")),
             opt(r.launch_delay_p99_s, si(r.launch_delay_p99_s, "s")),
             opt(r.short_kernels, r.short_kernels), opt(r.short_share, pct(r.short_share)),
             opt(r.runtime_outliers, r.runtime_outliers), opt(r.delay_outliers, r.delay_outliers),
             opt(r.queue_max_length, r.queue_max_length), opt(r.queue_max_stream, queue),
             opt(r.memory_peak_bytes, si(r.memory_peak_bytes, "B")),
             opt(r.memory_peak_t_s, si(r.memory_peak_t_s, "s")),
             opt(r.memory_peak_device, r.memory_peak_device)]
        )  # fmt: skip
    return rows


def extreme_lines(scan: FolderScan) -> list[str]:
    """One line per rank extreme: which rank, its value and where, and the median over ranks."""
    by_rank = {r.rank: r for r in scan.ranks}
    out = []
    for x in scan.extremes:
        r = by_rank[x.rank]
        value, median = si(x.value, x.unit), si(x.median, x.unit)
        if x.metric == "queue_max_length":
            value += f" on device {r.queue_max_device} stream {r.queue_max_stream}"
        elif x.metric == "memory_peak_bytes":
            value += f" on {r.memory_peak_device} at {si(r.memory_peak_t_s, 's')}"
        out.append(f"{x.label}: rank {x.rank}, {value} (median over {x.ranks} ranks {median})")
    return out


def straggler_lines(scan: FolderScan) -> list[str]:
    """One line per straggler: the metric it lags in, its value against the median, and the
    communication wait it causes on the other ranks where that is estimated."""
    out = []
    for s in scan.stragglers.ranks:
        caused = (
            f"; communication wait on the other ranks (estimate) {si(s.comm_wait_caused_s, 's')}"
            if s.comm_wait_caused_s is not None
            else ""
        )
        out.append(
            f"rank {s.rank}: {s.metric} {si(s.value_s, 's')}, median {si(s.median_s, 's')} "
            f"(+{pct(s.excess_share)}){caused}"
        )
    return out


def diff_rows(rows: list[DiffRow], name: Callable[[str], Any], missing: str) -> list[list[Any]]:
    """One row per changed op or kernel (`DIFF_HEADERS`), its name as `name` shows it."""

    def signed(x: float | None) -> str:
        return missing if x is None else ("+" if x > 0 else "") + si(x, "s")

    return [
        [r.kind, name(r.name), r.status, r.count_a, r.count_b, f"{r.count_delta:+d}",
         si(r.total_a_s, "s"), si(r.total_b_s, "s"), signed(r.total_delta_s),
         signed(r.mean_delta_s)]
        for r in rows
    ]  # fmt: skip
