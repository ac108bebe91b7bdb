"""Evaluation curves as data: each run's task metric against cumulative training time, the
input of the curve figures (`perfsuite.figures`) that the report embeds and the API returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def run_curve(rec: Mapping[str, Any], label: Any) -> dict[str, Any]:
    """One run's task metric against cumulative training time, as `curves_figure` takes it."""
    task = rec.get("task") or {}
    m = task.get("metric")
    pts = [
        (ev["train_time_s"], (ev.get("metrics") or {}).get(m))
        for ev in rec.get("evaluations") or []
    ]
    pts = [p for p in pts if p[1] is not None]
    return {
        "label": label,
        "metric": m,
        "time_s": [p[0] for p in pts],
        "values": [p[1] for p in pts],
        "threshold": task.get("threshold"),
    }


def curve_data(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each run's evaluation curve, labeled by run id (the report and run.figures.curves())."""
    return [run_curve(rec, rec.get("run_id")) for rec in records]
