"""The instance price table: USD per hour by cloud instance type.

The built-in table (`prices.json`, with its sources and date) can be extended or overridden
by a user file with the same format, given with `--prices FILE` or the environment variable
PERFSUITE_PRICES; entries there replace built-in ones of the same instance type. Prices are
list prices ("spec" provenance), never measured. The two cost formulas (a training time and
batch-1 serving at an hourly price) are here too, so the cost analysis and the DAWNBench
importer price with one rule.
"""

from __future__ import annotations

import json
import math
import os
from importlib import resources
from pathlib import Path
from typing import Any

from perfsuite.safeio import InputError, decode_utf8, first_line, json_depth_exceeds, read_bytes

ENV_VAR = "PERFSUITE_PRICES"
BUILTIN = "prices.json"
MAX_PRICE_INT = 10**300  # a JSON integer beyond this has no float value to check
ITEMS = 10_000  # DAWNBench reports inference cost per 10,000 images


class PriceError(InputError):
    """A price file that cannot be used; the message names the file and the field."""


def _read(text: str, origin: str) -> dict[str, dict[str, Any]]:
    if json_depth_exceeds(text.encode("utf-8", "replace"), 16):
        raise PriceError(f"{origin}: JSON nested deeper than the 16-level limit")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise PriceError(f"{origin}: not valid JSON ({where})") from None
    except (ValueError, RecursionError) as exc:
        raise PriceError(f"{origin}: not usable JSON ({first_line(exc)})") from None
    if not isinstance(data, dict) or not isinstance(data.get("instances"), dict):
        raise PriceError(f"{origin}: field instances: expected an object of instance types")
    as_of = data.get("as_of")
    out: dict[str, dict[str, Any]] = {}
    for name, entry in data["instances"].items():
        field = f"instances.{name}.usd_per_hour"
        if not isinstance(entry, dict) or "usd_per_hour" not in entry:
            raise PriceError(f"{origin}: field {field}: missing")
        price = entry["usd_per_hour"]
        if isinstance(price, bool) or not isinstance(price, (int, float)):
            raise PriceError(f"{origin}: field {field}: expected a number, got {price!r}")
        if isinstance(price, int) and abs(price) > MAX_PRICE_INT:  # beyond float range
            raise PriceError(f"{origin}: field {field}: {str(price)[:20]}... is out of range")
        if not math.isfinite(price) or price < 0:
            raise PriceError(f"{origin}: field {field}: must be finite and >= 0, got {price}")
        page = entry.get("source")
        when = entry.get("as_of", as_of)
        out[name] = {
            **entry,
            "usd_per_hour": float(price),
            "as_of": when,
            "table": origin,
            "source": f"{origin}: {name}"
            + (f", {page}" if page else "")
            + (f", as of {when}" if when else ""),
        }
    return out


def builtin_prices() -> dict[str, dict[str, Any]]:
    """The packaged table."""
    text = resources.files("perfsuite.pricing").joinpath(BUILTIN).read_text(encoding="utf-8")
    return _read(text, f"perfsuite/pricing/{BUILTIN}")


def load_prices(path: str | os.PathLike[str] | None = None) -> dict[str, dict[str, Any]]:
    """Built-in prices, overlaid by `path` (or $PERFSUITE_PRICES when `path` is None).

    Returns {instance_type: {usd_per_hour, source, as_of, hardware, ...}}; `source` says which
    file, which pricing page and which date a price came from.
    """
    table = builtin_prices()
    user = path if path is not None else os.environ.get(ENV_VAR) or None
    if user is not None:
        p = Path(user)
        origin = str(p) if path is not None else f"{p} (${ENV_VAR})"
        # a regular file only (a FIFO given to --prices must not hang), 16 MB at most
        text = decode_utf8(read_bytes(p, 16 * 1024 * 1024, PriceError), origin, PriceError)
        table.update(_read(text, origin))
    return table


def training_cost_usd(time_s: float, usd_per_hour: float) -> float:
    """Time to accuracy in hours times the hourly price."""
    return time_s / 3600.0 * usd_per_hour


def inference_cost_per_10k_usd(latency_s: float, usd_per_hour: float) -> float:
    """Serving 10,000 items one at a time at batch-1 latency, at the hourly price."""
    return latency_s * ITEMS / 3600.0 * usd_per_hour
