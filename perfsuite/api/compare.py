"""`perfsuite.compare(a, b, ...)`: runs and groups side by side, one column each.

Why rows are quantities and columns are runs: that is how two configurations are read (the
report's comparison summary does the same), and it keeps each row's unit in its name. The
values are each object's own `summary` (a run) or its `groups` row (a group): no arithmetic
here, so nothing in the table can disagree with the object it came from.
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from perfsuite.analyzers.runs.compare import compare as compare_items
from perfsuite.analyzers.runs.compare import items_from_records
from perfsuite.api.group import Group
from perfsuite.api.run import Run


def _columns(item: Any) -> list[pd.Series]:
    if isinstance(item, (str, os.PathLike)):
        from perfsuite.api.opening import open_path

        item = open_path(item)
    if isinstance(item, Run):
        return [item.summary]
    if isinstance(item, Group):
        groups = item.groups.set_index("group", drop=False)
        return [row.rename(label) for label, row in groups.iterrows()]
    raise TypeError(f"compare takes runs, groups or their paths, not {type(item).__name__}")


def compare(*items: Any, **named: Any) -> pd.DataFrame:
    """Side-by-side table: a row per quantity, a column per run (or per group of runs);
    NaN where a quantity does not apply to that column. Paths are opened with perfsuite.open.
    Items passed by keyword get the keyword as their column name (`compare(before=a, after=b)`).
    """
    if not items and not named:
        raise TypeError("compare needs at least one run or group")
    cols = [c for item in items for c in _columns(item)]
    for label, item in named.items():
        found = _columns(item)
        cols += [c.rename(label if len(found) == 1 else f"{label}: {c.name}") for c in found]
    seen: dict[str, int] = {}
    for i, c in enumerate(cols):  # the same run twice gets a suffix, never a merged column
        n = seen.get(str(c.name), 0)
        seen[str(c.name)] = n + 1
        if n:
            cols[i] = c.rename(f"{c.name} ({n + 1})")
    return pd.concat(cols, axis=1)


def _items(item: Any, label: str | None) -> list[tuple[str, list[dict[str, Any]]]]:
    if isinstance(item, (str, os.PathLike)):
        from perfsuite.api.opening import open_path

        item = open_path(item)
    if isinstance(item, Run):
        return [(label or item.run_id, [item.record])]
    if isinstance(item, Group):
        found = items_from_records(item.records, label or "group")
        if label and len(found) > 1:
            return [(f"{label}: {name}", recs) for name, recs in found]
        return found
    raise TypeError(f"verdict takes runs, groups or their paths, not {type(item).__name__}")


def verdict(*items: Any, **options: Any) -> Any:
    """What `perfsuite compare ITEMS --json` computes
    (`perfsuite.analyzers.runs.compare.Comparison`): the
    first item is the baseline; a group is split by group.id like the command splits a folder.
    Options: `alpha`, `min_effect`, `resamples`, `seed`, `flop_tolerance`, `top`, and
    `labels` (one name per item). `.verdicts` holds the statistical verdicts of two groups.
    """
    labels = list(options.pop("labels", None) or [None] * len(items))
    if len(labels) != len(items):
        raise ValueError(f"labels: {len(labels)} names for {len(items)} items")
    found = [pair for item, name in zip(items, labels, strict=True) for pair in _items(item, name)]
    return compare_items(found, **options)
