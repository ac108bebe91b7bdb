"""Nsight Compute (ncu): build the command line, and turn its output into the `counters` section.

CSV exports are read by `ncu_csv.py` (the formats of docs/counters.md); `.ncu-rep` files are
read through NVIDIA's `ncu_report` module when it imports (`ncu_rep.py`), else the error asks
for the CSV.

NVTX window: the runner marks the profiled steps with ONE process-wide start/end range
(`torch.cuda.nvtx.range_start/range_end`) named `perfsuite.steps`, and ncu keeps it with
`--nvtx --nvtx-include perfsuite.steps` (no trailing "/": with one, ncu matches push/pop
ranges). Push/pop ranges are per thread, and the autograd engine launches backward kernels
from its own thread, so a push/pop filter would keep the forward kernels only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfsuite.counters import ncu_binary, ncu_rep
from perfsuite.counters.ncu_csv import NcuData, read_ncu_csv
from perfsuite.counters.section import CountersError, build_section
from perfsuite.devices.counter_metrics import KERNEL_TIME, ncu_metrics

STEPS_RANGE = "perfsuite.steps"


def ncu_command(
    argv: Sequence[str],
    metrics: Sequence[str] | None = None,
    nvtx_range: str | None = STEPS_RANGE,
    launch_count: int | None = None,
    ncu: str = "ncu",
    export: str | os.PathLike[str] | None = None,
) -> list[str]:
    """An `ncu` invocation profiling `argv`.

    Without `export`, ncu prints the raw page as CSV on stdout (base units; redirect it to a
    file); with `export`, it writes `<export>.ncu-rep`. Only kernels inside the NVTX start/end
    range `nvtx_range` are profiled (None: all kernels). Without `metrics`, the union of the
    per-chip metric sets (ncu drops names a chip lacks, silently) and the kernel time.
    """
    if not argv:
        raise ValueError("ncu_command: empty program argv")
    names = list(metrics) if metrics is not None else ncu_metrics()
    if KERNEL_TIME not in names:
        names.append(KERNEL_TIME)
    cmd = [ncu]
    if export is None:
        cmd += ["--csv", "--page", "raw", "--print-units", "base"]
    else:
        cmd += ["--export", str(export), "--force-overwrite"]
    cmd += ["--metrics", ",".join(names)]
    if nvtx_range:
        cmd += ["--nvtx", "--nvtx-include", nvtx_range]
    if launch_count is not None:
        cmd += ["--launch-count", str(int(launch_count))]
    return [*cmd, *argv]


def export_csv_command(report: str | os.PathLike[str], ncu: str = "ncu") -> list[str]:
    """The command printing a saved `.ncu-rep` as the CSV `read_ncu_csv` reads."""
    return [ncu, "-i", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def read_ncu(path: str | os.PathLike[str]) -> tuple[NcuData, str]:
    """Parse an ncu file: `.ncu-rep` via `ncu_report` when importable, else CSV; and how."""
    p = Path(path)
    if not p.exists():
        raise CountersError(f"{p}: file not found")
    if p.suffix == ".ncu-rep":
        if ncu_rep.available():
            return ncu_rep.read_ncu_rep(p), f"ncu_report module ({ncu_rep.origin()})"
        why = ncu_rep.why_unavailable()
        return _export_and_read(p), f"ncu CSV export of the report (ncu_report: {why})"
    return read_ncu_csv(p), "ncu CSV (raw page)"


def _export_and_read(report: Path) -> NcuData:
    """Fallback for `.ncu-rep` without `ncu_report`: let ncu print the CSV, then parse it."""
    import subprocess
    import tempfile

    ncu = ncu_binary.find_ncu()
    if ncu is None:
        raise CountersError(
            f"{report}: .ncu-rep needs NVIDIA's ncu_report module (add <Nsight Compute>/extras/"
            f"python to PYTHONPATH) or ncu to export it: "
            f"{' '.join(export_csv_command(report))} > f.csv"
        )
    with tempfile.TemporaryDirectory(prefix="perfsuite-ncu-") as tmp:
        out = Path(tmp) / "export.csv"
        try:
            with open(out, "wb") as fh:
                proc = subprocess.run(
                    export_csv_command(report, ncu),
                    stdout=fh,
                    stderr=subprocess.PIPE,
                    timeout=600,
                    check=False,
                )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CountersError(f"{report}: ncu could not export it: {e}") from None
        if proc.returncode != 0:
            last = (proc.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            raise CountersError(f"{report}: ncu -i failed (status {proc.returncode}): {last}")
        data = read_ncu_csv(out)
    return data


def counters_from_ncu(
    path: str | os.PathLike[str],
    window_steps: int | None = None,
    nvtx_range: str | None = None,
) -> dict[str, Any]:
    """The record's `counters` section (tool "ncu") from an ncu CSV or `.ncu-rep` file."""
    data, how = read_ncu(path)
    notes = [
        f"read through the {how}",
        "ncu replays each kernel alone, by default with caches flushed (--cache-control all) "
        "and clocks locked to base (--clock-control base): DRAM bytes are cold-cache figures "
        "and kernel times are at base clock, not those of the training run",
        *data.notes,
    ]
    has_time = any(launch.time_s is not None for launch in data.launches)
    if not has_time:
        notes.append(f"no {KERNEL_TIME} column: time_s is null")
    metrics = sorted(set(data.metric_names) | ({KERNEL_TIME} if has_time else set()))
    seen = sorted({r for launch in data.launches for r in launch.ranges})
    start_end = bool(data.nvtx) and "start/end" in data.nvtx
    if nvtx_range is None and start_end and STEPS_RANGE in seen:
        nvtx_range = STEPS_RANGE
    if data.nvtx == "push/pop":
        notes.append(
            "kernels were selected by NVTX push/pop ranges, which are per thread: kernels that "
            "autograd launches from its own thread (the backward pass) are left out"
        )
    elif start_end and "push/pop" in data.nvtx:
        notes.append(
            "kernels were selected by a process-wide NVTX start/end range (backward included); "
            "the push/pop ranges inside it (emit_nvtx's per-op ranges) only attribute kernels "
            "to ops"
        )
    return build_section(
        data.launches,
        tool="ncu",
        file=str(path),
        metrics=metrics,
        notes=notes,
        window_steps=window_steps,
        device=data.device,
        nvtx=data.nvtx,
        nvtx_range=nvtx_range,
    )
