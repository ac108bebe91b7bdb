"""Read Nsight Compute CSV output (`ncu --csv`): the raw page and the details page.

The layout it reads, as Nsight Compute 2025.3 writes it (docs/counters.md):

* raw page (`--page raw`): a header row `"ID","Process ID",...,"Kernel Name",...`, then a units
  row (empty identification fields; `byte`, `ns`, `inst`...), then one row per kernel launch.
  Each metric comes as `.avg/.max/.min/.sum` columns; we read `.sum` (the kernel's total) and
  unsuffixed columns. Hundreds of `device__attribute_*`, `launch__*`, `nvlink__*` columns hold
  text such as `No-CC`: those are attributes, kept as text, never an error.
* a capture of ncu's stdout has the program's own output and `==PROF==` lines before the header.
* values carry thousands separators ("137,438,953,472") even with `--print-units base`.
* NVTX: with `--nvtx`, columns `thread Domain:Push/Pop_Range:...` (value `573  "<default
  domain>:step_fp32:none:..."`) and `Id:Domain:Start/Stop_Range:...` (value `"0:<default
  domain>:perfsuite.steps:none:..."`).

The details page (one row per launch and metric; `Metric Name`, `Metric Unit`, `Metric Value`)
is read too; its layout follows public examples and was not checked on real output.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.counters.rates import counted_names, counts_from_rates, rebuilt_note
from perfsuite.counters.section import CountersError, Launch
from perfsuite.devices.counter_metrics import KERNEL_TIME
from perfsuite.safeio import HEAD_BYTES, binary_detail, empty_detail, read_bytes

# ncu CSVs of long windows reach hundreds of MB; past this a file is refused, not read.
MAX_CSV_BYTES = 1024 * 1024 * 1024
MAX_FIELD = 128 * 1024  # one cell (a demangled template name is a few KB)
DETAILS_COLUMNS = ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")

_ID_COLUMNS = frozenset(
    ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context",
     "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
     "Metric Unit", "Metric Value", "Rule Name", "Rule Type", "Rule Description",
     "Estimated Speedup Type", "Estimated Speedup", "Function Name", "Demangled Name")
)  # fmt: skip
_ATTRIBUTE_PREFIXES = ("device__", "launch__", "nvlink__", "numa__", "c2clink__", "profiler__")
_DROPPED_SUFFIXES = (".avg", ".max", ".min")
_CYCLES = "__cycles_elapsed.avg"
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
         "s": 1.0, "second": 1.0}  # fmt: skip
_UNIT_RE = re.compile(r"^([KMGTP]?)(byte|inst|sector|request|cycle|warp|thread)s?$")
_QUOTED = re.compile(r'"([^"]*)"')
# The arguments PyTorch appends to an NVTX range name (", seq = 12, op_id = 3"), cut so the
# range names the op alone; the .ncu-rep reader cuts them the same way.
NVTX_ARGS_SUFFIX = re.compile(r",\s*(seq|op_id|sizes)\s*=.*$")


@dataclass
class NcuData:
    """What an ncu file holds, before aggregation into the record section."""

    launches: list[Launch]
    metric_names: list[str]
    device: dict[str, str] = field(default_factory=dict)
    nvtx: str | None = None  # "start/end", "push/pop" or None: which kind of ranges were seen
    notes: list[str] = field(default_factory=list)


def is_number_text(text: str) -> bool:
    t = text.strip().replace(",", "")
    try:
        float(t)
    except ValueError:
        return False
    return True


def parse_number(text: str, unit: str, where: str) -> float | None:
    """A metric value in base units; None for empty / n/a. `where` names file, line, column."""
    t = text.strip().replace(",", "")
    if t == "" or t.lower() in ("n/a", "nan", "(!) n/a"):
        return None
    try:
        value = float(t)
    except ValueError:
        raise CountersError(f"{where}: not a number: {text[:40]!r}") from None
    if not math.isfinite(value):
        raise CountersError(f"{where}: not a finite number: {text[:40]!r}")
    u = unit.strip()
    if u in _TIME:
        return value * _TIME[u]
    m = _UNIT_RE.match(u)
    if m:
        return value * _PREFIX[m.group(1)]
    return value


def _read_text(path: Path) -> str:
    raw = read_bytes(path, MAX_CSV_BYTES, CountersError)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
                raw = fh.read(MAX_CSV_BYTES + 1)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise CountersError(f"{path}: cannot read: {e}") from None
        if len(raw) > MAX_CSV_BYTES:
            raise CountersError(f"{path}: larger than {MAX_CSV_BYTES:,} bytes uncompressed")
    empty = empty_detail(raw)
    if empty:
        raise CountersError(f"{path}: {empty}")
    binary = binary_detail(raw[:HEAD_BYTES])
    if binary:
        raise CountersError(f"{path}: not an ncu CSV ({binary})")
    return raw.decode("utf-8", errors="replace")


def _rows(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, fields) from the ncu header on; output before it and non-CSV lines skipped."""
    out: list[tuple[int, list[str]]] = []
    for n, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.startswith('"'):
            continue  # ==PROF== lines, program output
        if not out and "Kernel Name" not in line:
            continue  # a program line that happens to start with a quote
        if len(line) > MAX_FIELD and any(len(f) > MAX_FIELD for f in line.split('","')):
            raise CountersError(f"{path}: line {n}: a field longer than {MAX_FIELD:,} characters")
        try:
            fields = next(csv.reader([line]))
        except csv.Error as e:
            raise CountersError(f"{path}: line {n}: not CSV ({e})") from None
        if not out and "Kernel Name" not in fields:
            continue
        out.append((n, fields))
    return out


def range_names(column: str, text: str) -> tuple[str, ...]:
    """NVTX range names in one cell: start/end cells are `"id:domain:name:..."`, push/pop cells
    `tid  "domain:name:..."`, one quoted entry per range; an `emit_nvtx` suffix `, seq = N` is
    dropped. The fields after the name are those the column header lists after `..._Range`
    (PL_Type ... Msg), counted from the right, so a name with colons (`aten::mm`) stays whole.
    """
    fields = column.split(":")
    at = next((i for i, f in enumerate(fields) if f.endswith("_Range")), None)
    start_end = "Start/Stop" in column or "Start/End" in column
    idx = at if at is not None else (2 if start_end else 1)
    trailing = len(fields) - idx - 1 if at is not None else 0
    names = []
    for quoted in _QUOTED.findall(text or ""):
        parts = quoted.split(":")
        end = len(parts) - trailing if len(parts) - trailing > idx else idx + 1
        name = ":".join(parts[idx:end]).strip()
        if name:
            names.append(NVTX_ARGS_SUFFIX.sub("", name))
    if not names and text.strip() and not _QUOTED.search(text):
        names = [NVTX_ARGS_SUFFIX.sub("", p.strip()) for p in re.split(r"[/;|]", text) if p.strip()]
    return tuple(names)


def _nvtx_columns(header: list[str]) -> dict[int, str]:
    out = {}
    for i, h in enumerate(header):
        low = h.lower()
        if "push/pop" in low or "start/stop" in low or "start/end" in low or "nvtx" in low:
            out[i] = "start/end" if ("start/stop" in low or "start/end" in low) else "push/pop"
    return out


def is_metric_column(name: str) -> bool:
    """A metric we may use: `.sum` and unsuffixed counts, rates, and the elapsed cycles that
    turn a rate back into a count (`rates.counts_from_rates`); not attributes or ids."""
    return (
        name not in _ID_COLUMNS
        and not name.startswith(_ATTRIBUTE_PREFIXES)
        and (not name.endswith(_DROPPED_SUFFIXES) or name.endswith(_CYCLES))
    )


def _device(header: list[str], row: list[str]) -> dict[str, str]:
    col = {h: i for i, h in enumerate(header)}
    out = {}
    for key, name in (("name", "device__attribute_display_name"), ("cc", "CC"),
                      ("chip", "device__attribute_chip")):  # fmt: skip
        if name in col and col[name] < len(row) and row[col[name]].strip():
            out[key] = row[col[name]].strip()
    return out


def _parse_raw(path: Path, rows: list[tuple[int, list[str]]]) -> NcuData:
    header = rows[0][1]
    body = rows[1:]
    units = [""] * len(header)
    kcol = header.index("Kernel Name")
    first = body[0][1] if body else []
    if len(first) == len(header) and first[0] == "" and first[kcol] == "":
        units, body = body[0][1], body[1:]
    nvtx_cols = _nvtx_columns(header)
    mcols = [i for i, h in enumerate(header) if is_metric_column(h) and i not in nvtx_cols]
    # A column is a metric when its units-row entry or its values are numbers; text columns
    # (attributes the filter above did not catch) are skipped, never an error.
    numeric = {i for i in mcols if any(is_number_text(r[i]) for _, r in body if i < len(r))}
    launches: list[Launch] = []
    kinds: set[str] = set()
    rebuilt: dict[str, None] = {}
    for n, row in body:
        if len(row) != len(header):
            raise CountersError(f"{path}: line {n}: {len(row)} fields, header has {len(header)}")
        vals: dict[str, float | None] = {}
        for i in mcols:
            if i not in numeric:
                continue
            where = f"{path}: line {n}, column {header[i]}"
            vals[header[i]] = parse_number(row[i], units[i] if i < len(units) else "", where)
        ranges: list[str] = []
        for i, kind in nvtx_cols.items():
            names = range_names(header[i], row[i])
            if names:
                kinds.add(kind)
                ranges.extend(names)
        time_s = vals.pop(KERNEL_TIME, None)
        rebuilt.update(dict.fromkeys(counts_from_rates(vals)))
        launches.append(Launch(row[kcol], vals, time_s=time_s,
                               ranges=tuple(ranges)))  # fmt: skip
    names = [header[i] for i in mcols if i in numeric] + list(rebuilt)
    device = _device(header, body[0][1]) if body else {}
    return ncu_data(launches, names, device, kinds, rebuilt)


def ncu_data(
    launches: list[Launch],
    names: list[str],
    device: dict[str, str],
    kinds: set[str],
    rebuilt: dict[str, None],
) -> NcuData:
    """The NcuData of launches read from either ncu format (CSV here, .ncu-rep in ncu_rep),
    with the notes both formats owe: counts rebuilt from rates, and launches with nothing."""
    notes = [n for n in (rebuilt_note(rebuilt), _empty_note(launches)) if n]
    return NcuData(launches, names, device, _kind(kinds), notes)


def _empty_note(launches: list[Launch]) -> str | None:
    """Launches ncu kept without a time or any count we use (its replay of them failed, or the
    capture was cut): their quantities are unknown, which makes the totals unknown too."""
    used = counted_names()
    empty = [
        x.name for x in launches if x.time_s is None and all(x.values.get(n) is None for n in used)
    ]
    if not empty:
        return None
    return (
        f"{len(empty)} of {len(launches)} launches have no measured value (ncu could not "
        f"profile them, e.g. {empty[0][:60]}): their figures and the totals are null"
    )


def _kind(kinds: set[str]) -> str | None:
    if not kinds:
        return None
    return "+".join(sorted(kinds))


def _parse_details(path: Path, rows: list[tuple[int, list[str]]]) -> NcuData:
    header = rows[0][1]
    col = {h: i for i, h in enumerate(header)}
    missing = [c for c in DETAILS_COLUMNS if c not in col]
    if missing:
        raise CountersError(
            f"{path}: column {missing[0]}: missing from the details-page header "
            f"(needs {', '.join(DETAILS_COLUMNS)})"
        )
    nvtx_cols = _nvtx_columns(header)
    by_id: dict[str, Launch] = {}
    metric_names: dict[str, None] = {}
    kinds: set[str] = set()
    for n, row in rows[1:]:
        if len(row) != len(header):
            raise CountersError(f"{path}: line {n}: {len(row)} fields, header has {len(header)}")
        name = row[col["Metric Name"]]
        launch = by_id.get(row[col["ID"]])
        if launch is None:
            ranges: list[str] = []
            for i, kind in nvtx_cols.items():
                got = range_names(header[i], row[i])
                if got:
                    kinds.add(kind)
                    ranges.extend(got)
            launch = Launch(row[col["Kernel Name"]], {}, ranges=tuple(ranges))
            by_id[row[col["ID"]]] = launch
        if not is_metric_column(name):
            continue
        text = row[col["Metric Value"]]
        if not is_number_text(text) and text.strip().lower() not in ("", "n/a", "nan"):
            continue  # a text-valued metric (attribute)
        value = parse_number(
            text, row[col["Metric Unit"]], f"{path}: line {n}, column Metric Value ({name})"
        )
        if name == KERNEL_TIME:
            launch.time_s = value
        else:
            launch.values[name] = value
            metric_names[name] = None
    if any(launch.time_s is not None for launch in by_id.values()):
        metric_names[KERNEL_TIME] = None
    rebuilt: dict[str, None] = {}
    for launch in by_id.values():
        rebuilt.update(dict.fromkeys(counts_from_rates(launch.values)))
    device = _device(header, rows[1][1]) if len(rows) > 1 else {}
    return ncu_data(list(by_id.values()), [*metric_names, *rebuilt], device, kinds, rebuilt)


def read_ncu_csv(path: str | Path) -> NcuData:
    """Parse ncu CSV output (raw or details page, with or without program output around it)."""
    p = Path(path)
    rows = _rows(p)
    if not rows:
        raise CountersError(
            f"{p}: column Kernel Name: no ncu CSV header found (expected the output of "
            "`ncu --csv --page raw ...`)"
        )
    header = rows[0][1]
    if "Metric Name" in header and "Metric Value" in header:
        data = _parse_details(p, rows)
    else:
        data = _parse_raw(p, rows)
    if not data.launches:
        raise CountersError(f"{p}: column Kernel Name: no kernel rows (nothing was profiled?)")
    return data
