"""The study section of a report: the study table, the speed-up chart and the accuracy-vs-time
curves of every run, coloured per configuration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite.analyzers.runs.study import StudyResult
from perfsuite.figures import runs as figures
from perfsuite.figures.study import speedup_figure
from perfsuite.report import html as h
from perfsuite.study.render import align, headers, rows, target
from perfsuite.views.curves import run_curve


def _curves(result: StudyResult, records: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    curves = [
        run_curve(
            rec, f"{c.name} seed {(rec.get('config') or {}).get('seed')} ({rec.get('status')})"
        )
        for c in result.configs
        for rec in records.get(c.name, [])
    ]
    if not any(c["values"] for c in curves):
        return '<p class="note">No evaluations recorded.</p>'
    return h.figure(figures.curves_figure(curves, result.metric or "metric"), "fig-study-curves")


def study_section(result: StudyResult, records: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """HTML body of the study section."""
    intro = (
        f"<p>{h.esc(result.kind)} study of {h.esc(result.workload)} "
        f"(<code>{h.esc(result.study_id)}</code>): {h.esc(target(result))}; speed-ups "
        f"against {h.esc(result.reference)}.</p>"
    )
    table = h.table(headers(result), rows(result), [a == "r" for a in align(result)])
    described = h.notes([f"{c.name}: {c.description}" for c in result.configs])
    return (
        intro
        + table
        + described
        + h.notes(result.warnings)
        + h.figure(speedup_figure(result), "fig-study-speedups")
        + "<h3>Accuracy vs training time, every run</h3>"
        + _curves(result, records)
    )


def study_html(result: StudyResult, records: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    """A self-contained page with the study section only."""
    return h.page(
        f"perfsuite study: {result.study_id}",
        [("study", "Study", study_section(result, records))],
        "Time to accuracy counts training time only (DAWNBench rule). DNC: no run of the "
        "configuration reached the threshold.",
    )
