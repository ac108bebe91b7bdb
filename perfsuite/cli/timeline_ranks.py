"""`perfsuite timeline DIR` (a folder of per-rank traces) and `perfsuite timeline --diff A B`:
the argument handling, text and --json of `perfsuite.analyzers.timeline.ranks` / `.diff`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfsuite.cli.common import CLIError, html_pages, print_json, status

PROGRESS_FILES = 4  # a folder with at least this many traces reports each on stderr
NAME_WIDTH = 60


def add_flags(p: Any) -> None:
    from perfsuite.cli.common import fraction

    p.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        help="compare two traces: files, rank folders or run folders (runs/<id>): cpu ops and "
        "kernels added, removed, and count and total/mean duration deltas (B - A), largest "
        "absolute change first",
    )
    p.add_argument(
        "--html",
        metavar="FILE",
        help="with a rank folder or --diff: also write the table and its figure as one "
        "self-contained HTML page (no network needed to view it)",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="in a rank folder, skip a file that is not a readable trace (or repeats a rank) "
        "with one line on stderr, instead of stopping (exit status 1 when any was skipped)",
    )
    p.add_argument(
        "--straggler-margin",
        type=fraction,
        default=0.10,
        metavar="F",
        help="a rank whose compute or mean step time is above the median by more than this "
        "fraction is a straggler (default 0.10)",
    )


def _write_page(output: str, page: str, inputs: list[str]) -> None:
    """Atomically, never over a record or an input (`output_path`'s guard)."""
    from perfsuite.cli.common import output_path
    from perfsuite.record.io import write_text_atomic

    out = output_path(output, inputs=inputs)
    write_text_atomic(out, page)
    status(f"wrote {out}")


def _progress(n: int) -> Any:
    if n < PROGRESS_FILES:
        return None

    def on_file(i: int, path: Path) -> None:
        status(f"[{i + 1}/{n}] {path.name}")

    return on_file


def run_folder(args: Any, folder: str) -> int:
    from perfsuite.analyzers.timeline import TraceError
    from perfsuite.analyzers.timeline.ranks import scan_folder, trace_files

    try:
        n = len(trace_files(folder))
        scan = scan_folder(folder, args.keep_going, args.straggler_margin, _progress(n))
    except TraceError as exc:
        raise CLIError(str(exc)) from None
    for s in scan.skipped:
        status(f"skipped {s['error']}")
    if args.html:
        inputs = [folder, *map(str, trace_files(folder))]
        _write_page(args.html, html_pages(args).ranks(scan), inputs)
    if args.json:
        print_json({"time_unit": "s", **vars(scan)})
    else:
        print(render_folder(scan))
    return 1 if scan.skipped else 0


def render_folder(scan: Any) -> str:
    from perfsuite.fmt import pct, si, table

    rows = []
    for r in scan.ranks:
        rows.append(
            [r.rank, r.trace[-40:], "name" if r.rank_source == "file name" else "meta",
             r.steps, si(r.step_mean_s, "s") if r.step_mean_s is not None else "-",
             si(r.span_s, "s") if r.span_s is not None else "-",
             si(r.busy_compute_s, "s") if r.busy_compute_s is not None else "-",
             pct(r.compute_share) if r.compute_share is not None else "-",
             si(r.communication_busy_s, "s") if r.communication_busy_s is not None else "-",
             pct(r.idle_share) if r.idle_share is not None else "-",
             si(r.host_wait_s, "s") if r.host_wait_s is not None else "-"]
        )  # fmt: skip
    headers = ["rank", "trace", "rank from", "steps", "step mean", "span", "compute",
               "of span", "communication", "idle", "host wait"]  # fmt: skip
    out = [
        f"{len(scan.ranks)} ranks in {scan.folder}",
        table(rows, headers, "rllrrrrrrrr"),
    ]
    rows = analyses_rows(scan)
    if rows:
        out += [
            "",
            "launches, queues and memory per rank",
            table(rows, ANALYSES_HEADERS, "r" * 12 + "l"),
        ]
        out += [f"  {line}" for line in extreme_lines(scan)]
    out += ["", f"stragglers ({scan.stragglers.rule}):"]
    if not scan.stragglers.ranks:
        out.append("  none")
    for s in scan.stragglers.ranks:
        caused = (
            f"; communication wait on the other ranks (estimate) {si(s.comm_wait_caused_s, 's')}"
            if s.comm_wait_caused_s is not None
            else ""
        )
        out.append(
            f"  rank {s.rank}: {s.metric} {si(s.value_s, 's')}, median {si(s.median_s, 's')} "
            f"(+{pct(s.excess_share)}){caused}"
        )
    out += [f"note: {n}" for n in scan.stragglers.notes]
    if scan.skipped:
        out.append(f"note: {len(scan.skipped)} file(s) skipped (listed on stderr)")
    return "\n".join(out)


ANALYSES_HEADERS = ["rank", "launches", "delay p50", "delay p99", "short", "short share",
                    "call outliers", "delay outliers", "queue max", "device:stream", "memory peak",
                    "peak at", "on"]  # fmt: skip


def analyses_rows(scan: Any) -> list[list[Any]]:
    """Per rank: launch statistics, the deepest queue and the memory peak (`-` where the
    trace has none); no rows when no rank has launches or memory events."""
    from perfsuite.fmt import pct, si

    def opt(x: Any, text: Any) -> Any:
        return "-" if x is None else text

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


def extreme_lines(scan: Any) -> list[str]:
    """One line per RankExtreme: which rank, its value, where, and the median over ranks."""
    from perfsuite.fmt import si

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


def diff_side(path: str) -> str:
    """A --diff side: a run folder or run.json means its trace sidecar; files and rank
    folders are themselves."""
    p = Path(path)
    if not p.exists():
        raise CLIError(f"{p}: no such file or folder")
    from perfsuite.analyzers.timeline.ranks import is_rank_folder

    if is_rank_folder(p):
        return path
    from perfsuite.cli.timeline_cmd import resolve_trace

    return str(resolve_trace(path))


def run_diff(args: Any) -> int:
    from perfsuite.analyzers.timeline import TraceError
    from perfsuite.analyzers.timeline.diff import diff_paths, side_files
    from perfsuite.record import RecordError

    try:
        a, b = (diff_side(x) for x in args.diff)
        many = len(side_files(a)) + len(side_files(b)) >= PROGRESS_FILES
        d = diff_paths(a, b, (lambda _i, path: status(f"reading {path}")) if many else None)
    except (TraceError, RecordError) as exc:
        raise CLIError(str(exc)) from None
    if args.html:
        inputs = [*args.diff, a, b, *(str(f) for x in (a, b) for f in side_files(x))]
        _write_page(args.html, html_pages(args).diff(d, args.top or 20), inputs)
    if args.json:
        print_json({"time_unit": "s", **vars(d)})
    else:
        print(render_diff(d, args.top))
    return 0


def render_diff(d: Any, top: int) -> str:
    from perfsuite.fmt import short_kernel_name, si, table, truncate

    def signed(x: float | None, unit: str) -> str:
        if x is None:
            return "-"
        return ("+" if x > 0 else "") + si(x, unit)

    changed = [r for r in d.rows if r.status != "same"]
    shown = changed if not top or top <= 0 else changed[:top]
    rows = [
        [r.kind, truncate(short_kernel_name(r.name), NAME_WIDTH), r.status,
         r.count_a, r.count_b, f"{r.count_delta:+d}",
         si(r.total_a_s, "s"), si(r.total_b_s, "s"), signed(r.total_delta_s, "s"),
         signed(r.mean_delta_s, "s")]
        for r in shown
    ]  # fmt: skip
    c = d.counts
    out = [
        f"A: {d.a} ({d.ranks_a} rank(s)); B: {d.b} ({d.ranks_b} rank(s))",
        f"cpu ops total {si(d.total_a_s['cpu_op'], 's')} -> {si(d.total_b_s['cpu_op'], 's')}; "
        f"kernels total {si(d.total_a_s['kernel'], 's')} -> {si(d.total_b_s['kernel'], 's')}",
        f"{c['added']} added, {c['removed']} removed, {c['changed']} changed, "
        f"{c['same']} unchanged (by kind and name)",
        "",
        table(
            rows,
            [
                "kind",
                "name",
                "status",
                "count A",
                "count B",
                "delta",
                "total A",
                "total B",
                "delta",
                "mean delta",
            ],
            "lllrrrrrrr",
        ),
    ]
    if len(shown) < len(changed):
        out.append(f"({len(changed) - len(shown)} more; --top 0 or --json lists all)")
    out += [f"note: {n}" for n in d.notes]
    return "\n".join(out)
