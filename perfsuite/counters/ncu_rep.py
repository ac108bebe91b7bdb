"""Read `.ncu-rep` reports through Nsight Compute's own Python module `ncu_report`.

`ncu_report` ships in `<Nsight Compute>/extras/python/` (also on PyPI as `ncu-report`); it is
not a dependency: `available()` says whether it imports, and callers fall back to the CSV
export (`ncu -i FILE --csv --page raw --print-units base`). API used (Nsight Compute "Python
Report Interface"): `load_report(path)` -> context; `num_ranges()`, `range_by_idx(i)`;
`num_actions()`, `action_by_idx(j)`; `action.name()`, `action.metric_names()`,
`action.metric_by_name(n)` -> metric with `as_double()`; `action.nvtx_state()` -> `domains()`,
`domain_by_id(d)` -> `push_pop_ranges()`, `start_end_ranges()`.

NOT CHECKED on a real report: no GPU or Nsight Compute install was available while writing it
(the shared H100 reports were too large to keep; only their CSV exports are here).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from perfsuite.counters.metrics import KERNEL_TIME
from perfsuite.counters.ncu_csv import NcuData, _metric_column
from perfsuite.counters.section import CountersError, Launch

_SUFFIX_DROP = (".avg", ".max", ".min")


def _module() -> Any | None:
    try:
        return importlib.import_module("ncu_report")
    except Exception:
        return None


def available() -> bool:
    """True when `ncu_report` imports (put `<ncu>/extras/python` on PYTHONPATH for it)."""
    return _module() is not None


def _nvtx(action: Any) -> tuple[list[str], set[str]]:
    names: list[str] = []
    kinds: set[str] = set()
    try:
        state = action.nvtx_state()
        for dom_id in state.domains():
            dom = state.domain_by_id(dom_id)
            pp = list(dom.push_pop_ranges())
            se = list(dom.start_end_ranges())
            if pp:
                kinds.add("push/pop")
            if se:
                kinds.add("start/end")
            names.extend(str(x) for x in se + pp)
    except Exception:
        return [], set()
    return names, kinds


def _value(metric: Any) -> float | None:
    if metric is None:
        return None
    try:
        return float(metric.as_double())
    except (TypeError, ValueError):
        return None


def read_ncu_rep(path: str | os.PathLike[str]) -> NcuData:
    """Parse a `.ncu-rep` file; CountersError (one line, naming the file) when that fails."""
    p = Path(path)
    mod = _module()
    if mod is None:
        raise CountersError(f"{p}: the ncu_report module is not importable")
    try:
        ctx = mod.load_report(str(p))
    except Exception as e:
        raise CountersError(f"{p}: ncu_report cannot load it: {e}") from None
    launches: list[Launch] = []
    names: dict[str, None] = {}
    kinds: set[str] = set()
    device: dict[str, str] = {}
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            values: dict[str, float | None] = {}
            for n in action.metric_names():
                n = str(n)
                if not _metric_column(n) or n.endswith(_SUFFIX_DROP):
                    continue
                v = _value(action.metric_by_name(n))
                if v is not None or n.endswith(".sum"):
                    values[n] = v
            if not device:
                for key, n in (
                    ("name", "device__attribute_display_name"),
                    ("chip", "device__attribute_chip"),
                ):
                    m = action.metric_by_name(n)
                    if m is not None:
                        device[key] = str(m.as_string())
                major = _value(action.metric_by_name("device__attribute_compute_capability_major"))
                minor = _value(action.metric_by_name("device__attribute_compute_capability_minor"))
                if major is not None and minor is not None:
                    device["cc"] = f"{int(major)}.{int(minor)}"
            ranges, k = _nvtx(action)
            kinds |= k
            names.update(dict.fromkeys(values))
            time_s = values.pop(KERNEL_TIME, None)
            launches.append(
                Launch(
                    str(action.name()),
                    values,
                    time_s=None if time_s is None else time_s * 1e-9,
                    ranges=tuple(ranges),
                )
            )
    if not launches:
        raise CountersError(f"{p}: no kernel results in the report (nothing was profiled?)")
    return NcuData(launches, list(names), device, "+".join(sorted(kinds)) or None)
