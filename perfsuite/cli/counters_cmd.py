"""`perfsuite counters`: measured GPU hardware counters (CUPTI via torch.profiler, or ncu CSV)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, print_json, status

NAME_WIDTH = 48


def register(sub: Any) -> None:
    p = sub.add_parser(
        "counters",
        help="per-kernel measured FLOP, Tensor-Core FLOP, DRAM and L2 bytes from GPU counters",
        description=(
            "Read hardware counters measured on an NVIDIA GPU: a Kineto trace collected by "
            "torch.profiler with CUPTI profiler metrics (perfsuite run --counters cupti), or the "
            "CSV printed by Nsight Compute (ncu --csv --page raw). Prints per-kernel FLOP "
            "(CUDA-core, from SASS instruction counts), Tensor-Core FLOP, DRAM and L2 bytes, "
            "achieved FLOP/s and byte/s where kernel times are known, and totals. --into "
            "attaches the result as the record's `counters` section (provenance measured), "
            "beside the modeled/counted numbers already there. See docs/counters.md."
        ),
    )
    p.add_argument("source", metavar="SOURCE", help="Kineto trace (.json/.json.gz) or ncu CSV")
    p.add_argument(
        "--into",
        metavar="RUN_JSON",
        help="run.json (or its folder) to attach the section to, written atomically",
    )
    p.add_argument(
        "--steps",
        type=int,
        help="number of training steps the profiled window covered (for per-step figures)",
    )
    p.add_argument("--top", type=int, default=20, help="kernels to show in the table (default 20)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _rate(work: float | None, time_s: float | None) -> float | None:
    if work is None or not time_s:
        return None
    return work / time_s


def render(section: dict[str, Any], top: int = 20) -> str:
    """Human text: one row per kernel (largest work first), totals, notes."""
    from perfsuite.fmt import si, table, truncate

    rows = []
    for k in section["kernels"][:top]:
        work = None
        if k["flops"] is not None or k["flops_tensor"] is not None:
            work = (k["flops"] or 0.0) + (k["flops_tensor"] or 0.0)
        rows.append(
            [
                truncate(k["name"], NAME_WIDTH),
                k["op"] or "-",
                k["calls"],
                si(k["time_s"], "s"),
                si(k["flops"], "FLOP"),
                si(k["flops_tensor"], "FLOP"),
                si(k["dram_bytes"], "B"),
                si(k["l2_bytes"], "B"),
                si(_rate(work, k["time_s"]), "FLOP/s"),
                si(_rate(k["dram_bytes"], k["time_s"]), "B/s"),
            ]
        )
    headers = [
        "kernel",
        "op",
        "calls",
        "time",
        "FLOP",
        "tensor FLOP",
        "DRAM",
        "L2",
        "FLOP/s",
        "DRAM B/s",
    ]
    t = section["totals"]
    steps = section.get("window_steps")
    lines = [
        f"{section['tool']} counters ({section['provenance']}) from {section['file']}: "
        f"{t['calls']} launches, {len(section['kernels'])} kernels"
        + (f", {steps} steps" if steps else ""),
        table(rows, headers, align="llrrrrrrrr"),
    ]
    if len(section["kernels"]) > top:
        lines.append(f"... {len(section['kernels']) - top} more kernels (use --top or --json)")
    lines.append(
        f"totals: time {si(t['time_s'], 's')}, FLOP {si(t['flops'], 'FLOP')}, tensor FLOP "
        f"{si(t['flops_tensor'], 'FLOP')}, DRAM {si(t['dram_bytes'], 'B')}, "
        f"L2 {si(t['l2_bytes'], 'B')}"
    )
    if steps:
        per = {
            k: (None if t[k] is None else t[k] / steps)
            for k in ("flops", "flops_tensor", "dram_bytes")
        }
        lines.append(
            f"per step: FLOP {si(per['flops'], 'FLOP')}, tensor FLOP "
            f"{si(per['flops_tensor'], 'FLOP')}, DRAM {si(per['dram_bytes'], 'B')}"
        )
    lines.extend(f"note: {n}" for n in section["notes"])
    return "\n".join(lines)


def _file_for_record(source: Path, run_dir: str) -> str:
    """The source path relative to the record folder when possible (records move as folders)."""
    try:
        return os.path.relpath(source.resolve(), Path(run_dir).resolve())
    except ValueError:  # different drive on Windows
        return str(source.resolve())


def run(args: argparse.Namespace) -> int:
    from perfsuite.counters import CountersError, load_counters
    from perfsuite.record import load_record, write_record

    if args.steps is not None and args.steps <= 0:
        raise CLIError(f"--steps must be a positive integer, got {args.steps}")
    source = Path(args.source)
    record = load_record(args.into) if args.into else None  # fail early on a bad record
    status(f"reading counters from {source}")
    try:
        section = load_counters(source, window_steps=args.steps)
    except CountersError as exc:
        raise CLIError(str(exc)) from None
    if record is not None:
        section["file"] = _file_for_record(source, record["_dir"])
        record["counters"] = section
        path = write_record(record["_dir"], record)
        status(f"attached counters to {path}")
    if args.json:
        print_json(section)
    else:
        print(render(section, top=args.top))
    return 0
