"""Analyzer results to pandas DataFrames: the only conversion layer of the Python API.

Why a table of column specs instead of `pd.DataFrame(dataclasses.asdict(...))`: the analyzers
name fields for code (`time_share`, `placement.intensity`); the API names columns for people,
with the unit in the name (`share`, `intensity_flop_per_byte`). Each spec says which analyzer
field a column is, so the numbers are the analyzers' own, never recomputed here. A missing
value (None in the analyzers, null in `--json`) becomes NaN in numeric columns, also in a
column where every value is missing (pandas alone would keep it an object column of None, so
`df.col.mean()` and `isna()` on a run without that measurement would not behave as for one
with it); text columns (`TEXT_COLUMNS`) keep None.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

# (column name, getter on the analyzer object); a dotted string is an attribute path.
Spec = Sequence[tuple[str, str | Callable[[Any], Any]]]

# Columns of the API's tables that hold text: an all-missing one stays None, not NaN. Every
# other column holds numbers (or flags: bool), and a missing number is NaN (docs/api.md).
TEXT_COLUMNS = frozenset(
    {
        "bound", "bytes_provenance", "category", "config", "description", "device_type",
        "direction", "doubt",
        "energy_source", "entry_type", "epoch_times_from", "field", "flag", "group",
        "inference_cost_provenance", "inference_rule", "input_dims", "input_types",
        "instance_type", "key", "launch_call", "level", "lost_time_why", "math",
        "math_evidence", "meaning",
        "metric", "name",
        "notes", "olympic_mean_reason", "op", "path", "price_origin", "price_provenance",
        "price_source", "provenance", "roof", "run_id", "scope", "source", "statistic",
        "status", "switches", "task", "time_kind", "training_cost_provenance", "unit",
    }
)  # fmt: skip


def numeric(df: pd.DataFrame) -> pd.DataFrame:
    """Object columns outside TEXT_COLUMNS that hold only numbers and missing values (or only
    missing values) as float64, None written as NaN; anything else (text, bools) unchanged."""
    for col in df.columns:
        if col in TEXT_COLUMNS or df[col].dtype != object:
            continue
        present = [v for v in df[col] if v is not None and not (isinstance(v, float) and v != v)]
        if all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in present):
            df[col] = df[col].astype("float64")
    return df


def _getter(path: str | Callable[[Any], Any]) -> Callable[[Any], Any]:
    if callable(path):
        return path
    parts = path.split(".")

    def get(obj: Any) -> Any:
        for part in parts:
            if obj is None:  # an optional sub-object (a device without idle breakdown)
                return None
            obj = getattr(obj, part)  # a wrong field name fails loudly, never a NaN column
        return obj

    return get


def of_child(spec: Spec) -> Spec:
    """`spec` read from the second element of (parent, child) pairs: for tables whose rows are
    children (a device's categories) with a column from their parent (the device id)."""
    out = []
    for name, path in spec:
        get = _getter(path)
        out.append((name, lambda pair, get=get: get(pair[1])))
    return out


def frame(items: Iterable[Any], spec: Spec) -> pd.DataFrame:
    """One row per item, one column per spec entry, in spec order (also when empty)."""
    getters = [(name, _getter(path)) for name, path in spec]
    rows = [{name: get(item) for name, get in getters} for item in items]
    return numeric(pd.DataFrame(rows, columns=[name for name, _ in spec]).infer_objects())


def column_frame(obj: Any, spec: Spec, rows: int) -> pd.DataFrame:
    """A table stored by column (an analyzer's per-event arrays): each spec getter returns a
    whole column of `rows` values, so a million-row table is not built cell by cell."""
    columns = {name: _getter(path)(obj) for name, path in spec}
    return numeric(pd.DataFrame(columns, index=pd.RangeIndex(rows), columns=list(columns)))


def series(values: Mapping[str, Any], name: str) -> pd.Series:
    """One record as a Series of mixed types (object dtype), None written as NaN like the
    DataFrames' missing values."""
    clean = {k: float("nan") if v is None else v for k, v in values.items()}
    return pd.Series(clean, name=name, dtype=object)


def records_frame(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """Plain dict rows with exactly `columns`, in order (missing keys become NaN)."""
    return numeric(pd.DataFrame(list(rows), columns=list(columns)).infer_objects())


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level with dotted keys (`recipe_values.extra.width`)."""
    out: dict[str, Any] = {}
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, Mapping) and value:
                out.update(flatten(value, name))
            else:
                out[name] = value
    return out
