"""The roofline's per-op rows: work.per_op joined with timeline.ops, each op's own time, and
which unmodeled rows are wrappers.

Split from perfsuite.analyzers.roofline.roofline to keep that module small. A wrapper row is one
with no FLOP
model and no time of its own: `timeline.ops` keeps, per op, its self time ("kernels launched
by this op itself", perfsuite.runner.engine.profile_window; on the host, duration minus its
children) next to its inclusive time ("also by its children"), and a wrapper's self time is
zero (autograd::engine::evaluate_function: ..., ConvolutionBackward0, aten::conv2d on a GPU),
so whatever time it shows is its children's. Pure functions on record dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perfsuite.analyzers.roofline.flags import counter_evidence
from perfsuite.analyzers.roofline.inputs import _q
from perfsuite.analyzers.roofline.mathmode import Context, context, guess_family, work_by_op
from perfsuite.analyzers.roofline.measured import compare_counted_measured
from perfsuite.analyzers.roofline.points import _div, place
from perfsuite.analyzers.roofline.reconcile import (
    Reconciled,
    own_times,
    profiled_times,
    reconcile_record,
)
from perfsuite.analyzers.roofline.results import OpRoofline
from perfsuite.devices.maths import MATRIX_FAMILIES


def _flag_notes(record: Mapping[str, Any], rows: list[OpRoofline], bw: float | None) -> list[str]:
    """One note per op above its roof, naming its likely cause (and its counters' word)."""
    flagged = [r for r in rows if r.placement.flag]
    by_op = {row.key: row for row in compare_counted_measured(record, by="op")} if flagged else {}
    notes = []
    for r in flagged:
        p, c = r.placement, by_op.get(r.op)
        evidence = "" if c is None else counter_evidence(
            p.bound,
            (c.counted_flops, c.modeled_bytes),
            (c.measured_flops, c.measured_dram_bytes),
            r.time_s,
            bw if p.bound == "memory" else p.peak,
        )  # fmt: skip
        notes.append(f"{r.op} ({p.math} roof, {p.bound}-bound): {p.flag}{evidence}")
    return notes


def op_rooflines(
    record: Mapping[str, Any],
    ctx: Context | None = None,
) -> tuple[list[OpRoofline], Reconciled | None, list[str]]:
    """Per-op rows (per step) joining work.per_op with timeline.ops by op name; the modeled
    ops' times are reconciled with the measured step (scaled when they exceed it)."""
    ctx = ctx or context(record)
    notes: list[str] = []
    model = work_by_op(record.get("work") or {})
    times = profiled_times(record, notes)
    own = own_times(record)
    joined = {op: times[op].time_s for op in model if op in times}
    kind = next(iter(times.values())).kind if times else ""
    rec_rows = reconcile_record(record, joined, kind)
    scale, measured = (rec_rows.scale, rec_rows.measured_step_s) if rec_rows else (1.0, None)
    notes += rec_rows.notes if rec_rows else []
    bw = ctx.bandwidth
    rows: list[OpRoofline] = []
    for op in sorted(set(model) | set(times)):
        m = model.get(op)
        t = times.get(op)
        tsec, kind, calls = (t.time_s, t.kind, t.calls) if t else (None, None, m and m["calls"])
        om = ctx.maths.get(op)
        pk = ctx.peak(om.math if om else None)
        matrix = bool(m) and (m["family"] or guess_family(op)) in MATRIX_FAMILIES  # type: ignore[index]
        per_call = _div(m["flops"], m["calls"]) if m and matrix else None
        kw = {
            "math": om.math if om else None,
            "evidence": om.evidence if om else None,
            "suspects": ctx.suspects(om.math if om else None, per_call),
        }
        mine = own.get(op, 0.0) if t else None
        if m and t:
            tsec = tsec * scale  # type: ignore[operator]
            mine = mine * scale  # type: ignore[operator]
            # a time over other calls than the count saw (the add_ that convolution backward
            # makes inside itself) would judge one op's time against another's work
            same = not t.calls or not m["calls"] or abs(t.calls - m["calls"]) < 0.5
            p = place(m["flops"], m["bytes"], tsec if same else None, pk, bw, **kw)
            status = "joined" if same else "calls_differ"
        elif m:
            p = place(m["flops"], m["bytes"], None, pk, bw, **kw)
            status = "no_time"
        else:
            p = place(None, None, tsec, None, bw)
            status = "no_flop_model"
        lost = None
        if tsec is not None and p.frac_of_roof is not None:
            lost = tsec * max(0.0, 1.0 - p.frac_of_roof)
        share = _div(tsec, measured) if m and t else None
        cv = t.step_cv if t else None
        wrapper = status == "no_flop_model" and not mine
        why = None if lost is not None else _no_loss_why(status, tsec, p)
        rows.append(
            OpRoofline(op, status, calls, tsec, kind, share, p, lost, cv, mine, wrapper, why)
        )
    differ = [f"{r.op} ({times[r.op].calls:.3g} vs {model[r.op]['calls']:.3g})"
              for r in rows if r.status == "calls_differ"]  # fmt: skip
    if differ:
        notes.append("calls per step profiled vs counted differ, so these ops' times are not "
                     f"judged against a roof (calls_differ): {', '.join(differ)}")  # fmt: skip
    flops_total = sum(m["flops"] for m in model.values())
    fps = (_q(record.get("work"), "flops_per_step") or {}).get("value")
    if model and fps and abs(flops_total - fps) > 0.01 * fps:
        notes.append(
            f"per-op FLOPs sum to {flops_total:.4g}, flops_per_step is {fps:.4g}: "
            "the per-op table does not cover the whole step"
        )
    if any(r.time_kind == "total" for r in rows):
        notes.append(
            "op times without device time are inclusive host times: nested ops "
            "overlap, so their sum can exceed the step"
        )
    notes += _flag_notes(record, rows, bw)
    order = {"joined": 0, "calls_differ": 1, "no_time": 2, "no_flop_model": 3}
    rows.sort(key=lambda r: (order[r.status], r.wrapper, -(r.time_s or 0.0), r.op))
    return rows, rec_rows, notes


def rank_time(o: OpRoofline) -> float | None:
    """The time an op is ranked by: a modeled op's time (inclusive: its FLOP model covers the
    work of its children), an unmodeled op's own time (its children are rows of their own, so
    its inclusive time would count theirs again: on a CPU, aten::conv2d's 55 ms are
    aten::mkldnn_convolution's)."""
    return o.own_time_s if o.status == "no_flop_model" else o.time_s


def ranked_ops(ops: list[OpRoofline]) -> tuple[list[OpRoofline], list[OpRoofline]]:
    """(ops by rank_time, largest first; wrapper rows by time): the per-op table's order. Ops
    are every row with a FLOP model or time of its own; an op without a time comes last."""

    def by(rows: list[OpRoofline], key: Any) -> list[OpRoofline]:
        return sorted(rows, key=lambda o: (key(o) is None, -(key(o) or 0.0), o.op))

    ranked = by([o for o in ops if not o.wrapper], rank_time)
    return ranked, by([o for o in ops if o.wrapper], lambda o: o.time_s)


def _no_loss_why(status: str, tsec: float | None, p: Any) -> str:
    """Why an op has no lost time: the reason, not a bare missing value."""
    if status == "no_flop_model":
        return "no FLOP model for this op"
    if tsec is None or status == "calls_differ":
        return "no measured time for the counted calls"
    if p.flag:
        return "above its roof (flagged): the model or the roof is wrong, no loss is shown"
    if p.attainable is None:
        return "no roof: the record has no peak FLOP/s or bandwidth for this op's math"
    return "no fraction of roof"
