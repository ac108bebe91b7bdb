"""The study table as text: the same rows for the terminal and the HTML report."""

from __future__ import annotations

from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.runs.study import ConfigResult, StudyResult

HEADERS = [
    "configuration",
    "reached",
    "status",
    "time to acc. (mean ± std)",
    "epochs to thr.",
    "s/epoch",
    "epochs x s/epoch",
    "samples/s",
    "best",
    "TTA speed-up",
    "throughput speed-up",
]


# A scaling study: per process count, both speed-ups, each divided by the process ratio
# (efficiency 1.0 = linear scaling), and the collectives' measured share of the step.
SCALING_HEADERS = [
    "configuration",
    "processes",
    "reached",
    "status",
    "time to acc. (mean ± std)",
    "epochs to thr.",
    "s/epoch",
    "samples/s",
    "comm. share",
    "best",
    "TTA speed-up",
    "throughput speed-up",
    "TTA efficiency",
    "throughput efficiency",
]
ROBUSTNESS_HEADERS = ["corruption acc.", "vs reference"]
MFU_HEADERS = ["tokens/s", "MFU"]  # transformer workloads (a model_flops section)


def has_robustness(result: StudyResult) -> bool:
    """Whether any configuration's runs were evaluated on the corruptions."""
    return any(c.corruption_accuracy.n for c in result.configs)


def has_mfu(result: StudyResult) -> bool:
    """Whether any configuration's runs carry tokens/s (transformer workloads)."""
    return any(c.tokens_per_s.n for c in result.configs)


def headers(result: StudyResult) -> list[str]:
    """The table's columns for the study's kind; the corruption columns only when the study
    measured them, tokens/s and MFU only for transformer runs."""
    base = SCALING_HEADERS if result.kind == "scaling" else HEADERS
    return (
        base
        + (ROBUSTNESS_HEADERS if has_robustness(result) else [])
        + (MFU_HEADERS if has_mfu(result) else [])
    )


def align(result: StudyResult) -> str:
    """Column alignment ("l"/"r" per column) of the study's table."""
    head = "lrrl" if result.kind == "scaling" else "lrl"
    return head + "r" * (len(headers(result)) - len(head))


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _tta(c: ConfigResult) -> str:
    s = c.time_to_accuracy
    if c.status == "DNC" or s.mean is None:
        return "DNC" if c.status == "DNC" else "n/a"
    spread = f" ± {fmt.duration(s.std)}" if s.std is not None else ""
    return fmt.duration(s.mean) + spread


def _epochs(c: ConfigResult) -> str:
    s = c.epochs_to_threshold
    if s.mean is None:
        return "-"
    return f"{s.mean:.3g}" + (f" ± {s.std:.2g}" if s.std is not None else "")


def _robustness(c: ConfigResult) -> list[str]:
    s = c.corruption_accuracy
    if s.mean is None:
        return ["-", "-"]
    spread = f" ± {100 * s.std:.2f}" if s.std is not None else ""
    delta = "-" if c.corruption_delta is None else f"{100 * c.corruption_delta:+.2f} pts"
    return [f"{100 * s.mean:.2f}%{spread}", delta]


def _mfu(c: ConfigResult) -> list[str]:
    return [fmt.si(c.tokens_per_s.mean, "token/s"), fmt.pct(c.mfu.mean, 2)]


def _outcome(c: ConfigResult) -> list[Any]:
    """The cells every kind shows first: reached, status, time to accuracy, epochs, s/epoch."""
    return [
        f"{c.n_reached}/{c.n_runs}",
        c.status + (f" ({c.n_diverged} diverged)" if c.n_diverged else ""),
        _tta(c),
        _epochs(c),
        fmt.duration(c.epoch_time.mean),
    ]


def _best(c: ConfigResult) -> str:
    return "n/a" if c.best is None else f"{c.best:.4f}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def row(c: ConfigResult, robustness: bool = False) -> list[Any]:
    """One configuration as table cells (SI units; "DNC" where none of its runs reached).
    "epochs x s/epoch" is the time to accuracy the two efficiencies predict from median epoch
    times: beside the measured one it shows when a few slow epochs (a busy machine) moved it."""
    return [
        c.name,
        *_outcome(c),
        fmt.duration(c.epochs_x_epoch_time),
        fmt.si(c.samples_per_s.mean, "sample/s"),
        _best(c),
        _x(c.tta_speedup),
        _x(c.throughput_speedup),
        *(_robustness(c) if robustness else []),
    ]


def scaling_row(c: ConfigResult, robustness: bool = False) -> list[Any]:
    """One process count as table cells ("n/a" comm. share: no profile window measured it)."""
    return [
        c.name,
        c.nproc,
        *_outcome(c),
        fmt.si(c.samples_per_s.mean, "sample/s"),
        fmt.pct(c.comm_share.mean),
        _best(c),
        _x(c.tta_speedup),
        _x(c.throughput_speedup),
        _ratio(c.tta_efficiency),
        _ratio(c.scaling_efficiency),
        *(_robustness(c) if robustness else []),
    ]


def rows(result: StudyResult) -> list[list[Any]]:
    """Every configuration's cells, in the columns of `headers(result)`."""
    one = scaling_row if result.kind == "scaling" else row
    robust, model = has_robustness(result), has_mfu(result)
    return [one(c, robust) + (_mfu(c) if model else []) for c in result.configs]


def target(result: StudyResult) -> str:
    """The target as a condition (`top1 >= 0.98`; `<=` for a lower-is-better metric), or
    why it is unknown: a study with no run record yet, whose workload could not be read."""
    if result.threshold is None:
        return f"target {result.metric or 'unknown'} (threshold not known before a run)"
    op = "<=" if result.direction == "lower" else ">="
    return f"{result.metric or 'metric'} {op} {result.threshold:g}"


def render(result: StudyResult) -> str:
    """The terminal table with a heading and the warnings."""
    head = (
        f"== {result.kind} study of {result.workload} ({result.study_id}): "
        f"{target(result)}; speed-ups against {result.reference!r}"
    )
    robust = has_robustness(result)
    lines = [head, fmt.table(rows(result), headers(result), align(result))]
    lines += [f"  {c.name}: {c.description}" for c in result.configs]
    if robust:
        lines.append(
            "corruption acc.: the threshold models' mean accuracy over the corruption families "
            "(mean ± std over runs); vs reference: its difference from the first configuration"
        )
    lines += [f"warning: {w}" for w in result.warnings]
    return "\n".join(lines)
