"""`perfsuite counters`: measured GPU hardware counters (CUPTI via torch.profiler, or ncu), and
`--calibrate`: check the Tensor-Core counters against matrix products of known size."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    add_top_flag,
    int64,
    print_json,
    resolve_run,
    status,
    top_rows,
)

NAME_WIDTH = 48


def register(sub: Any) -> None:
    p = sub.add_parser(
        "counters",
        help="per-kernel measured FLOP, Tensor-Core FLOP, DRAM and L2 bytes from GPU counters",
        description=(
            "Read hardware counters measured on an NVIDIA GPU: a Kineto trace collected by "
            "torch.profiler with CUPTI profiler metrics, the CSV printed by Nsight Compute "
            "(ncu --csv --page raw, a capture of its stdout is fine) or a .ncu-rep report (needs "
            "NVIDIA's ncu_report module). Prints FLOP per precision (Tensor-Core and CUDA-core "
            "apart), DRAM and L2 bytes, kernel time, per-kernel rows and totals, and flags a "
            "window without backward kernels. --into attaches the result as the record's "
            "`counters` section (provenance measured), beside the counted/modeled numbers. "
            "--calibrate runs one matrix product per dtype (bf16, fp16, TF32) under ncu on the "
            "local GPU and checks measured Tensor-Core FLOP == 2*M*N*K. See docs/counters.md."
        ),
    )
    p.add_argument(
        "source",
        metavar="SOURCE",
        nargs="?",
        help="Kineto trace (.json/.json.gz), ncu CSV or .ncu-rep",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="check the Tensor-Core counters with known-size GEMMs under ncu (needs a GPU)",
    )
    p.add_argument(
        "--device", default="cuda", help="device for --calibrate (only cuda is supported)"
    )
    p.add_argument(
        "--size", type=int64, default=4096, help="M = N = K of the --calibrate GEMMs (default 4096)"
    )
    p.add_argument(
        "--into",
        metavar="RUN",
        help="run folder or run.json to attach the section to, under the record's writer "
        "lock (a run still training keeps the section in its later writes)",
    )
    p.add_argument(
        "--steps",
        type=int64,
        help="number of training steps the profiled window covered (per-step figures; needed "
        "with --into)",
    )
    add_top_flag(p, "kernels in the table")
    add_json_flag(p)
    p.set_defaults(func=run)


def _rate(work: float | None, time_s: float | None) -> float | None:
    if work is None or not time_s:
        return None
    return work / time_s


def render(section: dict[str, Any], top: int = 20) -> str:
    """Human text: one row per kernel (largest work first), totals, notes."""
    from perfsuite.analyzers.roofline.measured import unmeasured_precisions

    missing = unmeasured_precisions(section)
    low = "≥" if missing else ""  # a sum of the measured precisions only: a lower bound
    t = section["totals"]
    steps = section.get("window_steps")
    lines = [
        f"{section['tool']} counters ({section['provenance']}) from {section['file']}: "
        f"{t['calls']} launches, {len(section['kernels'])} kernels"
        + (f", {steps} steps" if steps else "")
        + (f", NVTX range {section['nvtx_range']}" if section.get("nvtx_range") else ""),
        _kernel_table(section, top, low),
    ]
    if len(section["kernels"]) > top:
        lines.append(f"... {len(section['kernels']) - top} more kernels (use --top or --json)")
    lines.extend(_total_lines(section, low, missing))
    lines.extend(_warning_and_notes(section))
    return "\n".join(lines)


def _tensor_cell(v: float | None, unit: str, low: str) -> str:
    """A Tensor-Core figure, prefixed `low` ("≥") when some precisions were not measured."""
    from perfsuite.fmt import si

    return si(v, unit) if v is None else low + si(v, unit)


def _kernel_table(section: dict[str, Any], top: int, low: str) -> str:
    """The `top` kernels as a table; a `range` column when any kernel ran inside a user's
    NVTX range other than the profiled window's."""
    from perfsuite.fmt import short_kernel_name, si, table, truncate

    window = section.get("nvtx_range")

    def own_range(k: dict[str, Any]) -> str:  # the innermost user range, not an op's
        return next((r for r in reversed(k.get("ranges") or []) if "::" not in r
                     and r != window), "")  # fmt: skip

    ranged = any(own_range(k) for k in section["kernels"])
    rows = []
    for k in section["kernels"][:top]:
        work = None
        if k["flops"] is not None or k["flops_tensor"] is not None:
            work = (k["flops"] or 0.0) + (k["flops_tensor"] or 0.0)
        rows.append(
            [
                truncate(short_kernel_name(k["name"]), NAME_WIDTH),
                *([own_range(k) or "-"] if ranged else []),
                k["op"] or k.get("kernel_class") or "-",
                k["calls"],
                si(k["time_s"], "s"),
                si(k["flops"], "FLOP"),
                _tensor_cell(k["flops_tensor"], "FLOP", low),
                si(k["dram_bytes"], "B"),
                si(k["l2_bytes"], "B"),
                _tensor_cell(_rate(work, k["time_s"]), "FLOP/s", low),
                si(_rate(k["dram_bytes"], k["time_s"]), "B/s"),
            ]
        )
    headers = ["kernel", *(["range"] if ranged else []), "op (or class by name)", "calls"]
    headers += ["time", "CUDA-core FLOP", "Tensor-Core FLOP", "DRAM", "L2", "FLOP/s", "DRAM B/s"]
    return table(rows, headers, align="lll"[: 3 if ranged else 2] + "rrrrrrrr")


def _total_lines(section: dict[str, Any], low: str, missing: list[str]) -> list[str]:
    """Totals, the lower-bound key, FLOP per precision, per-step figures, calibration."""
    from perfsuite.analyzers.roofline.measured import calibration_text
    from perfsuite.fmt import si

    t = section["totals"]
    lines = [
        f"totals: time {si(t['time_s'], 's')}, CUDA-core FLOP {si(t['flops'], 'FLOP')}, "
        f"Tensor-Core FLOP {_tensor_cell(t['flops_tensor'], 'FLOP', low)}, "
        f"DRAM {si(t['dram_bytes'], 'B')}, L2 {si(t['l2_bytes'], 'B')}"
    ]
    if missing:
        lines.append(
            f"≥: Tensor-Core FLOP of the measured precisions only ({', '.join(missing)} not "
            "measured in this capture): lower bounds"
        )
    lines.extend(_precision_lines(section))
    per = section.get("per_step")  # the section divides once; the text shows it
    if per:
        lines.append(
            f"per step: CUDA-core FLOP {si(per['flops'], 'FLOP')}, Tensor-Core FLOP "
            f"{_tensor_cell(per['flops_tensor'], 'FLOP', low)}, DRAM {si(per['dram_bytes'], 'B')}"
        )
    cal = calibration_text(section)
    if cal:
        lines.append(cal)
    return lines


def _warning_and_notes(section: dict[str, Any]) -> list[str]:
    """The section's notes; a training window without backward kernels is a WARNING line
    (and its note is not repeated)."""
    from perfsuite.counters.section import trains

    warn = (
        section["kernels"] and section.get("has_backward") is False and trains(section["kernels"])
    )
    lines = []
    if warn:  # a training step without its backward pass: the window missed work
        lines.append(
            "WARNING: no backward kernels in this window, though it holds optimizer kernels"
        )
    lines.extend(
        f"note: {n}" for n in section["notes"] if not (warn and n.startswith("no backward"))
    )
    return lines


def _precision_lines(section: dict[str, Any]) -> list[str]:
    """Measured FLOP per precision, exact integers (Tensor-Core and CUDA-core apart)."""
    t = section["totals"]
    out = []
    for label, key in (("Tensor-Core", "flops_tensor_by_precision"),
                       ("CUDA-core", "flops_by_precision")):  # fmt: skip
        by = t.get(key) or {}
        if not by:
            continue
        parts = [f"{p} {'not measured' if v is None else f'{v:,.0f}'}" for p, v in by.items()]
        out.append(f"{label} FLOP by precision: " + ", ".join(parts))
    if t.get("tensor_int8_ops") is not None:
        out.append(f"Tensor-Core int8 ops (not FLOP): {t['tensor_int8_ops']:,.0f}")
    return out


def _file_for_record(source: Path, run_dir: str) -> str:
    """The source path relative to the record folder when possible (records move as folders)."""
    try:
        return os.path.relpath(source.resolve(), Path(run_dir).resolve())
    except ValueError:  # different drive on Windows
        return str(source.resolve())


def _calibrate(args: argparse.Namespace) -> int:
    from perfsuite.counters import calibration_cache
    from perfsuite.counters.calibrate import run_calibration

    if args.source:
        raise CLIError("--calibrate takes no SOURCE (it measures on the local GPU)")
    if args.device != "cuda":
        raise CLIError(f"--calibrate --device {args.device}: only cuda is supported")
    if args.size <= 0:
        raise CLIError(f"--size {args.size}: must be a positive integer")
    status(f"calibrating Tensor-Core counters with {args.size}^3 GEMMs under ncu ...")
    result, why = run_calibration(args.size)
    if result is None:
        raise CLIError(f"calibration not run: {why}")
    kept = calibration_cache.save(result, "ncu")
    if kept is None:
        status("note: the capture does not name its device; the result is not kept")
    else:
        status(f"kept for {result.device['name']} in {kept}: counters sections of this chip "
               "now say whether its calibration passed")  # fmt: skip
    if args.json:
        print_json({"m": result.m, "n": result.n, "k": result.k, "ok": result.ok,
                    "device": result.device, "kept_in": kept,
                    "checks": [vars(c) for c in result.checks]})  # fmt: skip
    else:
        print(render_calibration(result))
    return 0 if result.ok else 1


def render_calibration(result: Any) -> str:
    lines = [f"GEMM {result.m}x{result.n}x{result.k}: expected 2*M*N*K = "
             f"{result.expected_flops:,.0f} FLOP per dtype"]  # fmt: skip
    for c in result.checks:
        got = "not measured" if c.measured_flops is None else f"{c.measured_flops:,.0f}"
        lines.append(f"  {c.precision:5s} {'OK  ' if c.ok else 'FAIL'} measured {got} ({c.detail})")
    lines.append("calibration " + ("passed" if result.ok else "FAILED"))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from perfsuite.counters import CountersError, load_counters
    from perfsuite.record import load_record
    from perfsuite.record.io import update_record

    if args.calibrate:
        return _calibrate(args)
    if not args.source:
        raise CLIError("give a SOURCE file, or --calibrate")
    if args.steps is not None and args.steps <= 0:
        raise CLIError(f"--steps must be a positive integer, got {args.steps}")
    if args.into and args.steps is None:
        # the record's counted FLOP are per step: without the capture's step count every
        # counted-vs-measured ratio would be off by that factor
        raise CLIError("--into needs --steps N: how many training steps the capture spans")
    source = Path(args.source)
    into = resolve_run(args.into) if args.into else None
    record = load_record(into) if into else None  # fail early on a bad record
    status(f"reading counters from {source}")
    try:
        section = load_counters(source, window_steps=args.steps)
    except CountersError as exc:
        raise CLIError(str(exc)) from None
    kept = section  # --json prints what the record keeps; the text shows the path given
    if record is not None and into is not None:
        kept = {**section, "file": _file_for_record(source, record["_dir"])}

        def attach(rec: dict[str, Any]) -> None:
            rec["counters"] = kept

        update_record(into, attach)  # under the lock: the running run keeps it, and we its epochs
        status(f"attached counters to {record['_path']}")
    if args.json:
        print_json(kept)
    else:
        print(render(section, top=top_rows(args.top)))
    return 0
