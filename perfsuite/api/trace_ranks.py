"""A folder of per-rank traces and the diff of two traces as DataFrames: what
`perfsuite timeline DIR --json` and `perfsuite timeline --diff A B --json` print.

Times are seconds (`*_s`), as in that JSON, so a column equals its JSON field exactly.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

import pandas as pd

from perfsuite.analyzers.timeline.diff import TraceDiff, diff_paths
from perfsuite.analyzers.timeline.ranks import (
    STRAGGLER_MARGIN,
    FolderScan,
    is_rank_folder,
    scan_folder,
)
from perfsuite.api.frames import Spec, frame
from perfsuite.record import load_record
from perfsuite.record.sidecars import trace_path

RANKS: Spec = [
    ("rank", "rank"),
    ("rank_source", "rank_source"),
    ("trace", "trace"),
    ("path", "path"),
    ("events", "events"),
    ("window_s", "window_s"),
    ("devices", "devices"),
    ("steps", "steps"),
    ("step_mean_s", "step_mean_s"),
    ("span_s", "span_s"),
    ("busy_s", "busy_s"),
    ("busy_compute_s", "busy_compute_s"),
    ("compute_share", "compute_share"),
    ("busy_non_compute_s", "busy_non_compute_s"),
    ("communication_busy_s", "communication_busy_s"),
    ("compute_comm_overlap_s", "compute_comm_overlap_s"),
    ("idle_s", "idle_s"),
    ("idle_share", "idle_share"),
    ("host_wait_s", "host_wait_s"),
    ("launches", "launches"),
    ("launch_delay_mean_s", "launch_delay_mean_s"),
    ("launch_delay_p50_s", "launch_delay_p50_s"),
    ("launch_delay_p90_s", "launch_delay_p90_s"),
    ("launch_delay_p99_s", "launch_delay_p99_s"),
    ("launch_delay_max_s", "launch_delay_max_s"),
    ("short_kernels", "short_kernels"),
    ("short_share", "short_share"),
    ("runtime_outliers", "runtime_outliers"),
    ("delay_outliers", "delay_outliers"),
    ("queue_max_length", "queue_max_length"),
    ("queue_max_device", "queue_max_device"),
    ("queue_max_stream", "queue_max_stream"),
    ("memory_peak_bytes", "memory_peak_bytes"),
    ("memory_peak_t_s", "memory_peak_t_s"),
    ("memory_peak_device", "memory_peak_device"),
]
EXTREMES: Spec = [(f, f) for f in ("metric", "label", "unit", "rank", "value", "median", "ranks")]
STRAGGLERS: Spec = [
    ("rank", "rank"),
    ("metric", "metric"),
    ("value_s", "value_s"),
    ("median_s", "median_s"),
    ("excess_s", "excess_s"),
    ("excess_share", "excess_share"),
    ("comm_wait_caused_s", "comm_wait_caused_s"),
]
DIFF: Spec = [
    ("kind", "kind"),
    ("name", "name"),
    ("status", "status"),
    ("count_a", "count_a"),
    ("count_b", "count_b"),
    ("count_delta", "count_delta"),
    ("total_a_s", "total_a_s"),
    ("total_b_s", "total_b_s"),
    ("total_delta_s", "total_delta_s"),
    ("mean_a_s", "mean_a_s"),
    ("mean_b_s", "mean_b_s"),
    ("mean_delta_s", "mean_delta_s"),
]


class Ranks:
    """A folder of per-rank traces, read once (each rank dropped before the next is read).
    `margin`: the straggler rule's fraction above the median; `keep_going`: skip unreadable
    files (listed in `skipped`) instead of raising TraceError."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        margin: float = STRAGGLER_MARGIN,
        keep_going: bool = False,
    ):
        self.folder = Path(folder)
        self.analysis: FolderScan = scan_folder(self.folder, keep_going, margin)

    def __repr__(self) -> str:
        return f"<perfsuite.Ranks {self.folder}: {len(self.analysis.ranks)} ranks>"

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per rank, by rank: steps, span, busy, compute, communication, idle; launch
        statistics, the deepest stream queue and the memory peak."""
        return frame(self.analysis.ranks, RANKS)

    @cached_property
    def extremes(self) -> pd.DataFrame:
        """Per launch delay (p50, p99), queue length and memory peak: the rank with the
        highest `value`, the `median` over the `ranks` that have it."""
        return frame(self.analysis.extremes, EXTREMES)

    @cached_property
    def stragglers(self) -> pd.DataFrame:
        """Ranks above the median by more than the margin (`rule`), with the estimated
        communication wait they cause on the others."""
        return frame(self.analysis.stragglers.ranks, STRAGGLERS)

    @property
    def rule(self) -> str:
        return self.analysis.stragglers.rule

    @property
    def skipped(self) -> list[dict[str, str]]:
        return list(self.analysis.skipped)

    @property
    def notes(self) -> list[str]:
        return list(self.analysis.stragglers.notes)


class Diff:
    """The trace diff of A (control) and B (test): every cpu_op and kernel name of either."""

    def __init__(self, a: str | os.PathLike[str], b: str | os.PathLike[str]):
        self.analysis: TraceDiff = diff_paths(_side(a), _side(b))

    def __repr__(self) -> str:
        return f"<perfsuite.Diff {self.analysis.a} -> {self.analysis.b}>"

    @cached_property
    def table(self) -> pd.DataFrame:
        """kind, name, status (added/removed/changed/same), counts, totals, means and their
        deltas (B - A), largest absolute total change first."""
        return frame(self.analysis.rows, DIFF)

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.analysis.counts)

    @property
    def notes(self) -> list[str]:
        return list(self.analysis.notes)


def _side(path: str | os.PathLike[str]) -> Path:
    """A trace file or rank folder as itself; a run folder or run.json as its trace sidecar."""
    p = Path(path)
    if is_rank_folder(p):
        return p
    if p.is_dir() or p.name == "run.json":
        return trace_path(load_record(p))
    return p


def ranks(
    folder: str | os.PathLike[str], margin: float = STRAGGLER_MARGIN, keep_going: bool = False
) -> Ranks:
    """The rank table and stragglers of a folder of per-rank traces."""
    return Ranks(folder, margin, keep_going)


def trace_diff(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> Diff:
    """Ops and kernels added, removed, and their deltas from A to B (trace files, rank
    folders, run folders)."""
    return Diff(a, b)
