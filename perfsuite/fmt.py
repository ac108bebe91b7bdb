"""Human formatting shared by the CLI and the report: SI prefixes, percentages, text tables.

Formatting only changes how a number is shown; JSON output always carries the raw value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


# Record units spelled out ("byte") shown in their SI symbol, so MB and GB/s read the same in
# every command and in the report.
_SYMBOLS = {"byte": "B", "byte/s": "B/s", "bytes": "B"}


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """`si(2.5e12, "FLOP/s")` -> "2.5 TFLOP/s", `si(4e7, "byte")` -> "40 MB". None/NaN -> "n/a"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    unit = _SYMBOLS.get(unit, unit)
    # the prefix is chosen after rounding: 999.7 µs reads "1 ms", not "1e+03 µs"
    value = float(f"{value:.{digits}g}")
    mag = abs(value)
    if mag >= 1.0:
        scale, prefix = si_prefix(value)
        return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()
    if mag == 0:
        return f"0 {unit}".rstrip()
    for scale, prefix in [(1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]:
        if mag >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()


# A fraction shown as a percentage only up to this size (100,000%): past it the figure is a
# bug or bad input (validate names the field), and its digits would fill the screen.
PCT_LIMIT = 1e3


def pct(fraction: float | None, digits: int = 1) -> str:
    """0.1234 -> "12.3%"; past +-PCT_LIMIT (infinity included), ">100,000%" (or
    "<-100,000%"), never its digits; None or NaN -> "n/a"."""
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "n/a"
    if abs(fraction) > PCT_LIMIT:
        return f"{'>' if fraction > 0 else '<-'}{100 * PCT_LIMIT:,.0f}%"
    return f"{100.0 * fraction:.{digits}f}%"


def si_prefix(value: float) -> tuple[float, str]:
    """The SI scale and prefix `si` would show `value` in (1.0, "" below a thousand)."""
    mag = abs(value)
    return next(((sc, pre) for sc, pre in _PREFIXES if mag >= sc), (1.0, ""))


def ratio(value: float | None) -> str:
    """A ratio with its leading "x", readable at any size: "x1.440", "x18,141", "x0.00074"
    (three decimals would read 0.00074 as x0.001, and .3g large ones as x1.81e+04)."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if abs(round(value, 3)) >= 100:  # the form is chosen after rounding: x100, not x100.000
        return f"x{value:,.0f}"
    if abs(value) >= 0.01 or value == 0:
        return f"x{value:.3f}"
    return f"x{value:.2g}"


def rel(fraction: float | None) -> str:
    """A relative difference: 3 significant digits however small ("-4.93e-05%"), whole
    percents with thousands separators past 1,000% ("+126,000%")."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    pct_value = float(f"{100 * fraction:.3g}")  # rounded first: 999.6% reads +1,000%
    return f"{pct_value:+,.0f}%" if abs(pct_value) >= 1000 else f"{pct_value:+.3g}%"


def metric(fraction: float | None, scale: str = "percent") -> str:
    """A metric held as a fraction, shown as its task states it, without padding digits:
    percent 0.93 -> "93%", 0.935 -> "93.5%"; score 0.75 -> "0.75"."""
    if fraction is None or (isinstance(fraction, float) and not math.isfinite(fraction)):
        return "n/a"
    if scale == "percent":
        return f"{round(100.0 * fraction, 6):g}%"
    return f"{round(fraction, 8):g}"


def duration(seconds: float | None) -> str:
    """One duration style for every command and the report: "12.34 s" under a minute, then
    "4m05s" and "1h02m03s" (whole seconds: the long form is for reading, JSON keeps seconds)."""
    if seconds is None or (isinstance(seconds, float) and not math.isfinite(seconds)):
        return "n/a"
    if abs(seconds) < 60:
        return f"{seconds:.2f} s" if abs(seconds) >= 0.01 or seconds == 0 else si(seconds, "s")
    sign = "-" if seconds < 0 else ""
    minutes, sec = divmod(round(abs(seconds)), 60)
    if minutes < 60:
        return f"{sign}{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}h{minutes:02d}m{sec:02d}s"


def usd(value: float | None) -> str:
    """US dollars, never in exponent notation: 1234.5 -> "$1,234.50", 0.000123 -> "$0.000123"
    (three significant digits below a cent, so small per-run costs do not read as $0.00)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if value == 0 or abs(value) >= 0.01:
        return f"${value:,.2f}".replace("$-", "-$")
    decimals = 2 - math.floor(math.log10(abs(value)))
    return f"${value:.{decimals}f}".replace("$-", "-$")


def printable(text: str) -> str:
    """`text` with control characters escaped (\\x1b, \\n, ...), so names taken from records
    and files cannot move the cursor, recolour or rewrite the user's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


class PrintableStream:
    """A text stream that escapes, as `printable` does, every control or format character
    written to it except newline and tab. The CLI writes its standard output through one, so
    no run id, model name or path taken from a record (ESC, CR, U+202E) reaches the terminal
    raw, whichever command prints it: the one place terminal output is made safe."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if not text.isprintable():
            text = "".join(c if c.isprintable() or c in " \n\t" else repr(c)[1:-1] for c in text)
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding...
        return getattr(self._stream, name)


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


_KERNEL_NOISE = re.compile(r"^void |<unnamed>::|\b(?:at::native::|at::|cudnn::)")


def short_kernel_name(name: str) -> str:
    """A kernel name without `void` and the namespaces most names share, so that a cut name
    keeps the part that tells kernels apart (`--json` keeps the whole name)."""
    return _KERNEL_NOISE.sub("", name)
