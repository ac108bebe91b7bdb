"""A history in a CSV file, in Apache Otava's layout: a time column, attribute columns (such
as `commit`), and one column per metric. Histories from other tools come in this way, and
`perfsuite history FILE.csv` analyses one without a store.

Columns: `time` (ISO 8601; the first column when none is named `time`), attributes (`commit`,
`branch`, `version`, and any column whose first value is text), metrics (perfsuite's metric
names, and every other column whose first value is a number).
An empty metric cell is a missing value (that point is left out of that metric's series).
Refused, each in one line naming the file, line and field: a row with a different number of
fields than the header, a metric value that is not a number or is NaN, infinite or negative,
a time that does not parse, and a time that repeats.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from perfsuite.history_store.series import METRICS, Point, Series, direction_of
from perfsuite.history_store.store import HistoryError
from perfsuite.history_store.times import normalized_time
from perfsuite.safeio import InputError, decode_utf8, read_bytes

MAX_CSV_BYTES = 256 * 1024 * 1024
ATTRIBUTE_NAMES = {"commit", "branch", "version", "build", "tag", "revision"}


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _columns(header: list[str], rows: list[list[str]]) -> tuple[int, list[int], list[int]]:
    """(time column, attribute columns, metric columns) of a header and its rows."""
    names = [h.strip() for h in header]
    time_at = names.index("time") if "time" in names else 0
    attributes, metrics = [], []
    for i, name in enumerate(names):
        if i == time_at:
            continue
        first = next((r[i].strip() for r in rows if r[i].strip()), "")
        numeric = name in METRICS or _number(first) is not None
        if name.lower() in ATTRIBUTE_NAMES or not numeric:
            attributes.append(i)
        else:
            metrics.append(i)
    return time_at, attributes, metrics


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    try:
        text = decode_utf8(read_bytes(path, MAX_CSV_BYTES, HistoryError), path, HistoryError)
    except InputError as exc:
        raise HistoryError(str(exc)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        lines = list(reader)
    except csv.Error as exc:
        raise HistoryError(f"{path}: line {reader.line_num}: field row: {exc}") from None
    numbered = [(n, row) for n, row in enumerate(lines, start=1) if any(c.strip() for c in row)]
    if not numbered:
        raise HistoryError(f"{path}: field header: the file is empty")
    (_, header), body = numbered[0], numbered[1:]
    for n, row in body:
        if len(row) != len(header):
            raise HistoryError(
                f"{path}: line {n}: field row: {len(row)} fields where the header has {len(header)}"
            )
    return [h.strip() for h in header], body


def _value(path: Path, n: int, name: str, text: str) -> float | None:
    if not text.strip():
        return None
    value = _number(text)
    if value is None:
        raise HistoryError(f"{path}: line {n}: field {name}: {text.strip()!r} is not a number")
    if not math.isfinite(value):
        raise HistoryError(f"{path}: line {n}: field {name}: {text.strip()} is not finite")
    if value < 0:
        raise HistoryError(f"{path}: line {n}: field {name}: {value:g} is negative")
    return value


def _time(path: Path, n: int, name: str, text: str, seen: dict[str, int]) -> str:
    try:
        time = normalized_time(text)
    except ValueError:
        raise HistoryError(
            f"{path}: line {n}: field {name}: {text.strip()!r} is not an ISO 8601 time"
        ) from None
    if time in seen:
        raise HistoryError(
            f"{path}: line {n}: field {name}: {text.strip()} repeats the time of line {seen[time]}"
        )
    seen[time] = n
    return time


def read_csv(path: str | Path) -> list[Series]:
    """One series per metric column of the file (named after the file), points in time order."""
    path = Path(path)
    header, body = _read_rows(path)
    time_at, attribute_cols, metric_cols = _columns(header, [row for _, row in body])
    if not metric_cols:
        raise HistoryError(f"{path}: field header: no metric column (numbers) besides the time")
    seen: dict[str, int] = {}
    points: dict[int, list[Point]] = {i: [] for i in metric_cols}
    for n, row in body:
        time = _time(path, n, header[time_at], row[time_at], seen)
        attrs = {header[i]: row[i].strip() for i in attribute_cols if row[i].strip()}
        for i in metric_cols:
            value = _value(path, n, header[i], row[i])
            if value is not None:
                points[i].append(Point(time, value, attrs, f"{path}:{n}"))
    return [
        Series(
            path.stem,
            header[i],
            direction_of(header[i]),
            tuple(sorted(points[i], key=lambda p: p.time)),
        )
        for i in metric_cols
    ]
