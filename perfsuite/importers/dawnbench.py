"""DAWNBench v1 entries -> run records.

An entry is a JSON file (`version`, `author`, `framework`, `model`, `hardware`, `timestamp`,
optional `costPerHour`, `misc`, ...) and, for training entries, a TSV with the same stem:
`epoch hours <accuracy columns>` (hours cumulative; top-1/top-5 in percent, F1 a fraction).
Inference entries carry `latency` (ms per item), `cost` (USD per item) and their accuracy.
Task and entry type come from the `<Task>/<train|inference>/` folders, as in the public
dawn-bench-entries repository, and from the fields where those say nothing or are
contradicted (`dawnbench_detect`).

Time to accuracy is DAWNBench's: the hours of the first TSV row, in file order, at or above
the threshold, computed by `perfsuite.record.tta.first_crossing` on the converted curve.
"""

from __future__ import annotations

import gzip
import io
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from perfsuite.importers.common import (
    MAX_RESULT_BYTES,
    Imported,
    ImportFailure,
    bounded,
    decode_text,
    find_files,
    had_bom_or_crlf,
    parse_date,
    read_text,
    slug,
)
from perfsuite.importers.dawnbench_detect import Task, detect_task, entry_kind, hardware
from perfsuite.pricing import training_cost_usd
from perfsuite.record import new_record, quantity
from perfsuite.record.consistency import MAX_SECONDS, MAX_USD_PER_HOUR
from perfsuite.record.maths import assumed_math
from perfsuite.record.migrate import IMPORTED_INFERENCE_RULE
from perfsuite.record.tta import crossing_dict, first_crossing
from perfsuite.safeio import (
    HEAD_BYTES,
    MAX_JSON_DEPTH,
    binary_detail,
    first_line,
    json_depth_exceeds,
    read_bytes,
)

__all__ = ["DawnBenchImporter", "discover", "load_entry", "read_tsv"]

REQUIRED_FIELDS = ("version", "author", "framework", "model", "hardware", "timestamp")


def discover(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Entry JSON files (or gzipped, as `load_entry` reads them) under `paths` (files, or
    folders searched recursively), sorted."""
    return find_files(paths, ("*.json", "*.json.gz"))


def _shown(value: Any) -> str:
    """A value as an error line shows it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _number(value: Any, where: str, limit: float | None = None) -> float:
    """A finite number (a JSON number or numeric text; `true` is no number), at most `limit`."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ImportFailure(f"{where}: {_shown(value)} is not a number")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ImportFailure(f"{where}: {_shown(value)} is not a number") from None
    except OverflowError:  # an integer of hundreds of digits
        raise ImportFailure(f"{where}: {_shown(value)} is not a finite number") from None
    if not math.isfinite(out):
        raise ImportFailure(f"{where}: {_shown(value)} is not a finite number")
    if limit is not None and abs(out) > limit:
        raise ImportFailure(f"{where}: {out:g} is beyond reason (more than {limit:g})")
    return out


def read_tsv(path: Path, task: Task) -> tuple[list[dict[str, float]], list[str]]:
    """Rows of a training TSV as {column: value}, read by header name; plus flags."""
    flags = had_bom_or_crlf(path)
    lines = read_text(path).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    blank_inside = [i + 1 for i, ln in enumerate(lines) if not ln.strip()]
    if blank_inside:
        flags.append(f"{path.name}: blank line(s) {blank_inside} skipped")
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        raise ImportFailure(f"{path}: field header: file is empty")
    header = [h.strip() for h in lines[0].split("\t")]
    need = ["epoch", "hours", *task.columns]
    missing = [c for c in need if c not in header]
    if missing:
        raise ImportFailure(
            f"{path}: field {missing[0]}: column missing (header: {' '.join(header)})"
        )
    if header[: len(need)] != need:
        flags.append(f"{path.name}: columns in unusual order ({' '.join(header)}); read by name")
    for c in need:
        places = [i + 1 for i, h in enumerate(header) if h == c]
        if len(places) > 1:
            flags.append(
                f"{path.name}: field {c}: column given {len(places)} times (columns "
                f"{', '.join(map(str, places))}); the first is read"
            )
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) < len(header):
            raise ImportFailure(f"{path}: line {lineno}: field {header[len(cells)]}: missing value")
        rows.append(
            {c: _number(cells[header.index(c)], f"{path}: line {lineno}: field {c}") for c in need}
        )
    if not rows:
        raise ImportFailure(f"{path}: field rows: header only, no evaluations")
    return rows, flags


def _scale_accuracy(
    values: list[float], field: str, percent: bool, where: str
) -> tuple[float, str | None]:
    """The divisor turning `values` into fractions, and a flag when the unit looks wrong."""
    top = max(values)
    if percent and top <= 1.0:
        return 1.0, (
            f"{where}: {field} is a percent column but every value is <= 1.0 "
            f"(max {top:g}); read as fractions"
        )
    if not percent and top > 1.0:
        return 100.0, (
            f"{where}: {field} should be a 0-1 fraction but values exceed 1 (max {top:g}); "
            "read as percent"
        )
    return (100.0 if percent else 1.0), None


def _curve(rows: list[dict[str, float]], task: Task, tsv: Path) -> tuple[list[dict], list[str]]:
    """Evaluations (metrics as fractions, train_time_s = hours * 3600) and flags."""
    flags: list[str] = []
    divisors = {}
    for col in task.columns:
        divisors[col], note = _scale_accuracy(
            [r[col] for r in rows], col, col in task.percent, tsv.name
        )
        if note:
            flags.append(note)
    evaluations = []
    seen: set[float] = set()
    prev_hours = -math.inf
    for i, r in enumerate(rows):
        if r["epoch"] in seen:
            flags.append(f"{tsv.name}: epoch {r['epoch']:g} repeated (row {i + 1}); kept in order")
        seen.add(r["epoch"])
        if r["hours"] < prev_hours:
            flags.append(f"{tsv.name}: hours decrease at row {i + 1} ({r['hours']:g})")
        prev_hours = max(prev_hours, r["hours"])
        if r["epoch"] < 0 or r["hours"] < 0:
            raise ImportFailure(f"{tsv}: row {i + 1}: field epoch/hours: negative value")
        if r["hours"] * 3600.0 > MAX_SECONDS or r["epoch"] > MAX_SECONDS:
            raise ImportFailure(
                f"{tsv}: row {i + 1}: field epoch/hours: {r['epoch']:g} epochs, "
                f"{r['hours']:g} h is beyond reason"
            )
        # rounding removes float noise of the unit conversion (93.9 / 100 -> 0.939)
        metrics = {m: round(r[col] / divisors[col], 12) for col, m in task.columns.items()}
        for m, v in metrics.items():
            if not 0.0 <= v <= 1.0:
                raise ImportFailure(f"{tsv}: row {i + 1}: field {m}: {v:g} is outside [0, 1]")
        train_time_s = round(r["hours"] * 3600.0, 6)
        evaluations.append({"epoch": r["epoch"], "train_time_s": train_time_s, "metrics": metrics})
    if any(not float(r["epoch"]).is_integer() for r in rows):
        flags.append(f"{tsv.name}: fractional epochs")
    return evaluations, flags


def _misc(value: Any, name: str, flags: list[str]) -> Any:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        flags.append(f"{name}: misc is a string, not an object; kept as text")
        return value
    flags.append(f"{name}: misc is a {type(value).__name__}; kept as is")
    return value


def _entry_bytes(path: Path) -> bytes:
    """The entry file's bytes, gunzipped when it is gzip (as traces are read everywhere)."""
    raw = read_bytes(path, MAX_RESULT_BYTES, ImportFailure)
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            raw = fh.read(MAX_RESULT_BYTES + 1)
    except (OSError, EOFError) as exc:  # BadGzipFile is an OSError
        raise ImportFailure(f"{path}: not a readable gzip file ({first_line(exc)})") from None
    if len(raw) > MAX_RESULT_BYTES:
        raise ImportFailure(f"{path}: larger than {MAX_RESULT_BYTES:,} bytes uncompressed")
    return raw


def _entry_text(path: Path, raw: bytes) -> tuple[str, list[str]]:
    """Text of an entry and notes on what was tolerated (BOM, CRLF, Latin-1).

    Binary data is refused here (the rule every reader uses, `safeio.binary_detail`): read as
    Latin-1 it would reach the JSON checks as noise.
    """
    if not raw.strip():
        raise ImportFailure(f"{path}: empty file")
    binary = binary_detail(raw[:HEAD_BYTES])
    if binary:
        raise ImportFailure(f"{path}: not a DAWNBench entry ({binary}, not JSON text)")
    return decode_text(path, raw)


def _parse_entry(path: Path, text: str) -> dict[str, Any]:
    """The entry object; anything that is not a JSON object is a one-line error."""
    # Nesting can only exhaust the parser's stack in a text that opens with a bracket; any
    # other start is refused by json.loads at its first value without recursing.
    opens = text.lstrip()[:1] in ("{", "[")
    if opens and json_depth_exceeds(text.encode("utf-8", "replace"), MAX_JSON_DEPTH):
        raise ImportFailure(f"{path}: JSON nested deeper than the {MAX_JSON_DEPTH}-level limit")
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFailure(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno})"
        ) from None
    except (ValueError, RecursionError) as exc:  # a number too long to convert
        raise ImportFailure(f"{path}: not usable JSON ({first_line(exc)})") from None
    if not isinstance(entry, dict):
        raise ImportFailure(f"{path}: field (top level): expected a JSON object")
    if not any(f in entry for f in REQUIRED_FIELDS):
        fields = ", ".join(REQUIRED_FIELDS)
        hint = "; it looks like a Chrome/Kineto trace" if "traceEvents" in entry else ""
        raise ImportFailure(f"{path}: not a DAWNBench entry (none of the fields {fields}{hint})")
    return entry


def _read_entry(path: Path) -> tuple[dict[str, Any], list[str], bool, str | None, Path, Path]:
    """(entry JSON, flags, inference?, the entry kind's note, base path, TSV path) of a file."""
    text, flags = _entry_text(path, _entry_bytes(path))
    entry = _parse_entry(path, text)
    base = path.with_name(path.name.removesuffix(".gz"))  # x.json.gz pairs with x.tsv
    missing = [f for f in REQUIRED_FIELDS if f not in entry]
    if "model" in missing or "hardware" in missing:
        raise ImportFailure(f"{path}: field {missing[0]}: required field missing")
    flags += [f"{path.name}: field {f} missing" for f in missing]
    tsv = base.with_suffix(".tsv")
    inference, note = entry_kind(path, entry, tsv)
    return entry, flags, inference, note, base, tsv


def _new_entry_record(
    path: Path, entry: dict[str, Any], task: Task, run_id: str, tsv: Path | None
) -> dict[str, Any]:
    """The record's task, source, model, framework and hardware of an entry (`tsv`: its
    training curve, None for an inference entry)."""
    record = new_record(
        run_id=run_id,
        task={
            "name": task.name,
            "workload": None,
            "metric": task.metric,
            "threshold": task.threshold,
            "dataset": task.dataset,
        },
        source_kind="dawnbench",
    )
    record["source"]["files"] = [str(path)] + ([str(tsv)] if tsv else [])
    record["source"]["entry_type"] = "training" if tsv else "inference"
    record["model"] = _text(entry, "model", path)
    record["framework"] = _text(entry, "framework", path)
    record["hardware"] = hardware(_text(entry, "hardware", path))
    record["math"] = assumed_math(record)  # the result does not say: PyTorch's defaults
    return record


def _entry_extra(entry: dict[str, Any], path: Path, flags: list[str]) -> tuple[dict, str | None]:
    """`extra.dawnbench` (the entry's own fields, date, misc) and the entry's date."""
    date, note = parse_date(entry.get("timestamp"))
    if note:
        flags.append(f"{path.name}: {note}")
    extra = {
        k: entry.get(k)
        for k in ("version", "author", "authorEmail", "codeURL", "commitHash")
        if k in entry
    }
    extra["date"] = date
    extra["misc"] = _misc(entry.get("misc"), path.name, flags)
    return {"dawnbench": extra}, date


def _fill_training(
    record: dict[str, Any],
    rows: list[dict[str, float]],
    task: Task,
    tsv: Path,
    flags: list[str],
    summary: dict[str, Any],
) -> None:
    """A training entry's curve, time to accuracy and status, and its summary's figures."""
    evaluations, curve_flags = _curve(rows, task, tsv)
    flags += curve_flags
    record["evaluations"] = evaluations
    crossing = first_crossing(evaluations, task.metric, task.threshold)
    record["time_to_accuracy"] = crossing_dict(crossing, provenance="imported")
    record["status"] = "reached" if crossing.reached else "not_reached"
    if crossing.reached:
        later = [e["metrics"][task.metric] for e in evaluations[crossing.evaluation_index :]]
        if min(later) < task.threshold:
            flags.append(
                f"{tsv.name}: {task.metric} falls back below {task.threshold:g} after first "
                f"reaching it (final {evaluations[-1]['metrics'][task.metric]:.4g}); "
                "time to accuracy uses the first crossing"
            )
    usd_h = record["cost"]["usd_per_hour"]["value"] if record["cost"] else None
    summary.update(
        {
            "status": record["status"],
            "metric": task.metric,
            "threshold": task.threshold,
            "time_to_accuracy_s": crossing.time_s,
            "epoch": crossing.epoch,
            "final": evaluations[-1]["metrics"][task.metric],
            "cost_usd": training_cost_usd(crossing.time_s, usd_h)
            if (usd_h is not None and crossing.time_s is not None)
            else None,
        }
    )


def load_entry(path: str | Path) -> Imported:
    """One DAWNBench entry (JSON, or gzipped JSON, + TSV for training) as a run record."""
    path = Path(path)
    entry, flags, inference, note, base, tsv = _read_entry(path)
    rows: list[dict[str, float]] = []
    header = None
    if not inference:
        if not tsv.exists():
            raise ImportFailure(f"{path}: field tsv: training entry without {tsv.name}")
        first = read_text(tsv).split("\n", 1)[0]
        header = [h.strip() for h in first.split("\t")]
    task, task_note = detect_task(path, entry, header)
    flags += [n for n in (note, task_note) if n]
    if not inference:
        rows, tsv_flags = read_tsv(tsv, task)
        flags += tsv_flags
    kind = "inference" if inference else "train"
    run_id = bounded(f"dawnbench-{slug(task.name)}-{kind}-{slug(base.stem)}")
    record = _new_entry_record(path, entry, task, run_id, None if inference else tsv)
    record["extra"], date = _entry_extra(entry, path, flags)
    if date:
        record["created_at"] = date
    record["cost"] = _cost(entry, path, inference, flags)
    summary: dict[str, Any] = {
        "run_id": run_id,
        "task": task.name,
        "entry_type": record["source"]["entry_type"],
        "file": str(path),
    }
    if inference:
        _fill_inference(record, entry, task, path, flags, summary)
    else:
        _fill_training(record, rows, task, tsv, flags, summary)
    record["flags"] = flags
    summary["flags"] = flags
    return Imported(record, summary)


def _text(entry: dict[str, Any], field: str, path: Path) -> str | None:
    """A text field (model, framework): a string or null; an object or number is refused
    rather than stored as its repr."""
    value = entry.get(field)
    if value is None or isinstance(value, str):
        return value
    raise ImportFailure(f"{path}: field {field}: {_shown(value)} is not a string")


def _cost(entry: dict[str, Any], path: Path, inference: bool, flags: list[str]) -> Any:
    if "costPerHour" not in entry:
        if not inference:
            flags.append(f"{path.name}: costPerHour missing; no training cost")
        return None
    raw = entry["costPerHour"]
    if raw is None:
        flags.append(f"{path.name}: costPerHour is null; no training cost")
        return None
    value = _number(raw, f"{path}: field costPerHour", MAX_USD_PER_HOUR)
    if value < 0:
        raise ImportFailure(f"{path}: field costPerHour: negative ({value:g})")
    return {"usd_per_hour": quantity(value, "USD/h", "imported", f"DAWNBench entry {path.name}")}


def _fill_inference(
    record: dict[str, Any],
    entry: dict[str, Any],
    task: Task,
    path: Path,
    flags: list[str],
    summary: dict[str, Any],
) -> None:
    """Latency (ms -> s), cost per item and the reported accuracy of an inference entry.

    DAWNBench asks for one of latency and cost: a missing one is flagged. A missing latency
    stays a quantity with value None (and `not_measured` says why), so that the entry is
    ranked on the inference-cost board and shown as n/a on the latency board.
    """
    latency_ms = _per_item(entry, "latency", path, MAX_SECONDS * 1e3)
    cost = _per_item(entry, "cost", path, MAX_USD_PER_HOUR)
    if latency_ms is None and cost is None:
        raise ImportFailure(
            f"{path}: field latency/cost: an inference entry needs latency (ms) or cost (USD "
            "per item); both are missing or null"
        )
    src = f"DAWNBench entry {path.name}"
    latency_s = None if latency_ms is None else latency_ms / 1000.0
    inf: dict[str, Any] = {
        "latency": quantity(latency_s, "s", "imported", src),
        "metrics": {},
        "rule": IMPORTED_INFERENCE_RULE,  # DAWNBench's own rule, not one perfsuite measured by
    }
    if latency_ms is None:
        inf["not_measured"] = "the DAWNBench entry reports cost per item, no latency"
        flags.append(f"{path.name}: latency {_absent(entry, 'latency')}; cost per item only")
    if cost is not None:
        inf["cost_per_item"] = quantity(cost, "USD", "imported", src)
    else:
        flags.append(f"{path.name}: cost {_absent(entry, 'cost')}; no cost per item")
    for col, metric in task.columns.items():
        if entry.get(col) is None:
            continue
        value = _number(entry[col], f"{path}: field {col}")
        div, note = _scale_accuracy([value], col, col in task.percent, path.name)
        if note:
            flags.append(note)
        if not 0.0 <= value / div <= 1.0:
            raise ImportFailure(f"{path}: field {col}: {value:g} is outside [0, 1] (or 0-100%)")
        inf["metrics"][metric] = round(value / div, 12)
    if task.metric not in inf["metrics"]:
        flags.append(f"{path.name}: no {task.metric} accuracy reported")
    record["inference"] = inf
    acc = inf["metrics"].get(task.metric)
    record["status"] = "reached" if acc is not None and acc >= task.threshold else "not_reached"
    summary.update(
        {
            "status": record["status"],
            "metric": task.metric,
            "threshold": task.threshold,
            "accuracy": acc,
            "latency_s": latency_s,
            "cost_per_item_usd": (inf.get("cost_per_item") or {}).get("value"),
        }
    )


def _absent(entry: dict[str, Any], field: str) -> str:
    return "null" if field in entry else "missing"


def _per_item(entry: dict[str, Any], field: str, path: Path, limit: float) -> float | None:
    """A per-item figure (`latency` ms, `cost` USD): None when missing or null."""
    if entry.get(field) is None:
        return None
    value = _number(entry[field], f"{path}: field {field}", limit)
    if value < 0:
        raise ImportFailure(f"{path}: field {field}: negative ({value:g})")
    return value


class DawnBenchImporter:
    """DAWNBench v1 entries behind the common pipeline (`perfsuite.importers.base`)."""

    kind = "DAWNBench entry (*.json)"

    def discover(self, paths: Iterable[str | Path]) -> Iterator[Path]:
        return discover(paths)

    def load(self, path: Path) -> Imported:
        return load_entry(path)

    def finalize(self, items: list[Imported]) -> dict[str, Any]:
        return {}
