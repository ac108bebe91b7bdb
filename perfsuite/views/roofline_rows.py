"""The roofline's tables as rows of strings and its cells (a fraction of a roof, FLAGGED, DOUBT),
shared by the roofline view (`perfsuite.views.roofline_view`: `perfsuite roofline` and the
report), the report's overview and figures, and `perfsuite compare`. Kept free of plotly so the
text command runs where only the analysis is installed."""

from __future__ import annotations

from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.roofline.levels import LevelPoint
from perfsuite.analyzers.roofline.measured import OP_MAPPING
from perfsuite.analyzers.roofline.ops import ranked_ops
from perfsuite.analyzers.roofline.results import Placement, RunRoofline
from perfsuite.analyzers.roofline.roofline import EXPLAIN, Roofline
from perfsuite.flops.mfu import MFU

DOUBT = " DOUBT (see notes)"
FLAGGED = "FLAGGED (see notes)"


def run_fraction_cell(run: Any, key: str = "frac_of_roof") -> str:
    """A whole-run fraction (`key`: frac_of_roof or frac_of_peak) as every text and HTML path
    shows it (the roofline's field table and answer, the report's overview, summary and
    figures, `perfsuite compare`): FLAGGED when the run sits above its roofs (no fraction
    then), else the percentage, followed by DOUBT when an op is flagged above a roof the
    fraction is made of (`doubts`): an upper bound, not a clean fact (docs/roofline.md).

    `run`: a `RunRoofline` (flagged: `flag`), a compared run or an item's mean
    (`perfsuite.analyzers.runs.compare.RunValues`: `roof_flag`; `ItemSummary`, whose mean
    leaves flagged runs out), or None (no roofline: n/a)."""
    if run is None:
        return "n/a"
    if getattr(run, "flag", None) or getattr(run, "roof_flag", None):
        return FLAGGED
    value = getattr(run, key)
    return fmt.pct(value) + (DOUBT if value is not None and key in run.doubts else "")


def point_fraction_cell(p: Placement) -> str:
    """A point's (op's, kernel's) fraction of its roof, or the flag when the point is above
    it (never a number then)."""
    return "FLAG >100%" if p.flag else fmt.pct(p.frac_of_roof)


def utilization_doubted(run: RunRoofline) -> tuple[bool, bool]:
    """(compute, bandwidth): whether the run's utilization of its peaks, of its bandwidth, is
    in doubt: an op is flagged above a compute roof, above the memory roof."""
    return bool(set(run.doubted_roofs) & set(run.flops_by_math)), "memory" in run.doubted_roofs


RUN_HEADERS = ["field", "value", "provenance", "meaning"]


def run_rows(res: Roofline) -> list[list[str]]:
    """Whole-run block as [field, value, provenance, meaning] rows (shared with the CLI)."""
    r = res.run
    rows = []
    for key in EXPLAIN:
        v = getattr(r, key)
        if key == "bound":
            shown, prov = v or "n/a", "derived"
        elif key.startswith("frac"):
            shown, prov = run_fraction_cell(r, key), "derived"
        else:
            shown, prov = fmt.si(v.value, v.unit), v.provenance
        rows.append([key, shown, prov, EXPLAIN[key]])
    return rows


MFU_HEADERS = RUN_HEADERS


def mfu_rows(m: MFU) -> list[list[str]]:
    """A transformer run's model FLOPs block (perfsuite.flops.mfu), shared by the CLI and the
    report: the model's FLOPs per token, tokens/s, MFU against the spec peak (named), the
    utilization of the measured roof beside it, and the counted FLOPs of the step."""
    peak = f"the {m.peak_math} spec peak"
    if m.peak_flops is not None:
        peak += f" ({fmt.si(m.peak_flops, 'FLOP/s')}: {m.peak_source})"
    roof = f"the measured {m.peak_math} roof"
    if m.measured_peak_flops is not None:
        roof += f" ({fmt.si(m.measured_peak_flops, 'FLOP/s')}), which moves between runs"
    return [
        ["model FLOPs/token", fmt.si(m.model_flops_per_token, "FLOP"), "modeled",
         "6N + 12·L·d·T (PaLM app. B), N = non-embedding parameters"],
        ["tokens/s", fmt.si(m.tokens_per_s, "token/s"), "derived",
         "training tokens per second of the measured step time"],
        ["model FLOP/s", fmt.si(m.model_flops_per_s, "FLOP/s"), "derived",
         "model FLOPs/token x tokens/s"],
        ["MFU", fmt.pct(m.mfu, 2), "derived", f"model FLOP/s / {peak}"],
        ["of the measured peak", fmt.pct(m.measured_peak_utilization, 2), "derived",
         f"model FLOP/s / {roof}; not MFU"],
        ["counted FLOPs/token", fmt.si(m.counted_flops_per_token, "FLOP"), "counted",
         "work.flops_per_step / tokens of the step: every executed op"
         + (f" ({m.counted_over_model:.3f}x the model FLOPs)" if m.counted_over_model else "")],
        ["HFU", fmt.pct(m.hfu, 2), "derived", f"counted FLOP/s / {peak}"],
    ]  # fmt: skip


_EVIDENCE = {"kernel names": "kernels", "counters": "counters"}  # short, for the math column


def op_table(res: Roofline, top: int) -> tuple[list[Any], list[Any], list[Any]]:
    """(rows shown, ops ranked, wrapper rows) of the per-op table: ops by time, largest first
    (perfsuite.analyzers.roofline.ops.rank_time), then wrapper rows (no FLOP model, no time of their
    own) only where `top` leaves room after every op, so that their children's time counted again
    never crowds out an op."""
    ranked, wrappers = ranked_ops(res.ops)
    return (ranked + wrappers)[:top], ranked, wrappers


def op_caption(res: Roofline, top: int, shares: str = "") -> str:
    """'Per-op, per step (...)', the per-op table's heading: what its shares are of
    (`shares`), how many ops are ranked and shown, and how many wrapper rows were left out
    (and how to see them)."""
    shown, ranked, wrappers = op_table(res, top)
    n_ops = min(len(shown), len(ranked))
    head = f"top {n_ops} of {len(ranked)} ops" if n_ops < len(ranked) else f"all {n_ops} ops"
    text = f"Per-op, per step ({shares}{head} by time, unmodeled ones by their own time"
    if any(own_time(o) for o in shown):  # aten::cudnn_convolution's time is in convolution's
        text += "; an unmodeled op's own time can lie inside a modeled op's: times nest"
    if wrappers:
        basis = "device" if any(o.time_kind == "device" for o in res.ops) else "host"
        timed = sum(1 for o in wrappers if o.time_s)
        what = (
            f"no FLOP model and no {basis} time of their own: {timed} with only their "
            f"children's time, {len(wrappers) - timed} with none"
        )
        listed = len(shown) - n_ops
        text += (
            f"; {len(wrappers)} wrapper rows ({what}) left out, --top 0 lists them"
            if not listed
            else f"; then {'the' if listed == len(wrappers) else f'{listed} of the'} "
            f"{len(wrappers)} wrapper rows ({what})"
        )
    return text + ")"


def own_time(o: Any) -> str:
    """'150 µs own' for an op without a FLOP model (ranked by its own time), else '' (the
    per-op table's time cell and the report's bar hover)."""
    return (
        f"{fmt.si(o.own_time_s, 's')} own" if o.status == "no_flop_model" and not o.wrapper else ""
    )


def op_rows(res: Roofline, top: int) -> list[list[Any]]:
    """The per-op table's rows (op_table's order): a wrapper row's status reads `wrapper`, an
    unmodeled op's time is its own time, `... own`."""
    rows = []
    for o in op_table(res, top)[0]:
        p = o.placement
        math = (
            f"{p.math} ({_EVIDENCE.get(p.math_evidence or '', 'policy')})"
            if p.math and o.status != "no_flop_model"
            else ""
        )
        rows.append(
            [
                o.op,
                "wrapper" if o.wrapper else o.status,
                own if (own := own_time(o)) else fmt.si(o.time_s, "s"),
                fmt.pct(o.time_share),
                fmt.si(p.flops, "FLOP"),
                fmt.si(p.bytes, "byte"),
                f"{p.intensity:.3g}" if p.intensity is not None else "n/a",
                fmt.si(p.achieved_flops, "FLOP/s"),
                math,
                p.bound or "",
                point_fraction_cell(p),
                fmt.pct(o.step_cv, 0),
                fmt.si(o.lost_time_s, "s"),
            ]
        )
    return rows


OP_HEADERS = [
    "op",
    "status",
    "time/step",
    "share",
    "FLOP",
    "bytes",
    "FLOP/byte",
    "FLOP/s",
    "math (from)",
    "bound",
    "of roof",
    "step CV",
    "lost/step",
]
ROOF_HEADERS = ["roof", "value", "FLOP share", "provenance", "source"]
TIME_HEADERS = ["op", "time/step", "share of measured step", "time is"]


def roof_rows(res: Roofline) -> list[list[Any]]:
    """The roofs the run was judged against, with the share of FLOPs each carried."""
    r = res.run
    total = sum(r.flops_by_math.values()) + sum(r.unroofed_flops.values()) or None
    rows = []
    for math, fl in sorted(r.unroofed_flops.items()):
        share = fmt.pct(fl / total if total else None)
        rows.append([f"{math} peak", "none", share, "absent", "no roof in the record or --peaks"])
    for math, lab in r.roofs_used.items():
        share = (
            ""
            if math == "memory"
            else fmt.pct((r.flops_by_math.get(math) or 0) / total if total else None)
        )
        rows.append(
            [
                math if math == "memory" else f"{math} peak",
                fmt.si(lab.value, lab.unit),
                share,
                lab.provenance,
                lab.source,
            ]
        )
    return rows


RANKING_HEADERS = ["rank", "op", "lost/step", "time/step", "of roof", "bound"]


def ranking_rows(res: Roofline, top: int) -> list[list[Any]]:
    """Where to look first: the `top` ops by time lost against their roof, each with its
    fraction of roof as the op table shows it (`point_fraction_cell`: flagged above it)."""
    return [
        [k + 1, o.op, fmt.si(o.lost_time_s, "s"), fmt.si(o.time_s, "s"),
         point_fraction_cell(o.placement), o.placement.bound]
        for k, o in enumerate(res.ranking[:top])
    ]  # fmt: skip


def time_rows(tr: Any, top: int) -> list[list[Any]]:
    """Reconciled per-op times: the top rows, the rest folded into one, then the other row."""
    body, other = tr.rows[:-1], tr.rows[-1]
    shown = body[:top]
    rest = body[top:]
    rows = [[t.name, fmt.si(t.time_s, "s"), fmt.pct(t.share), t.provenance] for t in shown]
    if rest:
        rows.append(
            [
                f"({len(rest)} more ops)",
                fmt.si(sum(t.time_s for t in rest), "s"),
                fmt.pct(sum(t.share for t in rest)),
                rest[0].provenance,
            ]
        )
    rows.append(
        [
            other.name,
            fmt.si(other.time_s, "s"),
            fmt.pct(other.share),
            "derived: measured - attributed",
        ]
    )
    return rows


def measured_table(rows: list[Any]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: counted vs measured FLOP and modeled vs measured DRAM bytes per step,
    per op class or per op (`perfsuite.analyzers.roofline.measured.compare_counted_measured`
    rows)."""

    def si(v: float | None, unit: str, low: bool = False) -> str:
        return ("≥" if low else "") + fmt.si(v, unit) if v is not None else "n/a"

    def ratio(v: float | None, low: bool = False) -> str:  # 1.008, 19.5: four digits
        return f"{'≥' if low else ''}{v:.4g}" if v is not None else "n/a"

    by_op = bool(rows) and rows[0].mapping == OP_MAPPING
    headers = ["op" if by_op else "op class", "FLOP counted", "FLOP measured", "meas/count",
               "bytes modeled", "DRAM measured", "meas/model"]  # fmt: skip
    body = [
        [
            r.key,
            si(r.counted_flops, "FLOP"),
            si(r.measured_flops, "FLOP", r.flops_partial),
            ratio(r.flops_ratio, r.flops_partial),
            si(r.modeled_bytes, "byte"),
            si(r.measured_dram_bytes, "byte", r.bytes_partial),
            ratio(r.bytes_ratio, r.bytes_partial),
        ]
        for r in rows
    ]
    return headers, body


def measured_tables(view: Any) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """(caption, headers, rows, notes) per non-empty table of a `CountedVsMeasured`: per op
    class, then per op; the CLI prints them, the report draws them."""
    low = (
        "; ≥ marks a lower bound (a kernel lacked the counter, or the capture lacks a "
        "Tensor-Core precision's counters)"
    )

    def caption(rows: list[Any]) -> str:
        bound = any(r.flops_partial or r.bytes_partial for r in rows)
        return f"Counted vs measured, per step ({rows[0].mapping})" + (low if bound else "")

    return [
        (caption(rows), *measured_table(rows), notes)
        for rows, notes in ((view.by_class, view.class_notes), (view.by_op, view.op_notes))
        if rows
    ]


LEVEL_HEADERS = ["kernel/op", "level", "bytes are", "FLOP/byte", "FLOP/s", "bound", "of roof"]
LEVEL_NAME_CHARS = 60  # a kernel name is cut here (without `void` and shared namespaces)


def level_rows(points: list[LevelPoint], top: int) -> list[list[str]]:
    """The hierarchical roofline's points (`top` of them; 0: all) as LEVEL_HEADERS rows."""
    return [
        [
            fmt.truncate(fmt.short_kernel_name(p.name), LEVEL_NAME_CHARS),
            p.level,
            p.bytes_provenance,
            f"{p.placement.intensity:.3g}" if p.placement.intensity is not None else "n/a",
            fmt.si(p.placement.achieved_flops, "FLOP/s"),
            p.placement.bound or "",
            point_fraction_cell(p.placement),
        ]
        for p in (points[:top] if top > 0 else points)
    ]
