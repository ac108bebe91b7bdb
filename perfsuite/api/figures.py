"""Plotly figures for notebooks, reachable as `run.figures.roofline()` and the like.

Why no drawing code here: the figures are `perfsuite.figures.runs`, the ones the HTML report
embeds, fed with the analysis the Run or Group already holds (handed over as the record and
the Run's own lazy analyses, so this module needs neither class). plotly is imported on first
use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfsuite.analyzers.roofline.roofline import Roofline
from perfsuite.analyzers.roofline.utilization import Utilization
from perfsuite.record.sidecars import read_telemetry, telemetry_path
from perfsuite.views.curves import curve_data


def _curves(records: list[dict[str, Any]]) -> Any:
    from perfsuite.figures.runs import curves_figure

    curves = curve_data(records)
    metric = next((c["metric"] for c in curves if c["metric"]), None)
    return curves_figure(curves, metric or "metric")


class RunFigures:
    """Figures of one run: its record, and its roofline and utilization, computed on first use
    by the Run (`need_roofline` raises where the record has none)."""

    def __init__(
        self,
        record: dict[str, Any],
        need_roofline: Callable[[], Roofline],
        utilization: Callable[[], Utilization],
    ):
        self._record = record
        self._need_roofline = need_roofline
        self._utilization = utilization

    def roofline(self, title: str = "Roofline") -> Any:
        """Log-log roofline: the roofs, the ridge, each op (size = time share), the run."""
        from perfsuite.figures.runs import roofline_figure

        return roofline_figure(self._need_roofline(), self._utilization(), title)

    def curves(self) -> Any:
        """Metric against cumulative training time, with the threshold."""
        return _curves([self._record])

    def ops(self, top: int = 20) -> Any:
        """Per-op time per step, coloured by fraction of roof (the `top` longest ops)."""
        from perfsuite.figures.runs import ops_bar_figure

        return ops_bar_figure(self._need_roofline(), top)

    def telemetry(self) -> Any:
        """The telemetry time series (CPU, memory, GPU when sampled)."""
        from perfsuite.figures.runs import telemetry_figure

        path = telemetry_path(self._record)
        return telemetry_figure(read_telemetry(path) if path else {})


class GroupFigures:
    """Figures of a group of runs (their records)."""

    def __init__(self, records: list[dict[str, Any]]):
        self._records = records

    def curves(self) -> Any:
        """Every run's metric against training time, one line per run."""
        return _curves(self._records)
