"""The single-run report's first section: what a hardware engineer asks first, in words and
figures. Time to accuracy, throughput, achieved vs attainable, and the three places the step
loses the most time. Every number comes from the record or the roofline analyzer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.results.record_view import partial_run, reached_time
from perfsuite.analyzers.roofline.roofline import Roofline
from perfsuite.flops.mfu import mfu
from perfsuite.record.consistency import untrusted
from perfsuite.report import html as h
from perfsuite.report.environment_section import flags_anchor
from perfsuite.task_metrics import metric_info, metric_text, target_text
from perfsuite.views.roofline_rows import mfu_rows, run_fraction_cell
from perfsuite.views.roofline_view import LOST_TIME_RULE, lost_time_sentences

LOST_PLACES = 3
# frac_of_roof (docs/roofline.md), not achieved / attainable: each op is judged by its own roof
FRAC_OF_ROOF_LABEL = "roof time / step time (time-weighted blend of the per-op roofs)"


def _q(section: Any, key: str) -> float | None:
    q = (section or {}).get(key) if isinstance(section, Mapping) else None
    v = q.get("value") if isinstance(q, Mapping) else None
    return float(v) if isinstance(v, (int, float)) else None


def _how(section: Any, key: str) -> str:
    """How a quantity was obtained, as its record says: "derived: batch_size / step_time"."""
    q = (section or {}).get(key) if isinstance(section, Mapping) else None
    if not isinstance(q, Mapping):
        return "not recorded"
    parts = [str(x) for x in (q.get("provenance"), q.get("source")) if x]
    return ": ".join(parts) or "not stated in the record"


def _headline(rec: Mapping[str, Any]) -> str:
    task = rec.get("task") or {}
    metric, threshold = str(task.get("metric")), float(task.get("threshold") or 0.0)
    goal = target_text(metric, threshold, task.get("direction") or "higher")  # as the summary
    reached, time_s = reached_time(rec)
    tta = rec.get("time_to_accuracy") or {}
    hw = (rec.get("hardware") or {}).get("name") or "unknown hardware"
    bad = untrusted(rec)
    if bad:  # the stored claim is not shown as a result: the evaluations do not bear it out
        return f"Claims not shown: {bad} (perfsuite validate lists every problem) on {hw}."
    if reached:
        return (
            f"Reached {goal} in {fmt.duration(time_s)} of training "
            f"(epoch {tta.get('epoch')}) on {hw}."
        )
    evals = rec.get("evaluations") or []
    last = (evals[-1].get("metrics") or {}).get(metric) if evals else None
    best = (
        f"; last {metric_info(metric).label} {metric_text(metric, last)} after epoch "
        f"{evals[-1].get('epoch')}"
        if last is not None
        else ""
    )
    return f"Did not reach {goal} (status {rec.get('status')}{best}) on {hw}."


def _flags_line(rec: Mapping[str, Any]) -> str:
    """HTML: the partial-run flag in words (a subset, a smoke test), then how many other flags
    the run carries, linked to the flags list; "" for a run without flags."""
    flags = [f for f in rec.get("flags") or [] if isinstance(f, str)]
    partial = partial_run(rec)
    others = len(flags) - (1 if partial else 0)
    parts = []
    if partial:
        parts.append(f"<b>Partial run: {h.esc(partial)}.</b>")
    if others > 0:
        word = "flag" if others == 1 else "flags"
        more = "other " if partial else ""
        parts.append(
            f'<a href="#{flags_anchor(0)}">{others} {more}{word}</a> '
            "(Environment and config, Flags)."
        )
    return f"<p>{' '.join(parts)}</p>" if parts else ""


def _figures(rec: Mapping[str, Any], res: Roofline | None) -> list[list[str]]:
    tput = rec.get("throughput") or {}
    reached, time_s = reached_time(rec)
    rows = [
        [
            "time to accuracy",
            fmt.duration(time_s) if reached else "not reached",
            "measured (training clock)",
        ],
        [
            "throughput",
            fmt.si(_q(tput, "samples_per_s"), "sample/s"),
            _how(tput, "samples_per_s"),
        ],
        ["step time", fmt.si(_q(tput, "step_time"), "s"), _how(tput, "step_time")],
    ]
    model = mfu(rec)  # transformer runs: model FLOPs, tokens/s, MFU beside the counted FLOPs
    if model is not None:
        rows += [[name, value, f"{prov}: {why}"] for name, value, prov, why in mfu_rows(model)]
    if res is not None:
        run = res.run
        rows += [
            [
                "achieved",
                fmt.si(run.achieved_flops.value, "FLOP/s"),
                f"{run.flops_per_step.provenance} FLOP / {run.step_time.provenance} time",
            ],
            [
                "attainable at this intensity",
                fmt.si(run.attainable.value, "FLOP/s"),
                f"min(peak, intensity x bandwidth); roofs {run.attainable.provenance}",
            ],
            [
                FRAC_OF_ROOF_LABEL,
                run_fraction_cell(run),  # FLAGGED, or the fraction and its DOUBT (roofline_rows)
                "roof_time / step_time: the step's time with every op at its own roof "
                "(modeled) over the measured step time",
            ],
            ["bound", run.bound or "n/a", "derived"],
        ]
    return rows


def overview_section(rec: Mapping[str, Any], res: Roofline | None, err: str | None) -> str:
    """HTML of the overview: a headline, the key figures, the top places time is lost."""
    parts = [
        f"<p><b>{h.esc(_headline(rec))}</b></p>",
        _flags_line(rec),
        h.table(
            ["figure", "value", "how it was obtained"], _figures(rec, res), [False, True, False]
        ),
    ]
    places = lost_time_sentences(res, LOST_PLACES) if res is not None else []
    if places:
        parts.append(f"<h3>Where the step loses the most time (top {len(places)})</h3>")
        parts.append("<ol>" + "".join(f"<li>{h.esc(p)}</li>" for p in places) + "</ol>")
        parts.append(
            f'<p class="note">{h.esc(LOST_TIME_RULE[0].upper() + LOST_TIME_RULE[1:])}, from '
            "the profiled window; details under Roofline and Per-op breakdown.</p>"
        )
    elif err:
        parts.append(f'<p class="note">No roofline, so no lost-time ranking: {h.esc(err)}</p>')
    stall = (rec.get("data") or {}).get("stall_fraction")
    if isinstance(stall, (int, float)):
        parts.append(
            f"<p>Waiting for input data: {h.esc(fmt.pct(stall))} of training time "
            "(host time inside the batch iterator, measured).</p>"
        )
    return "".join(parts)
