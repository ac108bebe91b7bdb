"""Report sections for per-rank traces and trace diffs: the rank table with its stragglers, and
the ops and kernels that changed between two traces. The numbers are
`perfsuite.analyzers.timeline.ranks` / `.diff`'s, as `perfsuite timeline DIR` and `--diff A B`
print."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from perfsuite import fmt
from perfsuite.analyzers.timeline import TraceError
from perfsuite.analyzers.timeline.diff import diff_paths
from perfsuite.record import RecordError
from perfsuite.record.sidecars import trace_path
from perfsuite.report import html as h
from perfsuite.report.timeline_section import kernel_cell
from perfsuite.views.rank_rows import (
    ANALYSES_HEADERS,
    DIFF_HEADERS,
    RANK_HEADERS,
    analyses_rows,
    diff_rows,
    extreme_lines,
    rank_rows,
    straggler_lines,
)

_LAYOUT = {"template": "plotly_white", "margin": {"l": 70, "r": 30, "t": 50, "b": 60}}
STATUS_COLOURS = {"added": "#2ca02c", "removed": "#d62728", "changed": "#1f77b4", "same": "#999"}


def ranks_figure(scan: Any) -> go.Figure:
    """Per rank, the device span split into compute, busy without compute, and idle (seconds);
    stragglers' bars outlined."""
    rows = [r for r in scan.ranks if r.span_s is not None]
    x = [str(r.rank) for r in rows]
    late = {s.rank for s in scan.stragglers.ranks}
    outline = {"width": [3 if r.rank in late else 0 for r in rows], "color": "black"}
    fig = go.Figure()
    for name, values, colour in [
        ("compute", [r.busy_compute_s for r in rows], "#1f77b4"),
        ("busy, no compute (memcpy, memset, communication)",
         [r.busy_non_compute_s for r in rows], "#ff7f0e"),
        ("idle", [r.idle_s for r in rows], "#bbbbbb"),
    ]:  # fmt: skip
        fig.add_trace(go.Bar(x=x, y=values, name=name, marker={"color": colour, "line": outline}))
    fig.update_xaxes(title="rank", type="category")
    fig.update_yaxes(title="time (s)")
    fig.update_layout(
        barmode="stack",
        title="Device time per rank (stragglers outlined)",
        height=420,
        **_LAYOUT,
    )
    return fig


def ranks_section(scan: Any) -> str:
    """The rank table, the straggler rule and its findings, and the per-rank figure."""
    st = scan.stragglers
    found = straggler_lines(scan)
    parts = [
        f"<p>{len(scan.ranks)} ranks in <code>{h.esc(scan.folder)}</code>, each read and "
        "summarized in turn.</p>",
        h.table(RANK_HEADERS, rank_rows(scan, "n/a"), [True, False, False, *[True] * 8]),
        _analyses(scan),
        f"<p>Stragglers: {h.esc(st.rule)}.</p>",
        "<ul>" + "".join(f"<li>{h.esc(f)}</li>" for f in found) + "</ul>"
        if found
        else "<p>No straggler.</p>",
        h.figure(ranks_figure(scan), "ranks-figure"),
        h.notes([*st.notes, *(f"skipped {x['error']}" for x in scan.skipped)]),
    ]
    return "".join(parts)


def _analyses(scan: Any) -> str:
    """Per rank: launch statistics, the deepest stream queue and the memory peak, and the
    ranks with the highest of them; nothing when no rank has launches or memory events."""
    rows = analyses_rows(scan, "n/a")
    if not rows:
        return ""
    found = extreme_lines(scan)
    return "".join(
        [
            "<p>Kernel launches (launch delay: device start minus the launch call's end), the "
            "deepest stream queue (launched, not yet started) and the memory peak per rank.</p>",
            h.table(ANALYSES_HEADERS, rows, [True] * 12 + [False]),
            "<ul>" + "".join(f"<li>{h.esc(f)}</li>" for f in found) + "</ul>" if found else "",
        ]
    )


def diff_figure(d: Any, top: int = 20) -> go.Figure:
    """The `top` largest changes in total time (B - A), one bar each, coloured by status."""
    rows = [r for r in d.rows if r.status != "same"][:top][::-1]  # largest at the top
    labels = [f"{r.kind}: {fmt.truncate(fmt.short_kernel_name(r.name), 50)}" for r in rows]
    fig = go.Figure(
        go.Bar(
            x=[r.total_delta_s for r in rows],
            y=labels,
            orientation="h",
            marker={"color": [STATUS_COLOURS[r.status] for r in rows]},
            customdata=[[r.status, r.count_a, r.count_b] for r in rows],
            hovertemplate="%{y}<br>%{customdata[0]}, count %{customdata[1]} -> "
            "%{customdata[2]}<br>total time change %{x:.3s}s<extra></extra>",
        )
    )
    fig.update_xaxes(title="total time, B - A (s)")
    fig.update_layout(
        title="Largest changes in total time (green added, red removed, blue changed)",
        height=max(300, 24 * len(rows) + 120),
        **_LAYOUT,
    )
    return fig


def diff_section(d: Any, top: int = 20) -> str:
    """Summary line, the figure and the table of the `top` largest changes."""

    changed = [r for r in d.rows if r.status != "same"]
    rows = diff_rows(changed[:top], kernel_cell, "n/a")
    c = d.counts
    parts = [
        f"<p>A: <code>{h.esc(d.a)}</code> ({d.ranks_a} rank(s)); B: <code>{h.esc(d.b)}</code> "
        f"({d.ranks_b} rank(s)). CPU operators {h.esc(fmt.si(d.total_a_s['cpu_op'], 's'))} -> "
        f"{h.esc(fmt.si(d.total_b_s['cpu_op'], 's'))}, device kernels "
        f"{h.esc(fmt.si(d.total_a_s['kernel'], 's'))} -> "
        f"{h.esc(fmt.si(d.total_b_s['kernel'], 's'))}: {c['added']} added, "
        f"{c['removed']} removed, {c['changed']} changed, {c['same']} unchanged.</p>",
    ]
    if not changed:  # no bars to draw and no rows to list
        parts.append("<p>No CPU operator or device kernel differs in count or total time.</p>")
        parts.append(h.notes(list(d.notes)))
        return "".join(parts)
    parts += [
        h.figure(diff_figure(d, top), "diff-figure"),
        h.table(
            DIFF_HEADERS,
            rows,
            [False, False, False, *[True] * 7],
        ),
        h.notes(
            [
                *d.notes,
                *(
                    [f"{len(changed) - top} smaller changes not shown"]
                    if len(changed) > top
                    else []
                ),
            ]
        ),
    ]
    return "".join(parts)


def ranks_page(scan: Any) -> str:
    return h.page(f"perfsuite: ranks of {scan.folder}", [("ranks", "Ranks", ranks_section(scan))])


def diff_page(d: Any, top: int = 20) -> str:
    return h.page(
        f"perfsuite: trace diff {d.a} -> {d.b}", [("diff", "Trace diff", diff_section(d, top))]
    )


def runs_diff_sections(records: Any, top: int = 20) -> list[tuple[str, str, str]]:
    """For a page of several runs: the trace diff of the first run with a trace sidecar against
    each other one that has one (none when fewer than two have a trace)."""

    traced = []
    for rec in records:
        try:
            traced.append((rec.get("run_id"), trace_path(rec)))
        except RecordError:
            continue
    if len(traced) < 2:
        return []
    (base_id, base), parts = traced[0], []
    for run_id, path in traced[1:]:
        parts.append(f"<h3>{h.esc(f'{base_id} -> {run_id}')}</h3>")
        try:
            parts.append(diff_section(diff_paths(base, path), top))
        except (TraceError, OSError) as exc:
            parts.append(f'<p class="note">Trace diff not possible: {h.esc(exc)}</p>')
    return [("trace-diff", "Trace diff (ops and kernels)", "".join(parts))]
