"""The record's `generalization` section: provenance of each result and how results merge
(a newer measurement on the same data replaces the older one; others are kept)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from perfsuite.record import write_record
from perfsuite.version import __version__


def provenance(command: str, data_dir: str | None, seed: int, device: str, record: dict) -> dict:
    """Who measured what: the fields every generalization entry carries."""
    return {
        "provenance": "measured",
        "by": f"perfsuite {__version__} eval {command}",
        "data_dir": str(Path(data_dir).resolve()) if data_dir else None,
        "seed": int(seed),
        "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "checkpoint_sha256": (record.get("checkpoint") or {}).get("sha256"),
    }


def accuracy(top1: float, n: int, ci: Any = None, top5: float | None = None) -> dict:
    out: dict[str, Any] = {"top1": float(top1), "n": int(n)}
    out["top1_ci95"] = list(ci) if ci else None
    out["top5"] = None if top5 is None else float(top5)
    return out


def store(record: dict[str, Any], kind: str, entry: dict[str, Any]) -> None:
    """Put `entry` into record.generalization[kind] and rewrite the record atomically.
    `shift` and `probe` keep one entry per data folder; `corruptions` is a single entry."""
    gen = record.get("generalization") or {}
    if kind == "corruptions":
        gen["corruptions"] = entry
    else:
        kept = [e for e in gen.get(kind) or [] if e.get("data_dir") != entry.get("data_dir")]
        gen[kind] = [*kept, entry]
    record["generalization"] = gen
    write_record(record["_dir"], record)
