"""Times of a history: ISO 8601 in, one UTC text form out (it sorts as time does)."""

from __future__ import annotations

from datetime import datetime, timezone


def normalized_time(text: str) -> str:
    """`text` (ISO 8601; `Z` or an offset; a naive time is taken as UTC) as
    `YYYY-MM-DDTHH:MM:SS.ffffffZ`; ValueError for anything else."""
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    moment = datetime.fromisoformat(raw)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def short_time(stored: str) -> str:
    """A stored time for tables: `YYYY-MM-DD HH:MM:SS` (UTC), the fraction dropped."""
    return stored[:19].replace("T", " ")
