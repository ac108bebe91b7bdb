"""`perfsuite timeline`: analyze PyTorch profiler (Kineto) traces, or a run's trace sidecar."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    add_top_flag,
    print_json,
    resolve_trace,
    status,
    top_rows,
)
from perfsuite.cli.timeline.ranks import add_flags as add_rank_flags
from perfsuite.views.timeline_rows import CATEGORY_HEADERS, OP_HEADERS, category_rows, op_rows

BIG_FILE = 8 << 20  # show a progress bar above this many bytes on disk
NAME_WIDTH = 60


def register(sub: Any) -> None:
    p = sub.add_parser(
        "timeline",
        help="device/CPU timeline of PyTorch profiler traces: busy, idle, kernels, ops",
        description=(
            "Analyze Chrome-trace JSON written by torch.profiler (plain or .gz; CUDA, ROCm or "
            "CPU-only) or an Nsight Systems profile (an `nsys export --type sqlite` file; a "
            ".nsys-rep is exported when nsys is on PATH): per device the temporal breakdown "
            "(compute, non-compute, idle, with "
            "kernels on several streams counted once), idle time attributed to host waits, "
            "kernel time by category (compute, memcpy, memset, NCCL/RCCL communication), top "
            "kernels, CPU operators with the device time of the kernels they launched, "
            "per-op roofline points when shapes were recorded, kernel launch statistics (launch "
            "call, device time, launch delay, short kernels, outliers), queue length per stream "
            "and, for traces recorded with profile_memory=True, the memory timeline. A RUN "
            "folder or run.json analyzes the record's timeline.trace sidecar. A folder of "
            "per-rank traces gives the rank table and its stragglers, each rank read and dropped "
            "in turn; --diff A B compares two traces, rank folders or runs op by op and kernel "
            "by kernel. Times are seconds, in --json too (which lists every row, whatever --top "
            "says)."
        ),
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="TRACE",
        help="trace file (.json / .json.gz), Nsight Systems export (.sqlite) or report "
        "(.nsys-rep, exported with nsys), a perfsuite run folder / run.json, or one folder of "
        "per-rank traces",
    )
    add_top_flag(p)
    p.add_argument(
        "--device", type=int, default=None, metavar="D", help="only this device id (pid/device)"
    )
    add_json_flag(p)
    add_rank_flags(p)
    p.set_defaults(func=run)


def _analyze(path: Path, top: int, device: int | None) -> Any:
    from perfsuite.analyzers.timeline import TraceError, analyze_file

    bar = None
    progress = None
    if path.stat().st_size > BIG_FILE:
        from tqdm import tqdm

        bar = tqdm(desc=path.name, unit="ev", unit_scale=True, file=sys.stderr, leave=False)

        def progress(n: int) -> None:
            bar.update(n - bar.n)

    try:
        return analyze_file(path, top=top, device=device, progress=progress)
    except TraceError as exc:
        raise CLIError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()


def run(args: Any) -> int:
    top = 0 if args.json else args.top  # --json is never cut
    top_rows(top)
    from perfsuite.cli.timeline import ranks as timeline_ranks

    if args.diff:
        if args.paths:
            raise CLIError("--diff A B takes no other TRACE")
        return timeline_ranks.run_diff(args)
    if not args.paths:
        raise CLIError("give a TRACE (file, run, or folder of rank traces), or --diff A B")
    from perfsuite.analyzers.timeline.ranks import is_rank_folder

    if any(is_rank_folder(p) for p in args.paths):
        if len(args.paths) > 1:
            raise CLIError("a folder of rank traces is analyzed alone: give it as the only TRACE")
        return timeline_ranks.run_folder(args, args.paths[0])
    if args.html:
        raise CLIError("--html goes with a folder of rank traces or --diff A B")
    traces = [resolve_trace(p) for p in args.paths]
    results = []
    for path in traces:
        if not args.json and len(traces) > 1:
            status(f"analyzing {path}")
        results.append(_analyze(path, top, args.device))
    if args.json:
        from perfsuite.analyzers.timeline import rank_table

        print_json({"time_unit": "s", "traces": results, "ranks": rank_table(results)})
        return 0
    print("\n\n".join(render(a) for a in results))
    if len(results) > 1:
        print()
        print(render_ranks(results))
    return 0


def _device_lines(d: Any) -> list[str]:
    from perfsuite.fmt import pct, si, table

    span = d.span_s or float("nan")
    label = "all devices" if d.device < 0 else f"device {d.device}"
    if d.name:
        label += f" ({d.name})"
    idle = d.idle
    out = [
        f"{label}: {d.events} events over {si(d.span_s, 's')} (first start to last end)",
        f"  busy {si(d.busy_s, 's')} ({pct(d.busy_s / span)}): compute "
        f"{pct(d.busy_compute_s / span)}, non-compute only {pct(d.busy_non_compute_s / span)}; "
        f"idle {si(d.idle_s, 's')} ({pct(d.idle_s / span)})",
        f"  idle {si(idle.idle_s, 's')} in {idle.gaps} gaps: host wait {si(idle.host_wait_s, 's')}"
        f" (in sync calls {si(idle.host_sync_s, 's')}), inside launch calls "
        f"{si(idle.in_launch_s, 's')}, queued {si(idle.queued_s, 's')}, "
        f"unattributed {si(idle.unattributed_s, 's')}",
    ]
    if d.compute_comm_overlap_s:
        out.append(f"  compute/communication overlap {si(d.compute_comm_overlap_s, 's')}")
    out.append(_indent(table(category_rows(d), CATEGORY_HEADERS, "lrrrr")))
    if len(d.streams) > 1:
        rows = [
            [s.stream, s.events, si(s.busy_s, "s"), si(s.idle_s, "s"), si(s.host_wait_s, "s")]
            for s in d.streams
        ]
        headers = ["stream", "events", "busy", "idle", "host wait (HTA rule)"]
        out.append(_indent(table(rows, headers, "rrrrr")))
    return out


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def render(a: Any) -> str:
    """Text summary of one TimelineAnalysis."""
    from perfsuite.fmt import short_kernel_name, si, table, truncate

    def name(text: str) -> str:
        return truncate(text, NAME_WIDTH)

    rank = f"rank {a.rank}, " if a.rank is not None else ""
    out = [
        f"trace {a.path}",
        f"  {rank}{a.events} events, profiled window {si(a.window_s, 's')}, "
        f"reader {a.reader_backend}",
    ]
    if a.steps.count:
        out.append(f"  {a.steps.count} ProfilerStep ranges, mean {si(a.steps.mean_s, 's')}")
    for d in a.devices:
        out.extend(_device_lines(d))
    if len(a.devices) > 1 and a.overall is not None:
        out.extend(_device_lines(a.overall))
    if a.top_kernels:
        from perfsuite.views.timeline_rows import TOP_KERNEL_HEADERS, top_kernel_rows

        rows = top_kernel_rows(a.top_kernels, lambda k: name(short_kernel_name(k)))
        out += ["", "top kernels", table(rows, ["kernel", *TOP_KERNEL_HEADERS])]
    if a.profiler_ranges is not None:
        pr = a.profiler_ranges
        rows = [[name(k.name), k.count, si(k.total_s, "s")] for k in pr.top]
        out += [
            "",
            f"CUPTI profiler ranges: {pr.count}, metrics: {', '.join(pr.metrics)}",
            table(rows, ["range (kernel replayed for counters)", "count", "range time"]),
        ]
    if a.ops:
        rows = op_rows(a.ops, a.has_device, name)
        out += ["", "CPU operators", table(rows, OP_HEADERS, "lrrrrrl")]
    if a.has_device:
        out.append(
            f"device time with a launching cpu_op: {si(a.mapped_device_time_s, 's')}, "
            f"without: {si(a.unmapped_device_time_s, 's')}"
        )
    if a.annotations:
        rows = [
            [name(r.name), r.count, si(r.total_s, "s"), "yes" if r.communication else ""]
            for r in a.annotations
        ]
        out += ["", "annotations", table(rows, ["annotation", "count", "total", "collective"])]
    if len(a.threads) > 1:
        rows = [[f"{t.pid}/{t.tid}", t.ops, t.annotations, si(t.top_level_s, "s")]
                for t in a.threads]  # fmt: skip
        out += ["", "threads", table(rows, ["pid/tid", "ops", "annotations", "busy"], "lrrr")]
    if a.roofline:
        rows = [
            [p.op, truncate(str(list(p.input_dims)), 40), p.calls, si(p.flops, "FLOP"),
             si(p.time_s, "s"), si(p.flops_per_s, "FLOP/s"),
             f"{p.intensity:.3g}" if p.intensity is not None else "n/a"]
            for p in a.roofline
        ]  # fmt: skip
        headers = ["op", "input dims", "calls", "FLOP/call",
                   "device time" if a.has_device else "host self time", "achieved",
                   "FLOP/byte"]  # fmt: skip
        out += [
            "",
            "roofline points (FLOP, bytes modeled from shapes; time measured)",
            table(rows, headers, "llrrrrr"),
        ]
    out += _analyses(a)
    from perfsuite.cli.timeline.copies import copy_lines, projection_lines, roof_lines

    out += copy_lines(a) + projection_lines(a) + roof_lines(a)
    out += [f"note: {n}" for n in a.notes]
    return "\n".join(out)


def _analyses(a: Any) -> list[str]:
    """Launch statistics, queue length per stream and memory timeline sections."""
    from perfsuite.cli.timeline.analyses import analyses_lines

    return analyses_lines(a)


def render_ranks(results: list[Any]) -> str:
    """One row per trace: spot the straggler or the rank that waits (`ranks` in --json)."""
    from perfsuite.analyzers.timeline import rank_table
    from perfsuite.fmt import pct, si, table, truncate

    rows = []
    for r in rank_table(results):
        rank = "" if r.rank is None else r.rank
        if r.span_s is None:
            rows.append([truncate(r.trace, 40), rank, "-", "-", "-", "-", "-"])
            continue
        rows.append(
            [truncate(r.trace, 40), rank, si(r.span_s, "s"),
             pct(r.compute_share) if r.compute_share is not None else "n/a",
             si(r.communication_busy_s, "s"),
             pct(r.idle_share) if r.idle_share is not None else "n/a",
             si(r.host_wait_s, "s")]
        )  # fmt: skip
    headers = ["trace", "rank", "span", "compute", "communication", "idle", "host wait"]
    return table(rows, headers, "lrrrrrr")
