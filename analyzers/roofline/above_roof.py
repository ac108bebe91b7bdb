"""Why a point sits above its roof, and what the record says against a roof.

A point above its roof means the model or the roof is wrong, never the hardware, and the text
that says so names the cause the record gives evidence for. Three sources of evidence, in this
module:

- the roofs' own measurement (`Suspects`, `suspects`, `roof_notes`): a CPU peak measured while
  other jobs loaded the machine, with fewer threads than the run used, or by a matmul smaller
  than the op, is too low; its `measured_under` (perfsuite.ceilings: load before/after, CPUs,
  threads, matrix size) says so;
- the machine check next to the profile window (`WindowSpeed`, `window_speeds`,
  `speed_notes`, `check_line`): the roofs' own benchmarks repeated beside the window. Below
  `SLOW` of its roof the machine was contended and every fraction of that roof understates;
  above `FAST` the roof is too low;
- the flag texts (`flag_cause`, `run_flag`, `counter_evidence`) and the doubt they cast on the
  whole run (`run_doubts`): causes ordered by evidence, a measured roof the record doubts
  first, a wrong math only when a faster roof exists that would hold the point, then the
  FLOP/byte model and time attribution.

Pure functions on record dicts and roofline results, torch-free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from perfsuite.analyzers.roofline.results import OpRoofline, RunRoofline
from perfsuite.devices.maths import DTYPE_MATH, SPEC_DTYPE, OpMath
from perfsuite.fmt import pct, si


@dataclass(frozen=True)
class Suspects:
    """What the record says against the roofs one point is judged by."""

    peak: tuple[str, ...] = ()  # evidence the compute roof (a measured peak) is too low
    bandwidth: tuple[str, ...] = ()  # evidence the memory roof (a measured copy) is too low
    peak_unknown: str = ""  # the peak's load was not recorded: no evidence either way
    faster: tuple[tuple[str, float], ...] = ()  # (math, peak) of roofs above the judged one
    bandwidth_unknown: str = ""  # the same for the memory roof


def run_threads(record: Mapping[str, Any]) -> int | None:
    """Threads the run computed with: environment.torch_threads, else config.threads."""
    for section, key in (("environment", "torch_threads"), ("config", "threads")):
        v = (record.get(section) or {}).get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def is_cpu_record(record: Mapping[str, Any], roofs: Mapping[str, Any]) -> bool:
    """A CPU run: its environment says so, or a roof carries a CPU load record."""
    dev = str((record.get("environment") or {}).get("device") or "")
    if dev.lower().startswith("cpu"):
        return True
    return any("cpus" in (_under(q) or {}) for q in _quantities(roofs))


def _quantities(roofs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = []
    for r in roofs.values():
        for q in (r or {}).values():
            if isinstance(q, Mapping):
                out.append(q)
    return out


def _under(q: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    u = (q or {}).get("measured_under")
    return u if isinstance(u, Mapping) else None


def _load(u: Mapping[str, Any]) -> str:
    """'3.10 before, 3.40 after' from a measured_under."""
    parts = []
    for key in ("load_before", "load_after"):
        v = u.get(key)
        if isinstance(v, (int, float)):
            parts.append(f"{v:.2f} {key.split('_')[1]}")
    return ", ".join(parts) or "unknown"


def _threads(n: int) -> str:
    return f"{n} thread" if n == 1 else f"{n} threads"


def measured_threads(q: Mapping[str, Any]) -> int | None:
    """Threads a measured roof was taken with (`measured_under.threads`), else None."""
    t = (_under(q) or {}).get("threads")
    return t if isinstance(t, int) and not isinstance(t, bool) else None


def doubts(
    q: Mapping[str, Any] | None,
    threads_run: int | None,
    flops_per_call: float | None = None,
) -> tuple[str, ...]:
    """Evidence that a measured CPU roof `q` is too low for this run; () when there is none."""
    if not q or q.get("provenance") != "measured":
        return ()
    u = _under(q) or {}
    out = []
    if u.get("busy") is True:
        out.append(
            f"measured at load {_load(u)} on "
            f"{u.get('cpus')} CPUs with {u.get('threads')} threads, above the quiet limit "
            f"{u.get('busy_limit')}"
        )
    t = measured_threads(q)
    if t and threads_run and t < threads_run:
        out.append(f"measured with {_threads(t)} while the run used {threads_run}")
    size = u.get("size")
    if q.get("unit") == "FLOP/s" and isinstance(size, int) and flops_per_call:
        bench = 2.0 * size**3
        if flops_per_call > bench:
            out.append(
                f"by a benchmark smaller than this op (n={size} matmul, {bench:.3g} FLOP; "
                f"this op {flops_per_call:.3g} FLOP per call)"
            )
    return tuple(out)


def unknown_load(q: Mapping[str, Any] | None) -> str:
    """'load at measurement not recorded' for a measured CPU roof from an old cache, else ''."""
    if not q or q.get("provenance") != "measured":
        return ""
    u = _under(q) or {}
    return "load at measurement not recorded" if u.get("busy") is None else ""


def suspects(
    roofs: Mapping[str, Any],
    math: str | None,
    *,
    cpu: bool,
    threads_run: int | None,
    flops_per_call: float | None = None,
    check: tuple[str, str] = ("", ""),
) -> Suspects:
    """The evidence against the `math` roof and the memory roof, for one point. `check`:
    (peak, bandwidth) evidence from the machine check next to the window (any device)."""
    pq = (roofs.get(math or "") or {}).get("peak_flops")
    bq = (roofs.get("memory") or {}).get("bandwidth")
    peak = (pq or {}).get("value")
    faster = tuple(
        sorted(
            (m, float(r["peak_flops"]["value"]))
            for m, r in roofs.items()
            if m not in ("memory", math)
            and ((r or {}).get("peak_flops") or {}).get("value")
            and peak
            and float(r["peak_flops"]["value"]) > float(peak)
        )
    )
    peak_check = (check[0],) if check[0] else ()
    bw_check = (check[1],) if check[1] else ()
    if not cpu:
        return Suspects(peak_check, bw_check, faster=faster)
    return Suspects(
        doubts(pq, threads_run, flops_per_call) + peak_check,
        doubts(bq, threads_run) + bw_check,
        unknown_load(pq),
        faster,
        unknown_load(bq),
    )


def roof_notes(roofs: Mapping[str, Any], *, cpu: bool, threads_run: int | None) -> list[str]:
    """One note per CPU roof that is not this run's quiet, same-thread measurement."""
    if not cpu:
        return []
    notes, unknown = [], []
    for name in sorted(roofs):
        for q in (roofs[name] or {}).values():
            if not isinstance(q, Mapping) or q.get("provenance") != "measured":
                continue
            t = measured_threads(q)
            if t and threads_run and t != threads_run:
                notes.append(
                    f"{name} roof: measured with {_threads(t)}, this run used {threads_run} "
                    "(peaks are per thread count: this one is not this run's)"
                )
            u = _under(q) or {}
            if u.get("busy") is True:
                notes.append(
                    f"{name} roof: measured on a busy machine (load {_load(u)} on "
                    f"{u.get('cpus')} CPUs, {u.get('threads')} threads): likely too low"
                )
            if unknown_load(q):
                unknown.append(name)
    if unknown:
        notes.append(
            f"{', '.join(unknown)} roof(s): load at measurement not recorded (old peaks cache); "
            "`perfsuite peaks --refresh` on a quiet machine records it"
        )
    return notes


SLOW = 0.85  # below this share of its roof the machine was contended during the window
FAST = 1.05  # above this the roof is too low (a median of 3 beat the best of several)


@dataclass(frozen=True)
class WindowSpeed:
    """One benchmark of the check against its roof."""

    kind: str  # "matmul" | "conv" | "copy"
    roof: str  # the roof it measures: a math ("fp32") or "memory"
    before: float  # FLOP/s or byte/s
    after: float
    roof_value: float
    same_benchmark: bool  # the roof was measured at this size (else a rough comparison)
    ratio: float  # mean of both sides over the roof: the machine's speed during the window

    def text(self) -> str:
        what = "memory roof" if self.kind == "copy" else f"{self.roof} roof"
        rough = "" if self.same_benchmark else " (the roof was measured at another size)"
        return (
            f"{self.ratio:.0%} of the {what}{rough} (before {self.before / self.roof_value:.0%}, "
            f"after {self.after / self.roof_value:.0%})"
        )


def _value(q: Any) -> float | None:
    v = q.get("value") if isinstance(q, Mapping) else None
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def window_speeds(record: Mapping[str, Any], roofs: Mapping[str, Any]) -> list[WindowSpeed]:
    """The check's benchmarks that have both sides and a roof to compare with.

    `roofs`: the roofs the record is judged by (perfsuite.devices.roofs layout)."""
    check = (record.get("timeline") or {}).get("machine_check") or {}
    out = []
    for kind in ("matmul", "conv"):  # the compute roof's own benchmark (a CPU's may be a conv)
        mm = check.get(kind) or {}
        math = DTYPE_MATH.get(str(mm.get("dtype") or "").lower())
        peak = ((roofs.get(math or "") or {}).get("peak_flops")) or {}
        size = mm.get("n") if kind == "matmul" else (mm.get("shape") or [None])[0]
        out.append(_speed(kind, math or "", mm, peak, size))
    cp = check.get("copy") or {}
    bw = (roofs.get("memory") or {}).get("bandwidth") or {}
    out.append(_speed("copy", "memory", cp, bw, cp.get("bytes")))
    return [s for s in out if s is not None]


def _speed(
    kind: str, roof: str, entry: Mapping[str, Any], q: Mapping[str, Any], size: Any
) -> WindowSpeed | None:
    before, after, value = _value(entry.get("before")), _value(entry.get("after")), _value(q)
    if before is None or after is None or value is None or not roof:
        return None
    measured_size = (q.get("measured_under") or {}).get("size")
    ratio = (before + after) / 2.0 / value
    return WindowSpeed(kind, roof, before, after, value, measured_size == size, ratio)


_OPS_OF = {"memory": "memory-bound"}  # else "<math>-roof" ops: fp32-roof, tf32-roof, ...


def speed_notes(speeds: list[WindowSpeed], record: Mapping[str, Any]) -> list[str]:
    """What the check says about this window's roof fractions (nothing when it ran at speed)."""
    check = (record.get("timeline") or {}).get("machine_check") or {}
    if not speeds:
        return [f"machine check: {check['note']}"] if check.get("note") else []
    notes = []
    slow = [s for s in speeds if s.ratio < SLOW]
    if slow:
        # only the slow roofs' ops are understated; a roof checked fast is named below
        which = " and ".join(sorted({_OPS_OF.get(s.roof, f"{s.roof}-roof") for s in slow}))
        notes.append(
            "machine contended during the profile window: its roofs' own benchmarks ran at "
            + "; ".join(s.text() for s in slow)
            + f". Fractions of roof of {which} ops understate what they reach on a quiet "
            "machine (and repeated runs disagree); compare runs whose checks agree"
        )
    for s in speeds:
        if s.ratio > FAST:
            notes.append(
                f"machine check: the {s.kind} ran at {s.text()}: that roof is too low "
                "(measured slower than this machine runs; `perfsuite peaks --refresh`, with "
                "the run's --device and --threads, measures it again)"
            )
    return notes


def check_line(speeds: list[WindowSpeed]) -> str:
    """The check in one line (CLI and report alike); '' when the record has none."""
    if not speeds:
        return ""
    return "machine check next to the window (the roofs' own benchmarks): " + "; ".join(
        f"{s.kind} at {s.text()}" for s in speeds
    )


def roof_too_low(speeds: list[WindowSpeed], roof: str) -> str:
    """Evidence against the `roof` for `suspects`: '' unless the check beat it."""
    for s in speeds:
        if s.roof == roof and s.ratio > FAST:
            return f"its own benchmark ran at {s.ratio:.0%} of it next to the window"
    return ""


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


def run_flag(
    frac: float,
    suspects_of: Callable[[str | None], Suspects],
    maths: Mapping[str, OpMath],
    by_math: Mapping[str, float],
) -> str:
    """The whole run above its roofs (`frac`: roof time over step time, > 1): the roofs the
    record doubts first, then the model. `suspects_of(math)`: the evidence against that roof
    (`Context.suspects`); `maths`: each op's math; `by_math`: counted FLOPs per math."""
    low, unknown = [], []
    for math in sorted(by_math, key=lambda k: -by_math[k]):
        s = suspects_of(math)
        if s.peak:
            low.append(f"the measured {math} peak is too low ({'; '.join(s.peak)})")
        elif s.peak_unknown:
            unknown.append(math)
    mem = suspects_of(None).bandwidth
    if mem:
        low.append(f"the measured bandwidth is too low ({'; '.join(mem)})")
    guessed = sorted(
        {o.math for o in maths.values() if o.evidence == "policy" and o.math in by_math}
    )
    faster = sorted({m for g in guessed for m, _ in suspects_of(g).faster})
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

    Why: a fraction of a roof some op exceeds is not a clean fact. Each cause a flag names
    (a roof too low, FLOPs or bytes over-counted, a faster math) lengthens the op's modeled
    roof time or raises the achieved rate; under-attributed time changes neither: the true
    fraction is at most the one shown."""
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
    flagged_ops = {op for r in roofs for op, _ in flagged[r]}
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
        f"{'; '.join(parts)}; {'it is' if len(flagged_ops) == 1 else 'they are'} flagged as a "
        "model or ceiling error (their notes name the likely causes). Each such cause would "
        "make the true fraction lower or leave it: read it as an upper bound, and the run's "
        "utilization of the same roofs likewise"
    )
    doubted = {r: [op for op, _ in flagged[r]] for r in roofs}
    return dataclasses.replace(run, doubted_roofs=doubted, doubts=doubts), note
