"""Generalization results of the threshold model, summarized per record for tables.

Pure: a record's `generalization` section (written by `perfsuite.generalization`, its intervals
by `perfsuite.stats.mean_ci` and `difference_ci`) in, one row out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def headline(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """One line per record for tables (report, leaderboard): own test top-1 of the threshold
    model, the first shifted set's top-1 and drop, mean corruption accuracy, first probe's
    top-1 (and its difference to a reference); None without a generalization section."""
    gen = rec.get("generalization") or {}
    if not gen:
        return None
    out: dict[str, Any] = {
        "own_top1": None,
        "shift_top1": None,
        "shift_drop": None,
        "corruption_mean": None,
        "clean_top1": None,
        "probe_top1": None,
        "probe_difference": None,
    }
    shifts = gen.get("shift") or []
    if shifts:
        s = shifts[0]
        out["own_top1"] = s["own_test"]["top1"]
        out["shift_top1"] = s["shifted"]["top1"]
        out["shift_drop"] = s["drop"]["top1"]
    corr = gen.get("corruptions")
    if corr:
        out["corruption_mean"] = corr["mean"]
        out["clean_top1"] = corr["clean"]["top1"]
    probes = gen.get("probe") or []
    if probes:
        out["probe_top1"] = probes[0]["test"]["top1"]
        ref = probes[0].get("reference")
        out["probe_difference"] = ref["difference"] if ref else None
    if out["own_top1"] is None:
        ck = rec.get("checkpoint") or {}
        out["own_top1"] = ck.get("value")
    return out
