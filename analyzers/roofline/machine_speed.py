"""How fast the machine ran while the profile window was timed, against the roofs it is
judged by: the record's `timeline.machine_check` (perfsuite.ceilings.probe) over the roofs.

Why: a roof is the best the machine did when it was quiet; the window's ops ran at whatever
speed the machine had at the time. When the roofs' own benchmark, repeated next to the window,
reaches only 60% of its roof, every op's fraction of roof is understated by about that much
(and repeated runs disagree); when it beats its roof, the roof is too low and a point above it
is a ceiling error, not a result. Pure, torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perfsuite.devices.maths import DTYPE_MATH

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
    """Evidence for perfsuite.analyzers.roofline.doubts: '' unless the check beat the `roof`."""
    for s in speeds:
        if s.roof == roof and s.ratio > FAST:
            return f"its own benchmark ran at {s.ratio:.0%} of it next to the window"
    return ""
