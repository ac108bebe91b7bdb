"""The report's roofline and per-op sections: the roofline view of each run
(perfsuite.views.roofline_view) drawn as HTML, with the roofline chart and the per-op bars.

The view is the one `perfsuite roofline` prints, explained (every note in full, the hierarchy's
points): the same headings, lines and notes, here as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite.analyzers.roofline.measured import counted_vs_measured
from perfsuite.analyzers.roofline.roofline import Roofline
from perfsuite.analyzers.roofline.utilization import Utilization
from perfsuite.figures import runs as figures
from perfsuite.flops.mfu import mfu
from perfsuite.report import html as h
from perfsuite.report.timeline_section import kernel_cell
from perfsuite.views.roofline_view import RooflineView, Table, roofline_view


def table_html(table: Table | None, first_cells: Sequence[Any] = ()) -> str:
    """A view's table: its heading, the table (right-aligned columns numeric), the lines
    under it. `first_cells` replace the first column's cells (a kernel name with its full
    name on hover)."""
    if table is None:
        return ""
    rows = [[first_cells[i], *row[1:]] if i < len(first_cells) else row
            for i, row in enumerate(table.rows)]  # fmt: skip
    numeric = [a == "r" for a in table.align]
    return (
        f"<h4>{h.esc(table.heading)}</h4>"
        + h.table(table.headers, rows, numeric)
        + h.notes(table.notes)
    )


def _lines(lines: Sequence[str], bold: bool = False) -> str:
    tag = ("<b>", "</b>") if bold else ("", "")
    return "".join(f"<p>{tag[0]}{h.esc(line)}{tag[1]}</p>" for line in lines)


def run_view(rec: Mapping[str, Any], res: Roofline, util: Utilization, top: int) -> RooflineView:
    """The roofline view of one record, as `perfsuite roofline` builds it."""
    return roofline_view(res, util, top, counted_vs_measured(rec), mfu(rec))


def roofline_body(view: RooflineView, res: Roofline, util: Utilization, fig_id: str) -> str:
    """One run's roofline section: the warnings and the answer, the chart, the math, the
    whole-run and roof tables, utilization, model FLOPs, counted vs measured, the hierarchy
    and every note in full."""
    points = res.hierarchical.points
    names = [kernel_cell(p.name) for p in points[: len(view.levels.rows)]] if view.levels else []
    parts = [
        _lines([*view.warnings, *view.answer], bold=True),
        h.figure(figures.roofline_figure(res, util, "Roofline"), fig_id),
        _lines([view.math]),
        table_html(view.run),
        table_html(view.roofs),
        _lines(view.utilization),
        table_html(view.mfu),
        *[table_html(t) for t in view.measured],
        _lines(view.measured_lines),
        _lines(view.hierarchy),
        table_html(view.levels, names),
    ]
    if view.notes:
        parts.append(f"<h4>{h.esc(view.notes_heading(True))}</h4>")
        parts.append(h.notes(view.notes_shown(True)))
    return "".join(parts)


def ops_body(view: RooflineView, res: Roofline, top: int, fig_id: str) -> str:
    """One run's per-op section: the bars, the per-op table, where the measured step goes and
    where to look first; a note without a per-op timeline."""
    if view.ops is None:
        return '<p class="note">No per-op timeline in this record.</p>'
    return (
        h.figure(figures.ops_bar_figure(res, top), fig_id)
        + table_html(view.ops)
        + table_html(view.time)
        + table_html(view.ranking)
    )


def roofline_sections(
    records: Sequence[Mapping[str, Any]], analyses: list, top: int
) -> tuple[str, str]:
    """(roofline section, per-op section) of the runs: each run under its id, or why it has no
    roofline. `analyses`: (roofline or None, utilization, error) per record."""
    roofs, ops = [], []
    for i, (rec, (res, util, err)) in enumerate(zip(records, analyses, strict=True)):
        head = f"<h3>{h.esc(rec.get('run_id'))}</h3>"
        if res is None:
            roofs.append(f'{head}<p class="note">No roofline: {h.esc(err)}</p>')
            ops.append(f'{head}<p class="note">No per-op timeline in this record.</p>')
            continue
        view = run_view(rec, res, util, top)
        roofs.append(head + roofline_body(view, res, util, f"fig-roof-{i}"))
        ops.append(head + ops_body(view, res, top, f"fig-ops-{i}"))
    return "".join(roofs), "".join(ops)
