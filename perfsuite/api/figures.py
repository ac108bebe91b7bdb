"""Plotly figures for notebooks, reachable as `run.figures.roofline()` and the like.

Why no drawing code here: the figures are `perfsuite.figures.runs`, the ones the HTML report
embeds, fed with the analysis the Run or Group already holds. plotly is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perfsuite.record.sidecars import read_telemetry, telemetry_path
from perfsuite.views.curves import curve_data

if TYPE_CHECKING:
    from perfsuite.api.group import Group
    from perfsuite.api.run import Run


def _curves(records: list[dict[str, Any]]) -> Any:
    from perfsuite.figures.runs import curves_figure

    curves = curve_data(records)
    metric = next((c["metric"] for c in curves if c["metric"]), None)
    return curves_figure(curves, metric or "metric")


class RunFigures:
    """Figures of one run."""

    def __init__(self, run: Run):
        self._run = run

    def roofline(self, title: str = "Roofline") -> Any:
        """Log-log roofline: the roofs, the ridge, each op (size = time share), the run."""
        from perfsuite.figures.runs import roofline_figure

        run = self._run
        return roofline_figure(run._need_roofline(), run._utilization, title)

    def curves(self) -> Any:
        """Metric against cumulative training time, with the threshold."""
        return _curves([self._run.record])

    def ops(self, top: int = 20) -> Any:
        """Per-op time per step, coloured by fraction of roof (the `top` longest ops)."""
        from perfsuite.figures.runs import ops_bar_figure

        return ops_bar_figure(self._run._need_roofline(), top)

    def telemetry(self) -> Any:
        """The telemetry time series (CPU, memory, GPU when sampled)."""
        from perfsuite.figures.runs import telemetry_figure

        path = telemetry_path(self._run.record)
        return telemetry_figure(read_telemetry(path) if path else {})


class GroupFigures:
    """Figures of a group of runs."""

    def __init__(self, group: Group):
        self._group = group

    def curves(self) -> Any:
        """Every run's metric against training time, one line per run."""
        return _curves(self._group.records)
