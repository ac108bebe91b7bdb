"""A folder of per-rank traces in one pass: each rank is read, reduced to a RankSummary and
whatever its visitors take (the diff's op and kernel totals), and dropped before the next is
read, so peak memory is that of one trace (HTA holds every rank's DataFrame at once). A row
carries the rank's launch statistics, deepest stream queue and memory peak, taken from the
same analysis that gives its busy and idle times (no second read).

Ranks come from the trace's `distributedInfo.rank` (Kineto writes it before `traceEvents`),
else from a `rank-N` / `rank_N` / `rank.N` / `rankN` in the file name; the summary says which.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.analyzers.timeline.analysis import analyze_trace, rank_table
from perfsuite.analyzers.timeline.categories import COMMUNICATION
from perfsuite.analyzers.timeline.model import MemoryStat, RankRow, TimelineAnalysis
from perfsuite.traces.profile import read_profile
from perfsuite.traces.reader import TraceData, TraceError

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite")
_RANK_IN_NAME = re.compile(r"rank[-_.]?(\d+)", re.IGNORECASE)
FROM_METADATA = "distributedInfo.rank"
FROM_NAME = "file name"
STRAGGLER_MARGIN = 0.10  # a rank 10% above the median is a straggler
# Called once per rank while its columns are still held: (rank, trace columns, analysis). The
# way any per-rank analysis joins the single pass (the trace diff's op totals are one).
RankVisitor = Callable[[int, TraceData, TimelineAnalysis], None]


@dataclass
class RankSummary(RankRow):
    """A rank-table row (RankRow's fields) plus what a straggler hunt needs. `rank_source`:
    `distributedInfo.rank` or `file name`. Steps are the trace's `ProfilerStep#N` ranges."""

    rank_source: str = FROM_METADATA
    events: int = 0
    window_s: float = 0.0
    devices: int = 0
    busy_s: float | None = None
    busy_non_compute_s: float | None = None
    compute_comm_overlap_s: float | None = None
    steps: int = 0
    step_mean_s: float | None = None
    # Launch statistics (perfsuite.analyzers.timeline.launch; None without a launch joined to a
    # device event): launches, launch delay distribution, short kernels and their share of the
    # launched device time, runtime (launch call) and delay outliers.
    launches: int = 0
    launch_delay_mean_s: float | None = None
    launch_delay_p50_s: float | None = None
    launch_delay_p90_s: float | None = None
    launch_delay_p99_s: float | None = None
    launch_delay_max_s: float | None = None
    short_kernels: int | None = None
    short_share: float | None = None
    runtime_outliers: int | None = None
    delay_outliers: int | None = None
    # The deepest stream queue (perfsuite.analyzers.timeline.queues): its maximum length and stream;
    # the first by (device, stream) on a tie.
    queue_max_length: int | None = None
    queue_max_device: int | None = None
    queue_max_stream: int | None = None
    # Memory peak (perfsuite.analyzers.timeline.memory; None without [memory] events): allocated
    # bytes at the peak of the accelerator with the highest one, the CPU only when no other device
    # has memory events; when (seconds from the trace start) and which (`cuda:0`, `cpu`).
    memory_peak_bytes: int | None = None
    memory_peak_t_s: float | None = None
    memory_peak_device: str | None = None


@dataclass
class OpTotals:
    """Per (kind, name): [count, total seconds]; kind is `cpu_op` or `kernel` (every device
    event: kernels, memcpy, memset). Summed over the ranks that were added."""

    ranks: int = 0
    totals: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def __call__(self, _rank: int, _data: TraceData, a: TimelineAnalysis) -> None:
        self.add(a)

    def add(self, a: TimelineAnalysis) -> None:
        """Add one analysis made with top=None (every op and kernel)."""
        self.ranks += 1
        for kind, items in (
            ("cpu_op", [(o.name, o.calls, o.total_s) for o in a.ops]),
            ("kernel", [(k.name, k.count, k.total_s) for k in a.top_kernels]),
        ):
            for name, count, total in items:
                acc = self.totals.setdefault((kind, name), [0, 0.0])
                acc[0] += count
                acc[1] += total


@dataclass
class StragglerRank:
    rank: int
    metric: str  # "busy_compute_s" or "step_mean_s"
    value_s: float
    median_s: float
    excess_s: float  # value - median
    excess_share: float  # (value - median) / median
    comm_wait_caused_s: float | None  # estimate; see Stragglers


@dataclass
class Stragglers:
    """Ranks whose device compute time (union of compute kernels) or mean ProfilerStep time
    exceeds the median over ranks by more than `margin` (a fraction). Compute time finds the
    rank that has more work or runs slower; step time, on jobs whose steps do not synchronize.

    `comm_wait_caused_s` of a straggler is an estimate: collective kernels (NCCL) run from the
    moment a rank enters the collective until every peer has, so the others' waiting shows as
    extra communication kernel time. It is the sum over the other ranks of their communication
    busy time in excess of the straggler's own (0 when it is not smaller). Ranks are not aligned
    in time across files, so no finer attribution is possible from the traces alone."""

    rule: str
    margin: float
    ranks: list[StragglerRank]
    medians: dict[str, float]
    notes: list[str] = field(default_factory=list)


@dataclass
class RankExtreme:
    """The rank with the highest value of one per-rank figure (the lowest rank on a tie),
    beside the median over the `ranks` that have the figure. `unit`: "s", "B" or "" (a
    count)."""

    metric: str  # a RankSummary field, e.g. "launch_delay_p50_s"
    label: str
    unit: str
    rank: int
    value: float
    median: float
    ranks: int


# Per-rank figures whose highest rank the folder names (field, label, unit): the launch delay
# most launches see and its tail, the deepest queue, the memory peak.
EXTREME_METRICS = (
    ("launch_delay_p50_s", "highest median launch delay", "s"),
    ("launch_delay_p99_s", "highest p99 launch delay", "s"),
    ("queue_max_length", "deepest stream queue", ""),
    ("memory_peak_bytes", "highest memory peak", "B"),
)


@dataclass
class FolderScan:
    folder: str
    ranks: list[RankSummary]
    stragglers: Stragglers
    skipped: list[dict[str, str]]  # {"file", "error"} with keep_going
    extremes: list[RankExtreme] = field(default_factory=list)


def trace_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The trace files of a rank folder (`*.json`, `*.json.gz`, nsys exports `*.sqlite`;
    hidden files left out), sorted by name. A folder with none is a TraceError."""
    p = Path(folder)
    try:
        found = sorted(
            f
            for f in p.iterdir()
            if f.is_file() and not f.name.startswith(".") and f.name.endswith(TRACE_SUFFIXES)
        )
    except OSError as exc:
        raise TraceError(f"{p}: cannot list the folder: {exc.strerror or exc}") from None
    if not found:
        raise TraceError(f"{p}: no trace files (*.json, *.json.gz, *.sqlite) in this folder")
    return found


def is_rank_folder(path: str | os.PathLike[str]) -> bool:
    """A folder without a run.json of its own that holds trace files directly (a run folder
    holds run.json and its trace sidecar)."""
    p = Path(path)
    if not p.is_dir() or (p / "run.json").exists():
        return False
    return any(f.name.endswith(TRACE_SUFFIXES) and not f.name.startswith(".") for f in p.iterdir())


def rank_of(a: TimelineAnalysis, path: Path) -> tuple[int, str]:
    """(rank, where it came from); TraceError naming the file and field when neither the
    metadata nor the file name gives one."""
    if a.rank is not None:
        return a.rank, FROM_METADATA
    m = _RANK_IN_NAME.search(path.name)
    if m:
        return int(m.group(1)), FROM_NAME
    raise TraceError(
        f"{path}: field distributedInfo.rank: missing, and the file name has no rank-N"
    )


def _memory_peak(memory: list[MemoryStat]) -> MemoryStat | None:
    """The accelerator with the highest peak; the CPU only when it is the only device."""
    devices = [m for m in memory if m.device_type != "cpu"] or memory
    return max(devices, key=lambda m: m.peak_allocated_bytes, default=None)


def _analyses(a: TimelineAnalysis) -> dict[str, object]:
    """The RankSummary fields of launch statistics, queue length and the memory peak."""
    out: dict[str, object] = {}
    if (s := a.launches) is not None:
        d = s.overall.delay
        out.update(
            launches=s.launches,
            launch_delay_mean_s=d.mean_s,
            launch_delay_p50_s=d.p50_s,
            launch_delay_p90_s=d.p90_s,
            launch_delay_p99_s=d.p99_s,
            launch_delay_max_s=d.max_s,
            short_kernels=s.short,
            short_share=s.short_share,
            runtime_outliers=s.runtime_outliers,
            delay_outliers=s.delay_outliers,
        )
    if a.queues:
        q = max(a.queues, key=lambda q: q.max_length)  # the first on a tie: sorted by key
        out.update(queue_max_length=q.max_length, queue_max_device=q.device,
                   queue_max_stream=q.stream)  # fmt: skip
    if (m := _memory_peak(a.memory)) is not None:
        where = m.device_type if m.device < 0 else f"{m.device_type}:{m.device}"
        out.update(memory_peak_bytes=m.peak_allocated_bytes, memory_peak_t_s=m.peak_t_s,
                   memory_peak_device=where)  # fmt: skip
    return out


def summarize(a: TimelineAnalysis, rank: int, source: str) -> RankSummary:
    row = rank_table([a])[0]
    o = a.overall
    return RankSummary(
        **{**vars(row), "rank": rank},
        rank_source=source,
        events=a.events,
        window_s=a.window_s,
        devices=len(a.devices),
        busy_s=o.busy_s if o else None,
        busy_non_compute_s=o.busy_non_compute_s if o else None,
        compute_comm_overlap_s=o.compute_comm_overlap_s if o else None,
        steps=a.steps.count,
        step_mean_s=a.steps.mean_s,
        **_analyses(a),
    )


def scan_files(
    files: list[Path],
    keep_going: bool = False,
    on_file: Callable[[int, Path], None] | None = None,
    visitors: Sequence[RankVisitor] = (),
) -> Iterator[RankSummary | dict[str, str]]:
    """Each file read, analyzed and reduced in turn; yields its RankSummary, or with
    `keep_going` a {"file", "error"} dict for a file that failed (else the TraceError). The
    trace's columns and its analysis are dropped before the next file is read; each of
    `visitors` sees them first (an OpTotals collects the trace diff's op and kernel totals)."""
    seen: dict[int, Path] = {}
    for i, path in enumerate(files):
        if on_file is not None:
            on_file(i, path)
        try:
            data = read_profile(path)
            a = analyze_trace(data, top=None)
            rank, source = rank_of(a, path)
            if rank in seen:
                where = f"field {source}" if source == FROM_METADATA else source
                raise TraceError(f"{path}: {where}: rank {rank} again (also {seen[rank].name})")
        except TraceError as exc:
            if not keep_going:
                raise
            data = a = None  # a rank refused after reading: not held while the next is read
            yield {"file": str(path), "error": str(exc)}
            continue
        seen[rank] = path
        for visit in visitors:
            visit(rank, data, a)
        summary = summarize(a, rank, source)
        del data, a  # before the next file is read: the peak stays that of one trace
        yield summary


def _metric(rows: list[RankSummary], attr: str) -> dict[int, float]:
    return {
        r.rank: getattr(r, attr)
        for r in rows
        if r.rank is not None and getattr(r, attr) is not None
    }


def stragglers(rows: list[RankSummary], margin: float = STRAGGLER_MARGIN) -> Stragglers:
    """The stated rule of `Stragglers` applied to the rank table."""
    rule = (
        f"compute time (union of compute kernels) or mean ProfilerStep time above the median "
        f"over ranks by more than {margin:.0%}"
    )
    out = Stragglers(rule=rule, margin=margin, ranks=[], medians={})
    comm = _metric(rows, "communication_busy_s")
    for attr in ("busy_compute_s", "step_mean_s"):
        values = _metric(rows, attr)
        if len(values) < 2:
            continue
        med = statistics.median(values.values())
        out.medians[attr] = med
        if med <= 0:
            continue
        for rank, v in sorted(values.items()):
            if v <= med * (1 + margin) or any(s.rank == rank for s in out.ranks):
                continue
            caused = None
            if rank in comm:
                caused = sum(max(c - comm[rank], 0.0) for r, c in comm.items() if r != rank)
            out.ranks.append(StragglerRank(rank, attr, v, med, v - med, (v - med) / med, caused))
    if len(rows) < 2:
        out.notes.append("one rank: no straggler can be told")
    elif "busy_compute_s" not in out.medians:
        out.notes.append("fewer than two ranks with device kernels: compute time not compared")
    if comm and out.ranks:
        out.notes.append(
            f"communication wait caused is an estimate: the other ranks' {COMMUNICATION} kernel "
            "time beyond the straggler's own (collective kernels run while waiting for peers)"
        )
    return out


def extremes(rows: list[RankSummary]) -> list[RankExtreme]:
    """Per EXTREME_METRICS figure that at least two ranks have: the rank with the highest."""
    out = []
    for attr, label, unit in EXTREME_METRICS:
        values = _metric(rows, attr)
        if len(values) < 2:
            continue
        rank = max(sorted(values), key=lambda r: values[r])  # the lowest rank on a tie
        med = float(statistics.median(values.values()))
        out.append(RankExtreme(attr, label, unit, rank, values[rank], med, len(values)))
    return out


def scan_folder(
    folder: str | os.PathLike[str],
    keep_going: bool = False,
    margin: float = STRAGGLER_MARGIN,
    on_file: Callable[[int, Path], None] | None = None,
    visitors: Sequence[RankVisitor] = (),
) -> FolderScan:
    """The rank table (sorted by rank), stragglers and the ranks with the highest launch
    delay, queue and memory peak of a folder of per-rank traces."""
    rows: list[RankSummary] = []
    skipped: list[dict[str, str]] = []
    for item in scan_files(trace_files(folder), keep_going, on_file, visitors):
        if isinstance(item, dict):
            skipped.append(item)
        else:
            rows.append(item)
    if not rows:
        raise TraceError(f"{folder}: no readable rank trace ({len(skipped)} skipped)")
    rows.sort(key=lambda r: r.rank if r.rank is not None else -1)
    return FolderScan(str(folder), rows, stragglers(rows, margin), skipped, extremes(rows))
