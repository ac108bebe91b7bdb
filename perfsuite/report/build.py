"""Assemble report sections from analyzer results. Presentation only: every number shown
comes from the record or from an analyzer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.results.record_view import task_direction
from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.measured import counted_vs_measured
from perfsuite.analyzers.roofline.roofline import Roofline, roofline
from perfsuite.analyzers.roofline.utilization import Utilization, utilization
from perfsuite.figures import runs as figures
from perfsuite.report import html as h
from perfsuite.report.environment_section import environment_section
from perfsuite.report.generalization_section import generalization_section
from perfsuite.report.inference_section import inference_section
from perfsuite.report.overview_section import overview_section
from perfsuite.report.ranks_section import runs_diff_sections
from perfsuite.report.roofline_section import roofline_sections
from perfsuite.report.setup_section import setup_section
from perfsuite.report.stability_section import stability_section
from perfsuite.report.telemetry_section import telemetry_section
from perfsuite.report.timeline_section import timeline_section
from perfsuite.task_metrics import target_text
from perfsuite.views.curves import curve_data
from perfsuite.views.pages import ReportPage
from perfsuite.views.roofline_rows import run_fraction_cell


def _analyses(
    rec: Mapping[str, Any], peaks: Mapping[str, Any] | None = None
) -> tuple[Roofline | None, Utilization, str | None]:
    try:
        res: Roofline | None = roofline(rec, peaks)
        err = None
    except RooflineInputError as exc:
        res, err = None, str(exc)
    return res, utilization(rec, peaks), err


def _summary(records: Sequence[Mapping[str, Any]], analyses: list) -> str:
    rows = []
    for rec, (res, _util, _err) in zip(records, analyses, strict=True):
        tta = rec.get("time_to_accuracy") or {}
        evals = rec.get("evaluations") or []
        task = rec.get("task") or {}
        run = res.run if res else None
        rows.append(
            [
                rec.get("run_id"),
                rec.get("status"),
                task.get("name"),
                _target(task, rec),
                fmt.duration(tta.get("time_s")) if tta.get("reached") else "not reached",
                tta.get("epoch") if tta.get("reached") else (evals[-1]["epoch"] if evals else None),
                fmt.si(run.achieved_flops.value, "FLOP/s") if run else "n/a",
                run_fraction_cell(run),
                _roofs_named(run),
                (rec.get("hardware") or {}).get("name"),
            ]
        )
    return h.table(
        [
            "run",
            "status",
            "task",
            "target",
            "time to accuracy",
            "epochs (at target, else last)",
            "achieved FLOP/s",
            "of its roofs (time-weighted)",
            "roofs",
            "hardware",
        ],
        rows,
        [False] * 4 + [True, True, True, True, False, False],
    )


def _target(task: Mapping[str, Any], rec: Mapping[str, Any]) -> str:
    """ "top-5 >= 93%", "F1 >= 0.75": the task's target as the task states it."""
    if task.get("metric") is None or task.get("threshold") is None:
        return "n/a"
    return target_text(str(task["metric"]), float(task["threshold"]), task_direction(rec))


def _roofs_named(run: Any) -> str:
    """'tf32 measured, fp32 measured, memory spec': which roofs judged the run."""
    if run is None:
        return ""
    return ", ".join(f"{m} {lab.provenance}" for m, lab in run.roofs_used.items())


def _curves(records: Sequence[Mapping[str, Any]]) -> str:
    curves = curve_data(records)
    if not any(c["values"] for c in curves):
        return '<p class="note">No evaluations recorded.</p>'
    # one figure per metric: top-5 and F1 do not share an axis
    metrics = list(dict.fromkeys(c["metric"] or "metric" for c in curves))
    return "".join(
        h.figure(
            figures.curves_figure([c for c in curves if (c["metric"] or "metric") == m], m),
            "fig-curves" if i == 0 else f"fig-curves-{i}",
        )
        for i, m in enumerate(metrics)
    )


def _single_run_sections(
    records: Sequence[Mapping[str, Any]], analyses: list, top: int
) -> list[tuple[str, str, str]]:
    """The single-run page's overview (first) and trace timeline; none for several runs."""
    if len(records) != 1:
        return []
    rec, (res, _util, err) = records[0], analyses[0]
    return [
        ("overview", "Overview", wrong_machine_html(res) + overview_section(rec, res, err)),
        ("timeline", "Timeline of the profiled window", timeline_section(rec, min(top, 20))),
    ]


def _distributed(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The data-parallel section, only when a run was trained with --nproc N."""
    from perfsuite.report.distributed_section import distributed_section

    body = distributed_section(records)
    return [("distributed", "Data-parallel ranks", body)] if body else []


def _stability(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The repeats' spread, only when some group holds two or more runs."""
    body = stability_section(records)
    return [("stability", "Stability of repeated runs", body)] if body else []


def wrong_machine(res: Roofline | None) -> list[str]:
    """The notes that void every fraction of a roof (a peaks file from another device); the
    page shows them first, as `perfsuite roofline` prints them before its numbers."""
    return [n for n in res.notes if n.startswith("WRONG MACHINE")] if res else []


def wrong_machine_html(res: Roofline | None) -> str:
    return "".join(f"<p><b>{h.esc(n)}</b></p>" for n in wrong_machine(res))


def page_facts(rec: Mapping[str, Any], analysis: tuple) -> dict[str, Any]:
    """What the page says about one run, as data: its id and folder, the record's flags, the
    WRONG MACHINE warnings the page shows first, and the notes of its roofline section (the
    notes `perfsuite roofline` prints, then the step-time rows' and counted-vs-measured ones)."""
    res, util, err = analysis
    notes: list[str] = []
    if res is not None:
        measured = counted_vs_measured(rec).note
        notes = [
            *res.notes,
            *res.hierarchical.notes,
            *util.notes,
            *(res.time_rows.notes if res.time_rows else []),
            *([measured] if measured else []),
        ]
    return {
        "run_id": rec.get("run_id"),
        "dir": rec.get("_dir"),
        "status": rec.get("status"),
        "warnings": wrong_machine(res),
        "flags": [f for f in rec.get("flags") or [] if isinstance(f, str)],
        "roofline_flag": res.run.flag if res else None,
        "doubts": res.run.doubts if res else {},  # fraction -> roofs ops are flagged above
        "roofline_error": err,
        "notes": list(dict.fromkeys(notes)),
    }


def report_page(
    records: Sequence[Mapping[str, Any]],
    top: int = 20,
    first: Sequence[tuple[str, str, str]] = (),
    peaks: Mapping[str, Any] | None = None,
) -> ReportPage:
    """The whole self-contained report for one or more runs, with its sections and each run's
    warnings and notes; `first`: (id, title, body) sections shown before the summary (a
    study's section); `peaks`: roofs from a `perfsuite peaks --json` file
    (`perfsuite.devices.roofs.peaks_file_roofs`), used before each record's own ceilings, as
    `perfsuite roofline --peaks` uses them."""
    analyses = [_analyses(r, peaks) for r in records]
    title = (
        f"perfsuite report: {records[0].get('run_id')}"
        if len(records) == 1
        else f"perfsuite report: {len(records)} runs"
    )
    single = _single_run_sections(records, analyses, top)
    roofline_html, ops_html = roofline_sections(records, analyses, top)
    details = [
        ("roofline", "Roofline", roofline_html),
        ("ops", "Per-op breakdown", ops_html),
        *single[1:],
        ("telemetry", "Telemetry", telemetry_section(records)),
        *_distributed(records),
        ("generalization", "Generalization", generalization_section(records)),
        ("inference", "Inference and energy", inference_section(records)),
        ("setup", "Data, switches and math", setup_section(records)),
        ("environment", "Environment and config", environment_section(records)),
    ]
    if len(records) > 1:  # the comparison first, each run's details folded
        from perfsuite.report.compare_section import comparison_body, folded

        sections = [
            *first,
            ("compare", "Comparison", comparison_body(records, top)),
            *runs_diff_sections(records, top),
            *_stability(records),
            ("summary", "Summary", _summary(records, analyses)),
            *[
                (i, t, folded(b, f"{t}: {len(records)} runs (click to open)"))
                for i, t, b in details
            ],
        ]
    else:
        sections = [
            *first,
            *single[:1],
            ("summary", "Summary", _summary(records, analyses)),
            ("curves", "Accuracy vs training time", _curves(records)),
            *details,
        ]
    page = h.page(
        title,
        sections,
        "Numbers carry provenance: measured, counted, modeled, spec, derived (absent: not "
        "obtained). Modeled bytes are compulsory traffic, so intensities are upper bounds.",
    )
    return ReportPage(
        page,
        title,
        [(i, t) for i, t, _ in sections],
        [page_facts(r, a) for r, a in zip(records, analyses, strict=True)],
    )


def report_html(
    records: Sequence[Mapping[str, Any]],
    top: int = 20,
    first: Sequence[tuple[str, str, str]] = (),
    peaks: Mapping[str, Any] | None = None,
) -> str:
    """The page of `report_page` (same arguments), as HTML text."""
    return report_page(records, top, first, peaks).html


def roofline_html(
    record: Mapping[str, Any], top: int = 20, peaks: Mapping[str, Any] | None = None
) -> str:
    """A page with only the roofline and per-op sections of one run (`roofline --output`)."""
    roofline_body, ops_body = roofline_sections([record], [_analyses(record, peaks)], top)
    return h.page(
        f"Roofline: {record.get('run_id')}",
        [("roofline", "Roofline", roofline_body), ("ops", "Per-op breakdown", ops_body)],
    )
