"""`perfsuite timeline DIR` (a folder of per-rank traces) and `perfsuite timeline --diff A B`:
the argument handling, text and --json of `perfsuite.analyzers.timeline.ranks` / `.diff`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfsuite.cli.common import CLIError, html_pages, print_json, resolve_trace, status
from perfsuite.views.rank_rows import (
    ANALYSES_HEADERS,
    DIFF_HEADERS,
    RANK_HEADERS,
    analyses_rows,
    diff_rows,
    extreme_lines,
    rank_rows,
    straggler_lines,
)

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
    from perfsuite.fmt import table

    out = [
        f"{len(scan.ranks)} ranks in {scan.folder}",
        table(rank_rows(scan, "-", brief=True), RANK_HEADERS, "rllrrrrrrrr"),
    ]
    rows = analyses_rows(scan, "-")
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
    out += [f"  {line}" for line in straggler_lines(scan)]
    out += [f"note: {n}" for n in scan.stragglers.notes]
    if scan.skipped:
        out.append(f"note: {len(scan.skipped)} file(s) skipped (listed on stderr)")
    return "\n".join(out)


def diff_side(path: str) -> str:
    """A --diff side: a run folder or run.json means its trace sidecar; files and rank
    folders are themselves."""
    p = Path(path)
    if not p.exists():
        raise CLIError(f"{p}: no such file or folder")
    from perfsuite.analyzers.timeline.ranks import is_rank_folder

    if is_rank_folder(p):
        return path
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

    changed = [r for r in d.rows if r.status != "same"]
    shown = changed if not top or top <= 0 else changed[:top]
    rows = diff_rows(shown, lambda name: truncate(short_kernel_name(name), NAME_WIDTH), "-")
    c = d.counts
    out = [
        f"A: {d.a} ({d.ranks_a} rank(s)); B: {d.b} ({d.ranks_b} rank(s))",
        f"cpu ops total {si(d.total_a_s['cpu_op'], 's')} -> {si(d.total_b_s['cpu_op'], 's')}; "
        f"kernels total {si(d.total_a_s['kernel'], 's')} -> {si(d.total_b_s['kernel'], 's')}",
        f"{c['added']} added, {c['removed']} removed, {c['changed']} changed, "
        f"{c['same']} unchanged (by kind and name)",
        "",
        table(rows, DIFF_HEADERS, "lllrrrrrrr"),
    ]
    if len(shown) < len(changed):
        out.append(f"({len(changed) - len(shown)} more; --top 0 or --json lists all)")
    out += [f"note: {n}" for n in d.notes]
    return "\n".join(out)
