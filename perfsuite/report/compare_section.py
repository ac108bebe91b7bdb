"""The multi-run report page: the comparison first, per-run details folded away.

Why: N stacked copies of the single-run page hide what a comparison needs. The page
opens with it: every run's curve on one chart, the verdict when groups of
repeats are given, the side-by-side table with ratios to the baseline, FLOP agreement and the
roofline positions; the per-run sections follow, each folded in a <details> element. Single-run
pages do not use this module. Numbers come from `perfsuite.analyzers.runs.compare`; the rows are the
CLI's (`perfsuite.views.compare_rows`), so the page and `perfsuite compare` cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite.analyzers.results.record_view import crossing
from perfsuite.analyzers.runs.compare import Comparison, compare, items_from_records
from perfsuite.figures.compare import overlay_figure, positions_figure
from perfsuite.report import html as h
from perfsuite.views import compare_rows as rows
from perfsuite.views.curves import run_curve

# Plotly cannot size a plot drawn while folded; redraw plots when their <details> opens.
_RESIZE = (
    "<script>document.addEventListener('DOMContentLoaded',function(){"
    "document.querySelectorAll('details.fold').forEach(function(d){"
    "d.addEventListener('toggle',function(){d.querySelectorAll('.plot').forEach("
    "function(p){if(p.data){Plotly.Plots.resize(p);}});});});});</script>"
)


def _curves(items: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[dict[str, Any]]:
    """Every run's curve with its item, and the point where it reached the target."""
    out = []
    for label, recs in items:
        for rec in recs:
            c = run_curve(rec, f"{rec.get('run_id')} ({rec.get('status')})")
            x = crossing(rec)
            value = None
            if x.reached and x.evaluation_index is not None:
                ev = (rec.get("evaluations") or [])[x.evaluation_index : x.evaluation_index + 1]
                value = (ev[0].get("metrics") or {}).get(x.metric) if ev else None
            c.update(item=label, tta_s=x.time_s if value is not None else None, tta_value=value)
            out.append(c)
    return out


def _verdicts(c: Comparison) -> str:
    if not c.verdicts:
        return h.notes(
            [
                "No statistical verdict: it needs groups of repeated runs (2 or more each, "
                "e.g. perfsuite run --repeats 5) on both sides."
            ]
        )
    return (
        f"<p>{h.esc(rows.method_line(c))}</p>"
        + h.table(rows.VERDICT_HEADERS, rows.verdict_rows(c), [False] * 3 + [True] * 5 + [False])
        + h.notes(rows.reason_lines(c))
    )


def comparison_body(records: Sequence[Mapping[str, Any]], top: int = 10) -> str:
    """HTML of the comparison section for records of two or more runs."""
    items = items_from_records(records)
    curves = _curves(items)
    # one chart per metric: runs of tasks with other metrics (top-5, F1) do not share an axis
    metrics = list(dict.fromkeys(c["metric"] or "metric" for c in curves)) or ["metric"]
    parts = [
        h.figure(
            overlay_figure(
                [c for c in curves if (c["metric"] or "metric") == m], [i for i, _ in items], m
            ),
            "fig-compare-curves" if k == 0 else f"fig-compare-curves-{k}",
        )
        for k, m in enumerate(metrics)
    ]
    if len(items) < 2:
        return "".join(parts) + h.notes(
            [
                "All runs belong to one group: nothing to compare them with (their spread "
                "is under Stability of repeated runs)."
            ]
        )
    c = compare(items, top=top)
    parts.append(f"<h3>Verdict (baseline: {h.esc(c.options['baseline'])})</h3>")
    parts.append(_verdicts(c))
    headers, side = rows.side_rows(c)
    parts.append("<h3>Side by side (ratio to the baseline in brackets)</h3>")
    parts.append(h.table(headers, side))
    parts.append("<h3>FLOPs per step</h3>")
    parts.append(h.notes(rows.flop_lines(c)) or "<p>No candidates.</p>")
    parts.append("<h3>Roofline positions</h3>")
    parts.append(h.figure(positions_figure(c.runs), "fig-compare-roofline"))
    parts.append("<h3>Every run</h3>")
    numeric = [False] * 4 + [True] * 7 + [False] * 2
    parts.append(h.table(rows.RUN_HEADERS, rows.run_rows(c), numeric))
    for d in c.ops:
        parts.append(
            f"<h3>Ops with the largest time change: {h.esc(d.candidate)} vs "
            f"{h.esc(d.baseline)}</h3><p>Reconciled per-step self times, which add up across "
            "ops (the roofline's per-op times are inclusive, so larger).</p>"
        )
        parts.append(h.table(rows.OP_HEADERS, rows.op_rows(d), [False] + [True] * 4))
        parts.append(h.notes(d.notes))
    parts.append(h.notes(c.notes))
    return "".join(parts) + _RESIZE


def folded(body: str, what: str) -> str:
    """A per-run section folded away on the multi-run page."""
    return f'<details class="fold"><summary>{h.esc(what)}</summary>{body}</details>'
