"""The roofline of one run as one presentation model (`RooflineView`): the answer first, then
the tables, the utilization and hierarchy lines, and the notes ranked by importance.

`perfsuite roofline` prints it as text and the report draws it as HTML; neither composes a
heading, a line or a note of its own, so what the two say, and under which headings, is the
same by construction (`tests/roofline/test_view.py` compares them). Kept free of plotly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfsuite import fmt
from perfsuite.analyzers.roofline.above_roof import check_line
from perfsuite.analyzers.roofline.measured import CountedVsMeasured
from perfsuite.analyzers.roofline.results import OpRoofline
from perfsuite.analyzers.roofline.roofline import Roofline
from perfsuite.analyzers.roofline.utilization import Utilization
from perfsuite.flops.mfu import MFU, why_counted_differs
from perfsuite.views.roofline_rows import (
    DOUBT,
    LEVEL_HEADERS,
    MFU_HEADERS,
    OP_HEADERS,
    RANKING_HEADERS,
    ROOF_HEADERS,
    RUN_HEADERS,
    TIME_HEADERS,
    level_rows,
    measured_tables,
    mfu_rows,
    op_caption,
    op_rows,
    point_fraction_cell,
    ranking_rows,
    roof_rows,
    run_rows,
    time_rows,
    utilization_doubted,
)

NOTES_SHOWN = 3  # notes printed without --explain, as one-line summaries
SUMMARY_WIDTH = 150  # characters of a one-line summary (the tables above are as wide)
# the window's step and the run's step_time read as the same below this relative difference
SAME_STEP = 0.005


@dataclass(frozen=True)
class Table:
    """One table as strings: its heading (no trailing colon), column headers, rows, the
    alignment of each column ("l" or "r": right-aligned columns are numbers) and the lines
    that belong under it."""

    heading: str
    headers: list[str]
    rows: list[list[Any]]
    align: str
    notes: list[str] = field(default_factory=list)


# Importance of a note, by what it says (its leading words, which the analyzers write): the
# first rule that matches ranks it; a note no rule matches ranks last. Lower is more important.
NOTE_RANKS: tuple[tuple[int, str, re.Pattern[str]], ...] = tuple(
    (rank, what, re.compile(pattern))
    for rank, what, pattern in (
        (0, "the roofs are another machine's", r"^WRONG MACHINE"),
        (1, "the whole run sits above its roofs", r"^whole run: "),
        (2, "a roof is missing", r"^(ceilings missing|no [\w, ]+ roof in the record)"),
        (3, "a whole-run fraction is in doubt", r"^whole-run "),
        (4, "the machine was slow or fast during the window", r"^machine (contended|check)"),
        (5, "a roof was measured busy or with other threads", r"roof: measured"),
        (6, "a roof's load at measurement is unknown", r"roof\(s\): load at measurement"),
        (7, "an op sits above its roof", r"of its roof: not a result"),
    )
)
OTHER_RANK = len(NOTE_RANKS)


@dataclass(frozen=True)
class Note:
    """A note in full, its one-line summary, and its rank (0 most important: NOTE_RANKS)."""

    text: str
    summary: str
    rank: int


def note_rank(text: str) -> int:
    """The rank of the first NOTE_RANKS rule the note matches, else OTHER_RANK."""
    return next((rank for rank, _, rule in NOTE_RANKS if rule.search(text)), OTHER_RANK)


def summary(text: str, width: int = SUMMARY_WIDTH) -> str:
    """The note's first clause (up to its first '; ' or '. '), cut at a word to `width`
    characters with ' ...' when longer: one line that names what the note is about."""
    head = re.split(r"; |\. ", text, maxsplit=1)[0]
    if len(head) <= width:
        return head
    cut = head.rfind(" ", 0, width - 4)
    return head[: cut if cut > 0 else width - 4] + " ..."  # a word longer than a line: cut it


def ranked_notes(texts: list[str]) -> list[Note]:
    """Each distinct note once, most important first; notes of one rank keep their order."""
    unique = list(dict.fromkeys(texts))
    notes = [Note(t, summary(t), note_rank(t)) for t in unique]
    return sorted(notes, key=lambda n: n.rank)


@dataclass(frozen=True)
class RooflineView:
    """What the roofline of one run says, in reading order: `warnings` (facts that void the
    numbers below: shown first), `answer` (the headline), the math, the tables (`tables()`
    in order, `levels` the hierarchy's points), the lines, `notes` ranked."""

    title: str
    answer: list[str]
    warnings: list[str]
    math: str
    run: Table
    roofs: Table
    utilization: list[str]
    mfu: Table | None
    ops: Table | None
    time: Table | None
    ranking: Table | None
    measured: list[Table]
    measured_lines: list[str]
    hierarchy: list[str]
    levels: Table | None
    notes: list[Note]

    def notes_heading(self, explain: bool) -> str:
        """'Notes (the 3 most important of 9; all in full: --explain)', or 'Notes (all 9, in
        full)' when `explain` or when every note is shown anyway."""
        n = len(self.notes)
        if explain:
            return f"Notes (all {n}, in full)"
        if n <= NOTES_SHOWN:
            return f"Notes ({n}; in full: --explain)"
        return f"Notes (the {NOTES_SHOWN} most important of {n}; all in full: --explain)"

    def notes_shown(self, explain: bool) -> list[str]:
        """Every note in full (`explain`), else the NOTES_SHOWN most important as summaries."""
        if explain:
            return [n.text for n in self.notes]
        return [n.summary for n in self.notes[:NOTES_SHOWN]]

    def tables(self) -> list[Table]:
        """Every table, in reading order (the hierarchy's points last)."""
        found = [self.run, self.roofs, self.mfu, self.ops, self.time, self.ranking]
        return [t for t in [*found, *self.measured, self.levels] if t is not None]


def roofline_view(
    res: Roofline,
    util: Utilization,
    top: int,
    measured: CountedVsMeasured | None = None,
    mfu: MFU | None = None,
) -> RooflineView:
    """The presentation model of one run's roofline (`top`: rows of the ranked tables)."""
    r = res.run
    warnings = [n for n in res.notes if n.startswith("WRONG MACHINE")]
    if r.flag:
        warnings.append(f"WHOLE RUN FLAGGED: {r.flag}")
    math = f"math: {res.math_source}"
    texts = [n for n in res.notes + res.hierarchical.notes + util.notes if n != math]
    if measured is not None and measured.note:
        texts.append(measured.note)
    notes = ranked_notes(texts)
    return RooflineView(
        title=f"Roofline of {r.run_id} on {r.device or 'unknown device'} ({r.dtype or '?'})",
        answer=answer(res) + caveat(notes),
        warnings=warnings,
        math=math,
        run=Table("Whole run, one training step", RUN_HEADERS, run_rows(res), "lrll"),
        roofs=Table(
            "Roofs used (each op is judged against the roof of the math it ran in)",
            ROOF_HEADERS,
            roof_rows(res),
            "lrrll",
        ),
        utilization=utilization_lines(res, util),
        mfu=_mfu_table(mfu),
        ops=_ops_table(res, top),
        time=_time_table(res, top),
        ranking=_ranking_table(res, top),
        measured=[Table(c, h, b, "lrrrrrr", n) for c, h, b, n in measured_tables(measured)]
        if measured is not None
        else [],
        measured_lines=_measured_lines(measured),
        hierarchy=hierarchy_lines(res),
        levels=_levels_table(res, top),
        notes=notes,
    )


def answer(res: Roofline) -> list[str]:
    """The headline: how far the step is from its roofs, then where it loses the most time."""
    r = res.run
    step = fmt.si(r.step_time.value, "s")
    if r.flag:
        head = (
            f"Answer: none; one step takes {step}, and the counted work at the roofs would "
            "take longer: the model or a roof is wrong (WHOLE RUN FLAGGED above)."
        )
    elif r.frac_of_roof is not None:
        doubt = (
            " (an upper bound: ops sit above a roof it is made of, DOUBT in the notes)"
            if "frac_of_roof" in r.doubts
            else ""
        )
        head = (
            f"Answer: one step takes {step}; with every op at the roof of its math it would "
            f"take {fmt.si(r.roof_time.value, 's')}: {fmt.pct(r.frac_of_roof)} of its roofs"
            f"{doubt}, {r.bound or 'n/a'}-bound overall."
        )
    else:
        head = (
            f"Answer: one step takes {step} at {fmt.si(r.achieved_flops.value, 'FLOP/s')}; "
            "no fraction of its roofs (a roof is missing: see notes)."
        )
    if not res.ranking:
        return [head]
    return [head, f"Most time lost: {lost_time_sentence(res.ranking[0])}."]


# How the ranking's lost time is computed: the ranking table's heading and the report
# overview's note say it in these words.
LOST_TIME_RULE = "lost time = time x (1 - achieved/attainable)"


def lost_time_sentence(o: OpRoofline, step_s: float | None = None) -> str:
    """One ranked op's lost time in words: "op, 1.2 ms per step of its 3 ms (40% of its fp32
    compute roof)", then its share of a `step_s` step when given. The answer's second line and
    the report overview's list are this sentence."""
    p = o.placement
    roof = " ".join(x for x in (p.math, p.bound, "roof") if x)
    share = f"; {fmt.pct(o.lost_time_s / step_s)} of the step" if step_s else ""
    return (
        f"{o.op}, {fmt.si(o.lost_time_s, 's')} per step of its {fmt.si(o.time_s, 's')} "
        f"({point_fraction_cell(p)} of its {roof}){share}"
    )


def lost_time_sentences(res: Roofline, n: int) -> list[str]:
    """The `n` ops losing the most time per step against their roofs, as sentences with their
    share of the reconciled step."""
    return [lost_time_sentence(o, res.reconciled_step_time_s) for o in res.ranking[:n]]


# Notes with evidence that the roofs or the window ran at another speed than the machine's
# quiet best: every fraction depends on them, so the answer names the first (NOTE_RANKS 4, 5).
CAVEAT_RANKS = (4, 5)


def caveat(notes: list[Note]) -> list[str]:
    """'Read with care: ...' and the summary of the most important note on how fast the roofs
    or the window ran (the machine was contended, a roof measured busy); [] without one."""
    first = next((n for n in notes if n.rank in CAVEAT_RANKS), None)
    return [f"Read with care: {first.summary} (see notes)."] if first else []


def utilization_lines(res: Roofline, util: Utilization) -> list[str]:
    """Utilization of the peaks (DOUBT after a rate some op is flagged above), the machine
    check, the SM clock and the CPU load, one line each; absent facts give no line."""
    lines = []
    if util.run and (util.spec_peak or util.measured_peak):
        u = util.run
        peak, bw = (f"{DOUBT}:" if d else "" for d in utilization_doubted(res.run))
        lines.append(
            f"utilization: peak{peak} {fmt.pct(u.of_measured_peak)} of measured, "
            f"{fmt.pct(u.of_spec_peak)} of spec; bandwidth{bw} "
            f"{fmt.pct(u.of_measured_bandwidth)} of measured, {fmt.pct(u.of_spec_bandwidth)} "
            "of spec"
        )
    if res.machine_check:
        lines.append(check_line(res.machine_check))
    if util.clock:
        c = util.clock
        lines.append(
            f"SM clock: mean {fmt.si(c.sm_clock_hz_mean, 'Hz')}, min "
            f"{fmt.si(c.sm_clock_hz_min, 'Hz')}, max spec "
            f"{fmt.si(c.sm_clock_hz_max_spec, 'Hz')} ({fmt.pct(c.mean_of_max)} of max"
            f"{', THROTTLED' if c.throttled else ''})"
        )
    return lines + _cpu_lines(util)


def _cpu_lines(util: Utilization) -> list[str]:
    """The machine's CPU load (% of all cores) and the run's process's (% of one core)."""
    if not util.cpu:
        return []

    def pct(v: float | None) -> str:  # telemetry writes percent; fmt.pct takes fractions
        return fmt.pct(None if v is None else v / 100)

    c = util.cpu
    lines = [
        "CPU utilization, machine-wide (every process, % of all cores): "
        f"mean {pct(c.util_pct_mean)}, max {pct(c.util_pct_max)}"
    ]
    if c.process_util_pct_mean is not None:
        lines.append(
            "CPU utilization of the run's process (% of one core): "
            f"mean {pct(c.process_util_pct_mean)}, max {pct(c.process_util_pct_max)}"
        )
    return lines


def hierarchy_lines(res: Roofline) -> list[str]:
    """The hierarchical roofline in a line (where its bytes come from, its levels), and why a
    hierarchy of one level is all there is when it is."""
    h = res.hierarchical
    levels = ", ".join(f"{k} {fmt.si(v, 'byte/s')}" for k, v in h.levels.items())
    lines = [f"Hierarchical roofline: {h.source} bytes, {len(h.points)} points; levels {levels}"]
    if len(h.levels) == 1:
        lines.append(
            "(one level: without measured per-level traffic, i.e. Nsight Compute counters "
            "with L2 and DRAM bytes, every op is judged against main-memory bandwidth only)"
        )
    return lines


def shares_of(res: Roofline) -> str:
    """What the per-op shares are shares of; "not the run's step_time above" only when the
    window's step differs from it (by more than SAME_STEP)."""
    if not res.time_rows:
        return ""
    step = fmt.si(res.reconciled_step_time_s, "s")
    run_step = res.run.step_time.value
    window = res.reconciled_step_time_s
    if res.time_rows.measured_source.startswith("timeline.") and not (
        run_step and window and abs(window - run_step) <= SAME_STEP * run_step
    ):
        return (
            f"shares of the {step} step of the epoch the window followed, not the run's "
            "step_time above; "
        )
    return f"shares of the {step} step_time; "


def _mfu_table(mfu: MFU | None) -> Table | None:
    if mfu is None:
        return None
    notes = [*mfu.notes, why_counted_differs(mfu)]
    return Table("Model FLOPs utilization (transformer)", MFU_HEADERS, mfu_rows(mfu), "lrll", notes)


def _ops_table(res: Roofline, top: int) -> Table | None:
    if not res.ops:
        return None
    caption = op_caption(res, top, shares_of(res))
    return Table(caption, OP_HEADERS, op_rows(res, top), "llrrrrrrllrrr")


def _time_table(res: Roofline, top: int) -> Table | None:
    tr = res.time_rows
    if not tr:
        return None
    heading = (
        f"Where the measured step goes ({fmt.si(tr.measured_step_s, 's')}, "
        f"{tr.measured_source}); rows add up to it"
    )
    return Table(heading, TIME_HEADERS, time_rows(tr, top), "lrrl")


def _ranking_table(res: Roofline, top: int) -> Table | None:
    if not res.ranking:
        return None
    heading = f"Where to look first ({LOST_TIME_RULE})"
    return Table(heading, RANKING_HEADERS, ranking_rows(res, top), "rlrrrl")


def _levels_table(res: Roofline, top: int) -> Table | None:
    h = res.hierarchical
    if not h.points:
        return None
    shown = len(h.points) if top <= 0 else min(top, len(h.points))
    which = f"top {shown} of {len(h.points)}" if shown < len(h.points) else f"all {shown}"
    heading = f"Points of the hierarchical roofline ({which}, by time)"
    return Table(heading, LEVEL_HEADERS, level_rows(h.points, top), "lllrrlr")


def _measured_lines(measured: CountedVsMeasured | None) -> list[str]:
    """The counters' calibration line under the counted-vs-measured tables (none without
    them)."""
    if measured is None or not (measured.by_class or measured.by_op):
        return []
    return [measured.calibration] if measured.calibration else []


def view_json(view: RooflineView) -> Mapping[str, Any]:
    """The view's answer and ranked notes as data, for `--json` readers of the text's order."""
    return {
        "answer": view.answer,
        "notes": [{"rank": n.rank, "summary": n.summary, "text": n.text} for n in view.notes],
    }
