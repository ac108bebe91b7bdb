"""Rows and text of `perfsuite compare`, shared with the report's comparison section.

Presentation only: every number comes from `perfsuite.analyzers.runs.compare`; the row builders here
are shared with the HTML report so the terminal and the page cannot disagree.
"""

from __future__ import annotations

from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.results.record_view import unfinished
from perfsuite.analyzers.runs.compare import Comparison, ItemSummary, RunValues
from perfsuite.views.roofline_rows import run_fraction_cell

RUN_HEADERS = [
    "item",
    "run",
    "framework",
    "status",
    "time to acc.",
    "epochs",
    "s/epoch",
    "step",
    "FLOP/step",
    "FLOP/s",
    "FLOP/byte",
    "bound",
    "of roof",
]
VERDICT_HEADERS = [
    "quantity",
    "baseline -> candidate",
    "runs (no value)",
    "mean baseline",
    "mean candidate",
    "ratio",
    "CI of ratio",
    "rank test",
    "verdict",
]


def _x(ratio: float | None) -> str:
    return "" if ratio is None else f" ({fmt.ratio(ratio)})"


def _count(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def time_cell(r: RunValues) -> str:
    """Time to accuracy; DNC (did not converge: finished without reaching the target, the
    leaderboard's and DAWNBench's word), "DNC (diverged)" for a NaN/inf loss; "left out" for a
    run that crashed or is unfinished without reaching (the verdict leaves it out too)."""
    if r.reached:
        return fmt.duration(r.time_to_accuracy_s)
    if unfinished(r.reached, r.status):
        return "left out"
    return "DNC (diverged)" if r.status == "diverged" else "DNC"


def run_rows(c: Comparison) -> list[list[str]]:
    """One row per run: the framework and every per-run number."""
    return [
        [
            r.item,
            r.run_id,
            r.framework,
            r.status,
            time_cell(r),
            "-" if r.epochs_to_threshold is None else f"{r.epochs_to_threshold:g}",
            fmt.duration(r.time_per_epoch_s),
            fmt.si(r.step_time_s, "s"),
            fmt.si(r.flops_per_step, "FLOP"),
            fmt.si(r.achieved_flop_per_s, "FLOP/s"),
            "n/a" if r.intensity_flop_per_byte is None else f"{r.intensity_flop_per_byte:.3g}",
            r.bound or "n/a",
            run_fraction_cell(r),
        ]
        for r in c.runs
    ]


def _reached(s: ItemSummary) -> str:
    return f"{s.n_reached}/{s.n_runs}"


def side_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """Quantities down, items across; candidates carry their ratio to the baseline."""
    items = c.items
    headers = ["quantity"] + [
        f"{s.label} ({'baseline' if i == 0 else s.kind})" for i, s in enumerate(items)
    ]
    spec: list[tuple[str, Any]] = [
        ("framework", lambda s: ", ".join(s.frameworks)),
        ("model", lambda s: s.model or "n/a"),
        ("batch size", lambda s: "n/a" if s.batch_size is None else str(s.batch_size)),
        (
            "target",
            lambda s: f"{s.metric} {'<=' if s.direction == 'lower' else '>='} {s.threshold:g}",
        ),
        ("runs reached", _reached),
        (
            "time to accuracy (mean of reached)",
            lambda s: fmt.duration(s.time_to_accuracy_s) + _x(s.time_to_accuracy_ratio),
        ),
        ("  CoV over runs", lambda s: fmt.pct(s.time_to_accuracy_cov)),
        (
            "  x accelerators (accelerator-min)",
            lambda s: (
                "n/a"
                if s.accelerator_time_s is None
                else f"{s.accelerator_time_s / 60:,.0f}" + _x(s.accelerator_time_ratio)
            ),
        ),
        (
            "epochs to threshold",
            lambda s: "n/a" if s.epochs_to_threshold is None else f"{s.epochs_to_threshold:.3g}",
        ),
        ("time per epoch", lambda s: fmt.duration(s.time_per_epoch_s) + _x(s.time_per_epoch_ratio)),
        ("step time (measured)", lambda s: fmt.si(s.step_time_s, "s") + _x(s.step_time_ratio)),
        ("minor page faults per step", lambda s: _count(s.faults_per_step) + _x(s.faults_ratio)),
        (
            "FLOPs per step (counted)",
            lambda s: fmt.si(s.flops_per_step, "FLOP") + _x(s.flops_ratio),
        ),
        (
            "achieved FLOP/s",
            lambda s: fmt.si(s.achieved_flop_per_s, "FLOP/s") + _x(s.achieved_flops_ratio),
        ),
        (
            "intensity (FLOP/byte, modeled bytes)",
            lambda s: (
                "n/a" if s.intensity_flop_per_byte is None else f"{s.intensity_flop_per_byte:.3g}"
            ),
        ),
        ("bound", lambda s: ", ".join(s.bounds) or "n/a"),
        ("of roof (time-weighted)", run_fraction_cell),
    ]
    if any(s.tokens_per_s is not None or s.mfu is not None for s in items):
        spec += [  # transformer runs (perfsuite.flops.mfu)
            ("tokens/s", lambda s: fmt.si(s.tokens_per_s, "token/s") + _x(s.tokens_per_s_ratio)),
            ("MFU (6N + 12LdT, of the spec peak)", lambda s: fmt.pct(s.mfu, 2)),
        ]
    return headers, [[name] + [get(s) for s in items] for name, get in spec]


def flop_lines(c: Comparison) -> list[str]:
    """One line per FLOP check, then the families and ops that differ."""
    out = []
    for f in c.flops:
        head = f"{f.candidate} vs {f.baseline} ({f.frameworks[1]} vs {f.frameworks[0]}): "
        if not f.same_network:  # one line: no verdict, no breakdown
            out.append(head + "; ".join(f.notes))
            continue
        if f.agree is None:
            out.append(head + "cannot compare (" + "; ".join(f.notes) + ")")
            continue
        size = (
            f"{fmt.si(f.flops_candidate, 'FLOP')} vs {fmt.si(f.flops_baseline, 'FLOP')}, "
            f"difference {fmt.si(f.difference, 'FLOP')} ({fmt.rel(f.relative)})"
        )
        verdict = "agree" if f.agree else "DISAGREE"
        out.append(f"{head}{verdict}: {size}; tolerance {fmt.pct(f.tolerance, 2)}")
        out += [f"  note: {n}" for n in f.notes]
        for title, rows in (("by phase/family", f.by_family), ("by phase/op", f.by_op[:10])):
            for d in rows:
                out.append(
                    f"  {title}: {d.name}: {fmt.si(d.baseline, 'FLOP')} -> "
                    f"{fmt.si(d.candidate, 'FLOP')} ({fmt.si(d.difference, 'FLOP')})"
                )
    return out


def op_rows(deltas: Any) -> list[list[str]]:
    return [
        [
            d.op,
            fmt.si(d.baseline_s, "s"),
            fmt.si(d.candidate_s, "s"),
            fmt.si(d.delta_s, "s"),
            fmt.ratio(d.ratio),
        ]
        for d in deltas.rows
    ]


OP_HEADERS = ["op", "baseline/step", "candidate/step", "delta", "ratio"]


def verdict_rows(c: Comparison) -> list[list[str]]:
    rows = []
    for v in c.verdicts:
        t = v.test
        fmt_v = fmt.duration
        rows.append(
            [
                v.quantity.replace("_", " "),
                f"{v.baseline} -> {v.candidate}",
                f"{v.n_baseline} ({v.dnc_baseline}) / {v.n_candidate} ({v.dnc_candidate})",
                fmt_v(v.mean_baseline),
                fmt_v(v.mean_candidate),
                "n/a" if v.ratio is None else f"{v.ratio:.4f}",
                "n/a" if v.ci_low is None else f"[{v.ci_low:.4f}, {v.ci_high:.4f}]",
                "n/a" if t is None else f"p={t.p_value:.3g} ({t.method})",
                v.verdict.upper() if v.verdict in ("faster", "slower") else v.verdict,
            ]
        )
    return rows


def reason_lines(c: Comparison) -> list[str]:
    """Why each verdict is what it is, one line each."""
    return [
        f"{v.quantity.replace('_', ' ')}, {v.candidate}: {v.verdict}: {v.reason}"
        for v in c.verdicts
    ]


def method_line(c: Comparison) -> str:
    o = c.options
    return (
        f"Mann-Whitney U (two-sided, alpha {o['alpha']:g}; runs that did not reach (DNC) ranked "
        f"slowest) and a percentile bootstrap {o['confidence']:.0%} interval of "
        f"mean(candidate)/mean(baseline) ({o['resamples']} resamples, seed {o['seed']}); "
        f"minimum effect {o['min_effect']:.1%}"
    )


def render(c: Comparison) -> str:
    """The whole terminal text."""
    parts = [f"== baseline: {c.options['baseline']}", ""]
    parts.append(fmt.table(run_rows(c), RUN_HEADERS, "lllllrrrrrrll"))
    headers, rows = side_rows(c)
    parts += ["", fmt.table(rows, headers, "l" * len(headers))]
    parts += ["", "FLOPs per step:"] + [f"  {line}" for line in flop_lines(c)]
    for d in c.ops:
        parts += [
            "",
            f"ops with the largest time change, {d.candidate} vs {d.baseline} "
            f"(reconciled per-step self times, which add up across ops; the roofline's are "
            f"inclusive, so larger; {d.common_ops} op names in common):",
        ]
        parts.append(fmt.table(op_rows(d), OP_HEADERS, "lrrrr") if d.rows else "  no timeline")
        parts += [f"  note: {n}" for n in d.notes]
    if c.verdicts:
        parts += ["", "verdict: " + method_line(c)]
        parts.append(fmt.table(verdict_rows(c), VERDICT_HEADERS, "lllrrrrll"))
        parts += [f"  {line}" for line in reason_lines(c)]
    parts += [f"note: {n}" for n in c.notes]
    return "\n".join(parts)
