"""Where an MLPerf result log sits in a submission: round, submitter, system, hardware.

Why from the path: the logs name neither the round nor the system reliably (many log
`SUBMISSION_PLATFORM_PLACEHOLDER`), while MLCommons' results repositories are laid out as
`<usage>_results_vX.Y/<submitter>/results/<system>/<benchmark>/result_N.txt`, with the
system described in `<submitter>/systems/<system>.json` (accelerator model, nodes,
accelerators per node, host processor, framework).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.devices.accelerators import accelerator
from perfsuite.importers.common import ImportFailure
from perfsuite.safeio import load_json

_ROUND = re.compile(r"^(training|hpc)_results_v(\d+)\.(\d+)(?:\.(\d+))?$", re.IGNORECASE)
# what submitters' logs carry before a submission is filled in: never a hardware name
PLACEHOLDERS = ("PLACEHOLDER", "UNKNOWN_MLPERF")
SYSTEM_JSON_BYTES = 1024 * 1024


def is_placeholder(text: Any) -> bool:
    return isinstance(text, str) and any(p in text.upper() for p in PLACEHOLDERS)


@dataclass(frozen=True)
class Place:
    """What the path says: usage and round ("5.1.0") from a `*_results_vX.Y` folder above the
    log, submitter and system from `<submitter>/results/<system>/<benchmark>/`."""

    usage: str | None = None
    ruleset: str | None = None
    submitter: str | None = None
    system: str | None = None
    system_json: Path | None = None


def place(path: Path) -> Place:
    parts = path.resolve().parts if path.is_absolute() else path.absolute().parts
    usage = ruleset = None
    for part in parts:
        m = _ROUND.match(part)
        if m:
            usage = m.group(1).lower()
            ruleset = f"{int(m.group(2))}.{int(m.group(3))}.{int(m.group(4) or 0)}"
    submitter = system = None
    system_json = None
    if len(parts) >= 5 and parts[-4] == "results":
        submitter, system = parts[-5], parts[-3]
        system_json = path.parent.parent.parent.parent / "systems" / f"{system}.json"
    return Place(usage, ruleset, submitter, system, system_json)


def _int(v: Any) -> int | None:
    try:
        out = int(str(v).strip())
    except (TypeError, ValueError):
        return None
    return out if out >= 0 else None


def system_description(pl: Place, flags: list[str]) -> dict[str, Any] | None:
    """The system's `systems/<system>.json`, None (flagged) where it is missing or bad."""
    if pl.system_json is None:
        return None
    if not pl.system_json.is_file():
        flags.append(f"{pl.system_json}: no system description beside the results")
        return None
    try:
        desc = load_json(pl.system_json, ImportFailure, SYSTEM_JSON_BYTES, max_depth=8)
    except ImportFailure as exc:
        flags.append(f"{exc}: system description not read")
        return None
    if not isinstance(desc, dict):
        flags.append(f"{pl.system_json}: not a JSON object; system description not read")
        return None
    return desc


def hardware(desc: dict[str, Any] | None, platform: Any, flags: list[str]) -> dict[str, Any]:
    """The record's hardware: the accelerator model and total count from the system
    description (nodes x accelerators per node), its host processor and system name; without
    one, the log's `submission_platform` unless it is a placeholder."""
    if desc is not None:
        model = desc.get("accelerator_model_name")
        model = model if isinstance(model, str) and model and not is_placeholder(model) else None
        nodes, per_node = _int(desc.get("number_of_nodes")), _int(desc.get("accelerators_per_node"))
        count = nodes * per_node if nodes is not None and per_node is not None else None
        if count is None:
            flags.append("system description: number_of_nodes x accelerators_per_node unknown")
        host = desc.get("host_processor_model_name")
        system = desc.get("system_name")
        return {
            "name": model,
            "accelerator": accelerator(model),
            "count": count,
            "instance_type": None,
            "system": system if isinstance(system, str) and system else None,
            "host": host if isinstance(host, str) and host else None,
            "nodes": nodes,
        }
    name = None if platform is None else str(platform)
    if is_placeholder(name):
        flags.append(
            f"submission_platform {name!r} is a placeholder: hardware name unknown "
            "(no systems/<system>.json found beside the results)"
        )
        name = None
    return {"name": name, "accelerator": accelerator(name), "count": None, "instance_type": None}


def framework(desc: dict[str, Any] | None) -> str | None:
    fw = None if desc is None else desc.get("framework")
    return fw if isinstance(fw, str) and fw and not is_placeholder(fw) else None
