"""Rows of `perfsuite stability`, shared by its text and the report's stability section, so the
terminal and the page cannot disagree. Numbers come from `perfsuite.analyzers.runs.stability`."""

from __future__ import annotations

from typing import Any

from perfsuite.fmt import duration, pct, printable, table


def _row(name: str, s: Any, fmt: Any) -> list[str]:
    ci = f"[{fmt(s.ci_low)}, {fmt(s.ci_high)}]" if s.ci_low is not None else "n/a"
    return [name, str(s.n), fmt(s.mean), fmt(s.std), pct(s.cov), ci, fmt(s.min), fmt(s.max)]


def _epochs(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


OUTCOME_HEADERS = ["run", "seed", "time to acc.", "epochs", "s/epoch", "CoV in run", "epoch times"]
SUMMARY_HEADERS = ["statistic", "n", "mean", "std", "CoV", "95% CI of mean", "min", "max"]


def headline(g: Any) -> str:
    """'digits (...): top1 >= 0.98 (5/5 reached, 100%)': one group's target and success."""
    return (
        f"{g.label}: {g.metric} {'<=' if g.direction == 'lower' else '>='} {g.threshold} "
        f"({g.n_reached}/{g.n_runs} reached, {pct(g.reached_fraction, 0)})"
    )


def _time_cell(r: Any) -> str:
    """Time to accuracy; DNC (did not converge: finished without reaching the threshold),
    "DNC (diverged)" for a NaN/inf loss; or why the run is left out ("crashed", "not
    measured")."""
    if r.reached:
        return duration(r.time_s)
    if r.counted:
        return "DNC (diverged)" if r.status == "diverged" else "DNC"
    return "not measured" if r.stopped_at is not None else r.status


def outcome_rows(g: Any) -> list[list[str]]:
    """One row per run of a group (shared with the report's stability section)."""
    return [
        [
            r.run_id,
            "" if r.seed is None else str(r.seed),
            _time_cell(r),
            _epochs(r.epochs) if r.reached else "-",
            duration(r.time_per_epoch_s),
            pct(r.epoch_time_cov),
            r.epoch_times_from or "-",
        ]
        for r in g.runs
    ]


def summary_rows(g: Any) -> list[list[str]]:
    """Statistics over a group's runs: time to accuracy, epochs, time per epoch."""
    return [
        _row("time to accuracy", g.time_to_accuracy, duration),
        _row("epochs to threshold", g.epochs_to_threshold, _epochs),
        _row("time per epoch", g.time_per_epoch, duration),
    ]


def olympic_line(g: Any) -> str:
    """The olympic mean and the rule applied: the generic one (drop fastest and slowest), or
    the benchmark's own when every run is an imported MLPerf record of it (unet3d: 4)."""
    om = g.olympic_mean
    how = (
        "drop fastest and slowest"
        if g.olympic_rule == "generic"
        else f"{g.olympic_rule} rule: drop the {om.dropped} fastest and the {om.dropped} slowest"
    )
    return f"olympic mean ({how}): " + (
        duration(om.value) if om.value is not None else f"n/a ({om.reason})"
    )


def render(groups: list[Any]) -> str:
    """Human text for the stability results (one block per group)."""
    blocks = []
    for g in groups:
        lines = [printable(f"== {headline(g)}")]
        lines.append(table(outcome_rows(g), OUTCOME_HEADERS, "llrrrrl"))
        lines.append("")
        lines.append(table(summary_rows(g), SUMMARY_HEADERS, "lrrrrrrr"))
        lines.append(olympic_line(g))
        lines.extend(printable(f"warning: {w}") for w in g.warnings)  # names from records
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
