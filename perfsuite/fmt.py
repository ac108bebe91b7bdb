"""Human formatting shared by the CLI and the report: SI prefixes, percentages, text tables.

Formatting only changes how a number is shown; JSON output always carries the raw value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """`si(2.5e12, "FLOP/s")` -> "2.50 TFLOP/s". None/NaN -> "n/a"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    mag = abs(value)
    for scale, prefix in _PREFIXES:
        if mag >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()
    if mag == 0:
        return f"0 {unit}".rstrip()
    for scale, prefix in [(1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]:
        if mag >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()


def pct(fraction: float | None, digits: int = 1) -> str:
    """0.1234 -> "12.3%"."""
    if fraction is None or (isinstance(fraction, float) and not math.isfinite(fraction)):
        return "n/a"
    return f"{100.0 * fraction:.{digits}f}%"


# How each task metric is named and shown (DAWNBench: "94% top-1", "93% top-5", "0.75 F1").
# Records keep every metric as a fraction; this is only how people read it.
METRICS: dict[str, tuple[str, str]] = {
    "top1": ("top-1", "percent"),
    "top5": ("top-5", "percent"),
    "f1": ("F1", "fraction"),
    "exact_match": ("EM", "percent"),
}


def metric_name(metric: str | None) -> str:
    """ "top1" -> "top-1", "f1" -> "F1"; unknown names unchanged."""
    return METRICS.get(str(metric), (str(metric), ""))[0]


def metric_value(metric: str | None, value: float | None, digits: int = 2) -> str:
    """A metric value in its task's unit: top-1 0.94 -> "94%", F1 0.75 -> "0.75"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    unit = METRICS.get(str(metric), ("", ""))[1]
    if unit == "percent":
        return f"{100.0 * value:.{digits}f}".rstrip("0").rstrip(".") + "%"
    return f"{value:.{digits + 2}f}".rstrip("0").rstrip(".") if unit else f"{value:g}"


def target(metric: str | None, threshold: float | None, direction: str | None = "higher") -> str:
    """A task's target as people read it: "top-1 >= 94%", "F1 >= 0.75", "wer <= 0.05"."""
    op = "<=" if direction == "lower" else ">="
    return f"{metric_name(metric)} {op} {metric_value(metric, threshold)}"


def duration(seconds: float | None) -> str:
    """Seconds as "1h02m03s", "4m05.2s" or "12.34 s"."""
    if seconds is None or (isinstance(seconds, float) and not math.isfinite(seconds)):
        return "n/a"
    if seconds < 60:
        return f"{seconds:.2f} s"
    if seconds < 3600:
        tenths = round(seconds * 10)  # round first, so 59.96 s shows as 1m00.0s, not 0m60.0s
        minutes, rest = divmod(tenths, 600)
        return f"{minutes}m{rest / 10:04.1f}s"
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{sec:02d}s"


def usd(value: float | None) -> str:
    """US dollars with enough digits for small per-run costs: 0.000123 -> "$0.000123"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if value == 0 or abs(value) >= 0.01:
        return f"${value:,.2f}"
    return f"${value:.3g}"


def printable(text: str) -> str:
    """`text` with control characters escaped (\\x1b, \\n, ...), so names taken from records
    and files cannot move the cursor, recolour or rewrite the user's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def truncate(text: str, width: int) -> str:
    """`text` cut to at most `width` characters, ending in "..." when it was cut."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[: max(width, 0)]
    return text[: width - 3] + "..."


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], align: str | None = None) -> str:
    """A plain-text table. `align` is one char per column, "l" or "r" (default: numbers right)."""
    cells = [[("" if c is None else printable(str(c))) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    if align is None:
        align = "".join(
            "r" if rows and all(isinstance(r[i], (int, float)) for r in rows) else "l"
            for i in range(len(headers))
        )

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(widths[i]) if align[i] == "r" else v.ljust(widths[i])
            for i, v in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)
