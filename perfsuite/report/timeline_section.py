"""The single-run report's timeline section: the saved trace's temporal breakdown (busy,
compute, idle and why), kernel time by category, the busiest CPU operators, kernel launch
statistics, queue length per stream, the memory timeline, and how to open the trace in
Perfetto. The numbers are `perfsuite.analyzers.timeline`'s, as `perfsuite timeline` shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.timeline import TraceError, analyze_trace, read_trace
from perfsuite.record import RecordError
from perfsuite.record.sidecars import trace_path
from perfsuite.report import html as h
from perfsuite.views.timeline_rows import (
    CATEGORY_HEADERS,
    OP_HEADERS,
    TOP_KERNEL_HEADERS,
    category_rows,
    op_rows,
    top_kernel_rows,
)

PERFETTO = "https://ui.perfetto.dev/"
KERNEL_NAME_CHARS = 60  # a shortened kernel name is cut here; the cell's title has it whole


def kernel_cell(name: str) -> h.Titled:
    """A kernel name as a table cell: without `void` and shared namespaces, cut to
    KERNEL_NAME_CHARS, the full name on hover."""
    return h.Titled(fmt.truncate(fmt.short_kernel_name(name), KERNEL_NAME_CHARS), name)


def _device_rows(d: Any) -> list[list[str]]:
    span = d.span_s or None

    def share(x: float) -> str:
        return fmt.pct(x / span) if span else "n/a"

    i = d.idle
    return [
        ["span (first to last device event)", fmt.si(d.span_s, "s"), ""],
        ["busy", fmt.si(d.busy_s, "s"), share(d.busy_s)],
        ["  compute kernels", fmt.si(d.busy_compute_s, "s"), share(d.busy_compute_s)],
        [
            "  only memcpy/memset/communication",
            fmt.si(d.busy_non_compute_s, "s"),
            share(d.busy_non_compute_s),
        ],
        ["idle", fmt.si(d.idle_s, "s"), share(d.idle_s)],
        ["  host had not launched the work yet", fmt.si(i.host_wait_s, "s"), share(i.host_wait_s)],
        ["    of it in sync calls", fmt.si(i.host_sync_s, "s"), share(i.host_sync_s)],
        ["  host inside the launch call", fmt.si(i.in_launch_s, "s"), share(i.in_launch_s)],
        [
            "  launched, waiting to start (queue, dependency)",
            fmt.si(i.queued_s, "s"),
            share(i.queued_s),
        ],
        ["  unattributed", fmt.si(i.unattributed_s, "s"), share(i.unattributed_s)],
    ]


def _perfetto(path: Any) -> str:
    return (
        "<p>Open the saved trace in Perfetto: go to "
        f'<a href="{PERFETTO}" target="_blank" rel="noopener noreferrer">{PERFETTO}</a>, '
        "choose <i>Open trace file</i> and pick "
        f"<code>{h.esc(path)}</code>. Perfetto reads the file inside your browser; nothing "
        "is uploaded. Offline: Chromium's built-in <code>chrome://tracing</code> (Load) opens "
        "the same Chrome-trace JSON without any network, and "
        "<code>perfsuite timeline RUN</code> prints these tables in a terminal.</p>"
    )


def _no_device_note(a: Any) -> str:
    """Why there is no device table: a CUPTI counter-collection trace has kernels (replayed,
    so not timed) and is not CPU-only."""
    if a.profiler_ranges is not None:
        pr = a.profiler_ranges
        return (
            f'<p class="note">CUPTI profiler-mode trace ({pr.count} counter ranges, '
            f"{len(pr.metrics)} metrics): kernels were replayed to collect hardware counters, "
            "so there are no kernel timings to split into busy and idle. "
            "<code>perfsuite counters</code> turns these ranges into measured FLOPs.</p>"
        )
    return (
        '<p class="note">CPU-only trace: there is no device timeline to split '
        "into busy and idle; the operators below ran on the host.</p>"
    )


def _analyses(a: Any, data: Any, top: int) -> str:
    """Kernel launch statistics, queue length per stream and the memory timeline."""
    from perfsuite.report.timeline_analyses import analyses_html

    return analyses_html(a, data, top, kernel_cell)


def timeline_section(rec: Mapping[str, Any], top: int = 10) -> str:
    """HTML for one run's saved profiler trace, or a note saying why there is none."""
    try:
        path = trace_path(rec)
    except RecordError as exc:
        return f'<p class="note">No trace: {h.esc(exc)}</p>'
    try:
        data = read_trace(path)
        a = analyze_trace(data, top=top)
    except (TraceError, OSError) as exc:
        return f'<p class="note">Trace not readable: {h.esc(exc)}</p>' + _perfetto(path)
    except ArithmeticError as exc:  # a shape no guard foresaw: the rest of the page still shows
        msg = f"{path}: {type(exc).__name__}: {exc}"
        return f'<p class="note">Trace analysis failed: {h.esc(msg)}</p>' + _perfetto(path)
    parts = [
        f"<p>Profiled window {h.esc(fmt.si(a.window_s, 's'))}, {a.events} events"
        + (
            f", {a.steps.count} steps of mean {h.esc(fmt.si(a.steps.mean_s, 's'))}"
            if a.steps.count
            else ""
        )
        + ".</p>"
    ]
    for d in a.devices:
        label = f"device {d.device}" + (f" ({d.name})" if d.name else "")
        parts.append(f"<h4>{h.esc(label)}: where the device time goes</h4>")
        parts.append(h.table(["", "time", "of span"], _device_rows(d), [False, True, True]))
        parts.append(h.table(CATEGORY_HEADERS, category_rows(d), [False, *[True] * 4]))
    if not a.devices:
        parts.append(_no_device_note(a))
    if a.top_kernels:
        parts.append(
            h.table(
                ["top kernels", *TOP_KERNEL_HEADERS],
                top_kernel_rows(a.top_kernels, kernel_cell),
                [False, False, True, True, True],
            )
        )
    if a.ops:
        rows = op_rows(a.ops, a.has_device, str)
        parts.append(h.table(OP_HEADERS, rows, [False, *[True] * 5, False]))
    parts.append(_analyses(a, data, top))
    # the record's own notes on the trace (a TensorFlow XSpace: planes left out, kernels renamed)
    parts.append(h.notes([*(rec.get("timeline") or {}).get("notes", []), *a.notes]))
    parts.append(_perfetto(path))
    return "".join(parts)
