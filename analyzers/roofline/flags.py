"""Cause text for a point above its roof: the likely model or ceiling error, by evidence.

Why: "wrong math assumed" was said of CPU convolutions at 351-410% of a roof measured while
other jobs loaded the machine; the roof was wrong, not the math. Causes are ordered by what the
record shows (perfsuite.analyzers.roofline.doubts): a measured roof the record doubts first, a wrong
math only when a faster roof exists that would hold the point, then the FLOP/byte model and time
attribution. Pure, torch-free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from perfsuite.analyzers.roofline.doubts import Suspects
from perfsuite.analyzers.roofline.mathmode import Context
from perfsuite.analyzers.roofline.results import OpRoofline, RunRoofline
from perfsuite.devices.maths import SPEC_DTYPE
from perfsuite.fmt import pct, si


def _wrong_math(evidence: str | None, ratio: float, peak: float | None, s: Suspects) -> str:
    """'wrong math assumed (...)' when the math is a guess and a faster roof would hold it."""
    if evidence != "policy" or not peak:
        return ""
    holds = sorted((v, m) for m, v in s.faster if v >= ratio * peak)  # the nearest first
    if not holds:
        return ""
    return (
        f"wrong math assumed (no kernel names, the math comes from policy; a {holds[0][1]} "
        "roof would hold it)"
    )


def _causes(items: list[str]) -> str:
    items = [i for i in items if i]
    return ", ".join(items[:-1]) + f", or {items[-1]}" if len(items) > 1 else items[0]


def flag_cause(
    bound: str | None,
    evidence: str | None,
    ratio: float,
    bandwidth: float | None = None,
    *,
    peak: float | None = None,
    suspects: Suspects | None = None,
) -> str:
    """Why a point can sit above its roof, the causes in order of the record's evidence:
    a measured CPU roof the record shows too low (busy machine, fewer threads, a smaller
    benchmark) first; a wrong math only when a faster roof exists that would hold the point."""
    s = suspects or Suspects()
    head = f"{pct(ratio, 0)} of its roof: not a result, a model or ceiling error; likely "
    if bound == "compute":
        low = f"the measured peak is too low ({'; '.join(s.peak)})" if s.peak else ""
        roof = "" if s.peak else "a low roof" + (f" ({s.peak_unknown})" if s.peak_unknown else "")
        return head + _causes(
            [
                low,
                _wrong_math(evidence, ratio, peak, s),
                "FLOPs over-counted (the model counts more work than the kernels did)",
                "time under-attributed (kernels credited to another op)",
                roof,
            ]
        )
    bw = f" ({si(bandwidth, 'B/s')}, a copy rate)" if bandwidth else ""
    low = f"the measured bandwidth is too low ({'; '.join(s.bandwidth)})" if s.bandwidth else ""
    return head + _causes(
        [
            low,
            "bytes over-counted (modeled as DRAM traffic, but served from cache)",
            "time under-attributed",
            ""
            if s.bandwidth
            else f"a bandwidth roof{bw} below what this op reaches"
            + (f" ({s.bandwidth_unknown})" if s.bandwidth_unknown else ""),
        ]
    )


def counter_evidence(
    bound: str | None,
    counted: tuple[float | None, float | None],
    measured: tuple[float | None, float | None],
    time_s: float | None,
    roof: float | None,
) -> str:
    """What the op's own hardware counters (kernels attributed by op ranges) say of a point
    above its roof: `counted` and `measured` are (FLOP, DRAM bytes) per step, `roof` the peak
    (compute-bound) or the bandwidth (memory-bound). '' when the counters do not cover it.

    Why: the cause list says what could be wrong; the counters can say whether the model is.
    They are ncu's replay figures (cold caches, base clocks), so they weigh a cause, they do
    not replace the point."""
    i, what, unit = (1, "DRAM bytes", "B") if bound == "memory" else (0, "FLOP", "FLOP")
    model, seen = counted[i], measured[i]
    if not model or seen is None:
        return ""
    ratio = seen / model
    text = (
        f"; counters (ncu, this op's kernels): {si(seen, unit)} per step against "
        f"{si(model, unit)} modeled ({ratio:.2f}x)"
    )
    if ratio >= 1:
        return text + f": not the {what} model (the kernels did at least as much)"
    text += f": the {what} model over-counts"
    if time_s and roof:
        frac = seen / time_s / roof
        text += f"; on the measured {what} it reads {pct(frac, 0)} of its roof" + (
            ", still above it: the roof or the time is off too" if frac > 1 else ""
        )
    return text


def run_flag(frac: float, ctx: Context, by_math: Mapping[str, float]) -> str:
    """The whole run above its roofs: the roofs the record doubts first, then the model."""
    low, unknown = [], []
    for math in sorted(by_math, key=lambda k: -by_math[k]):
        s = ctx.suspects(math)
        if s.peak:
            low.append(f"the measured {math} peak is too low ({'; '.join(s.peak)})")
        elif s.peak_unknown:
            unknown.append(math)
    mem = ctx.suspects(None).bandwidth
    if mem:
        low.append(f"the measured bandwidth is too low ({'; '.join(mem)})")
    guessed = sorted(
        {o.math for o in ctx.maths.values() if o.evidence == "policy" and o.math in by_math}
    )
    faster = sorted({m for g in guessed for m, _ in ctx.suspects(g).faster})
    wrong = (
        f"wrong math assumed (the math comes from policy; faster roofs exist: {', '.join(faster)})"
        if faster
        else ""
    )
    roof = (
        ""
        if low
        else "a roof too low"
        + (f" ({', '.join(unknown)}: load at measurement not recorded)" if unknown else "")
    )
    return (
        f"the step would take {pct(frac, 0)} of its measured time at the roofs: not a result; "
        "likely " + _causes([*low, wrong, "FLOPs/bytes over-counted", roof])
    )


def unroofed_note(unroofed: Mapping[str, float], flops_per_step: float | None) -> str:
    """Why the whole-run roof fraction is absent: the maths without a roof and their share."""
    total = sum(unroofed.values())
    share = f"{total / flops_per_step:.1%} of the counted FLOPs" if flops_per_step else "FLOPs"
    maths = sorted(unroofed)
    dtypes = " ".join(f"--dtype {SPEC_DTYPE.get(m, m)}" for m in maths)
    return (
        f"no {', '.join(maths)} roof in the record or --peaks, and ops with {share} ran in "
        f"it: whole-run roof fraction not computed (measure the roof: `perfsuite peaks "
        f"{dtypes} --json > peaks.json`, then `perfsuite roofline RUN --peaks peaks.json`)"
    )


def missing_roofs_note(
    by_math: Mapping[str, float], unroofed: Mapping[str, float], bandwidth: float | None
) -> str | None:
    """'ceilings missing' naming the roofs actually absent: a run with a compute roof but no
    bandwidth still has a blended peak, only its roof time, ridge and bound are lost."""
    compute = not by_math and not unroofed  # unroofed maths have their own note
    if compute and bandwidth is None:
        what = "roof"
    elif compute:
        what = "compute roof"
    elif bandwidth is None:
        what = "memory bandwidth roof (no roof time, ridge or bound)"
    else:
        return None
    return f"ceilings missing: run `perfsuite peaks` or pass --peaks; no {what}"


def flagged_roofs(ops: Iterable[OpRoofline]) -> dict[str, list[tuple[str, float]]]:
    """roof -> [(op, achieved/attainable)] of the ops flagged above it, largest first: the
    memory roof for a memory-bound op, else the compute roof of its math."""
    out: dict[str, list[tuple[str, float]]] = {}
    for o in ops:
        p = o.placement
        if p.over_roof is None:
            continue
        roof = "memory" if p.bound == "memory" else p.math or "unknown math"
        out.setdefault(roof, []).append((o.op, p.over_roof))
    return {k: sorted(v, key=lambda x: (-x[1], x[0])) for k, v in out.items()}


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


def roof_name(roof: str) -> str:
    """'the memory roof', 'the tf32 peak': a roof key of RunRoofline.doubted_roofs, in words."""
    return "the memory roof" if roof == "memory" else f"the {roof} peak"


def run_doubts(run: RunRoofline, ops: Iterable[OpRoofline]) -> tuple[RunRoofline, str | None]:
    """The run with `doubted_roofs` and `doubts` set, and the note: a whole-run fraction shown
    (frac_of_roof over every roof used, frac_of_peak over the compute roofs) that uses a roof
    some op is flagged above carries that op's doubt; (run, None) when none does.

    Why: the H100 cifar10 run showed frac_of_roof 39.0% as a clean fact while aten::add,
    aten::relu and aten::threshold_backward sat above the memory roof it is made of. Each
    cause a flag names (a roof too low, FLOPs or bytes over-counted, a faster math) lengthens
    the op's modeled roof time or raises the achieved rate; under-attributed time changes
    neither: the true fraction is at most the one shown."""
    flagged = flagged_roofs(ops)
    uses = {
        "frac_of_roof": (run.frac_of_roof, set(run.roofs_used) | set(run.flops_by_math)),
        "frac_of_peak": (run.frac_of_peak, set(run.flops_by_math)),
    }
    doubts = {
        key: sorted(r for r in flagged if r in roofs)
        for key, (value, roofs) in uses.items()
        if value is not None and any(r in roofs for r in flagged)
    }
    if not doubts:
        return run, None
    roofs = sorted({r for rs in doubts.values() for r in rs})
    fields = " and ".join(f"{k} {getattr(run, k):.1%}" for k in doubts)
    parts = []
    for r in roofs:
        over = _and([f"{op} ({pct(ratio, 0)})" for op, ratio in flagged[r]])
        users = " and ".join(k for k, rs in doubts.items() if r in rs)
        verb = "sits" if len(flagged[r]) == 1 else "sit"
        parts.append(
            f"{over} {verb} above {roof_name(r)}" + (f" ({users})" if len(doubts) > 1 else "")
        )
    note = (
        f"whole-run {fields} {'is' if len(doubts) == 1 else 'are'} in doubt: "
        f"{'; '.join(parts)}, flagged as a model or ceiling error (their notes name the likely "
        "causes). Each such cause would make the true fraction lower or leave it: read it as an "
        "upper bound, and the run's utilization of the same roofs likewise"
    )
    doubted = {r: [op for op, _ in flagged[r]] for r in roofs}
    return dataclasses.replace(run, doubted_roofs=doubted, doubts=doubts), note
