"""Nsight Compute (ncu): build the command line, and read its CSV output.

UNVERIFIED ON REAL OUTPUT: no GPU and no real ncu CSV were available while writing this. The
parser follows the two layouts seen in public examples of `ncu --csv` output:

* raw page (`--page raw`, what `ncu_command` asks for): a header row
  `"ID","Process ID","Process Name","Host Name","Kernel Name",...,<metric>,<metric>`, then a
  units row (empty identification fields, then `"byte"`, `"nsecond"`...), then one row per
  kernel launch;
* details page (default): one row per (launch, metric) with columns
  `"Section Name","Metric Name","Metric Unit","Metric Value"`.

Lines not starting with a quote (`==PROF==` log lines, program output) are skipped; numbers may
carry thousands separators ("1,024"); units with SI prefixes (Kbyte, usecond) are scaled to
base units. Ops come from an NVTX column when one is present (header containing "nvtx" or
"push_pop_ranges"): the innermost range, e.g. "aten::addmm" under `emit_nvtx()`.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfsuite.counters.metrics import KERNEL_TIME, default_metrics
from perfsuite.counters.section import CountersError, Launch, build_section

# The NVTX push/pop range the runner wraps the profiled training steps in. No "/" in it: ncu's
# --nvtx-include syntax uses "/" to separate nested push/pop ranges.
STEPS_RANGE = "perfsuite.steps"

_ID_COLUMNS = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
    "Rule Name",
    "Rule Type",
    "Rule Description",
    "Estimated Speedup Type",
    "Estimated Speedup",
    "Function Name",
    "Demangled Name",
}
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}
_UNIT_RE = re.compile(r"^([KMGTP]?)(byte|inst|sector|request|cycle|warp|thread)s?$")
_SEQ_RE = re.compile(r",\s*(seq|op_id|sizes)\s*=.*$")


def ncu_command(
    argv: Sequence[str],
    metrics: Sequence[str] | None = None,
    nvtx_range: str | None = STEPS_RANGE,
    launch_count: int | None = None,
) -> list[str]:
    """An `ncu` invocation profiling `argv` and printing the raw page as CSV on stdout.

    Only kernels inside the NVTX push/pop range `nvtx_range` are profiled (the runner wraps a
    sampled window of training steps in it); base units keep the CSV parseable exactly.
    Redirect stdout to a file and pass it to `counters_from_ncu_csv`.
    """
    if not argv:
        raise ValueError("ncu_command: empty program argv")
    names = list(metrics) if metrics is not None else default_metrics((8, 0))
    if KERNEL_TIME not in names:
        names.append(KERNEL_TIME)
    cmd = ["ncu", "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(names)]
    if nvtx_range:
        cmd += ["--nvtx", "--nvtx-include", f"{nvtx_range}/"]
    if launch_count is not None:
        cmd += ["--launch-count", str(int(launch_count))]
    return [*cmd, *argv]


def _number(text: str, unit: str, where: str) -> float | None:
    t = text.strip().replace(",", "")
    if t == "" or t.lower() in ("n/a", "nan", "(!) n/a"):
        return None
    try:
        value = float(t)
    except ValueError:
        raise CountersError(f"{where}: not a number: {text!r}") from None
    u = unit.strip()
    if u in _TIME:
        return value * _TIME[u]
    m = _UNIT_RE.match(u)
    if m:
        return value * _PREFIX[m.group(1)]
    return value


def _op_from_nvtx(text: str) -> str | None:
    parts = [p.strip() for p in re.split(r"[/;|]", text or "") if p.strip()]
    parts = [p for p in parts if p != STEPS_RANGE and not p.startswith("perfsuite.")]
    if not parts:
        return None
    return _SEQ_RE.sub("", parts[-1]).strip() or None


def _rows(path: Path) -> list[tuple[int, list[str]]]:
    """(file line number, fields) of the CSV lines; other output lines are skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise CountersError(f"{path}: file not found") from None
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.startswith('"'):
            out.append((n, next(csv.reader([line]))))
    return out


def _nvtx_column(header: list[str]) -> int | None:
    for i, h in enumerate(header):
        low = h.lower()
        if "nvtx" in low or "push_pop_ranges" in low:
            return i
    return None


def _parse_raw(path: Path, rows: list[tuple[int, list[str]]]) -> tuple[list[Launch], list[str]]:
    header = rows[0][1]
    body = rows[1:]
    units = [""] * len(header)
    if body and body[0][1] and body[0][1][0] == "":
        units, body = body[0][1], body[1:]
    kcol = header.index("Kernel Name")
    ncol = _nvtx_column(header)
    mcols = [i for i, h in enumerate(header) if h not in _ID_COLUMNS and i != ncol]
    launches = []
    for n, row in body:
        if len(row) != len(header):
            raise CountersError(f"{path}: line {n}: {len(row)} fields, header has {len(header)}")
        vals = {
            header[i]: _number(
                row[i], units[i] if i < len(units) else "", f"{path}: line {n}, field {header[i]}"
            )
            for i in mcols
        }
        time_s = vals.pop(KERNEL_TIME, None)
        op = _op_from_nvtx(row[ncol]) if ncol is not None else None
        launches.append(Launch(name=row[kcol], values=vals, op=op, time_s=time_s))
    return launches, [header[i] for i in mcols]


def _parse_details(path: Path, rows: list[tuple[int, list[str]]]) -> tuple[list[Launch], list[str]]:
    header = rows[0][1]
    col = {h: i for i, h in enumerate(header)}
    ncol = _nvtx_column(header)
    by_id: dict[str, Launch] = {}
    metric_names: dict[str, None] = {}
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise CountersError(f"{path}: line {n}: {len(row)} fields, header has {len(header)}")
        name = row[col["Metric Name"]]
        value = _number(
            row[col["Metric Value"]],
            row[col["Metric Unit"]],
            f"{path}: line {n}, field Metric Value",
        )
        launch = by_id.get(row[col["ID"]])
        if launch is None:
            op = _op_from_nvtx(row[ncol]) if ncol is not None else None
            launch = Launch(name=row[col["Kernel Name"]], values={}, op=op)
            by_id[row[col["ID"]]] = launch
        if name == KERNEL_TIME:
            launch.time_s = value
        else:
            launch.values[name] = value
            metric_names[name] = None
    return list(by_id.values()), list(metric_names)


def counters_from_ncu_csv(
    path: str | os.PathLike[str], window_steps: int | None = None
) -> dict[str, Any]:
    """The record's `counters` section (tool "ncu") from `ncu --csv` output (raw or details)."""
    p = Path(path)
    rows = _rows(p)
    if not rows or "Kernel Name" not in rows[0][1]:
        raise CountersError(
            f"{p}: field Kernel Name: no ncu CSV header found (expected output of "
            "`ncu --csv --page raw ...`)"
        )
    header = rows[0][1]
    if "Metric Name" in header and "Metric Value" in header:
        launches, metric_names = _parse_details(p, rows)
    else:
        launches, metric_names = _parse_raw(p, rows)
    if not launches:
        raise CountersError(f"{p}: field Kernel Name: no kernel rows (nothing was profiled?)")
    notes = ["ncu CSV parser is unverified on real ncu output (written from public examples)"]
    has_time = any(launch.time_s is not None for launch in launches)
    if not has_time:
        notes.append(f"no {KERNEL_TIME} column: time_s is null")
    if _nvtx_column(header) is None:
        notes.append("no NVTX column in the CSV: op is null")
    return build_section(
        launches,
        tool="ncu",
        file=str(p),
        metrics=sorted(set(metric_names) | ({KERNEL_TIME} if has_time else set())),
        notes=notes,
        window_steps=window_steps,
    )
