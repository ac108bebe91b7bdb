"""MLPerf folder scores: the result summarizer's olympic average over a folder's runs.

Why here and not in perfsuite.stats: MLPerf's summarizer drops a per-benchmark number of runs
at each end (4 for unet3d, 1 otherwise) and tolerates that many runs that did not converge; a
`result_*.txt` it cannot read counts as one of those. With one dropped it is
`perfsuite.stats.olympic_mean`, reasons included (tested).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from perfsuite.importers.common import Imported, ImportFailure, slug
from perfsuite.record.olympic import max_dropped
from perfsuite.safeio import load_json
from perfsuite.stats import olympic_mean


def scaling_factor(folder: Path) -> tuple[float, str | None]:
    """The folder's `scaling.json` factor (1.0 without one) and a problem, if any.

    MLPerf's result summarizer multiplies a benchmark folder's olympic mean by this factor
    (submissions that borrowed hyper-parameters); published scores include it.
    """
    path = folder / "scaling.json"
    if not path.exists():
        return 1.0, None
    try:
        data = load_json(path, ImportFailure, max_bytes=1024 * 1024, max_depth=8)
    except ImportFailure as exc:
        return 1.0, str(exc)
    value = data.get("scaling_factor") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 1.0, f"{path}: field scaling_factor: missing or not a number"
    if not (math.isfinite(value) and value > 0):
        return 1.0, f"{path}: field scaling_factor: {value!r} is not a positive number"
    return float(value), None


def _count_flag(name: str, runs: int, required: int) -> str | None:
    """MLPerf's package checker wants exactly `required` result files per benchmark folder."""
    if not required or runs == required:
        return None
    if runs < required:
        return f"{runs} runs; MLPerf requires {required} for {name} (score is indicative only)"
    return f"{runs} runs; an MLPerf submission has exactly {required} for {name}"


def _is_result(path: Path) -> bool:
    return path.name.startswith("result_") and path.suffix == ".txt"


def _group_id(first: Imported, names: list[str], folder: str) -> str:
    """The folder's group id: its runs' id less the file stem (round, submitter, system)."""
    run_id = str(first.record["run_id"])
    stem = slug(Path(first.record["source"]["files"][0]).stem)
    if (
        len(names) == 1
        and run_id.endswith("-" + stem)
        and first.record["extra"]["mlperf"].get("submitter")
    ):
        return run_id[: -len(stem) - 1]
    return f"mlperf-{slug(names[0])}-{slug(Path(folder).name)}"


def _by_folder(
    items: list[Imported], failed: list[Path] | None
) -> tuple[dict[str, list[Imported]], dict[str, list[Path]]]:
    """The imported `result_*.txt` runs by folder, and the unreadable ones of those folders."""
    groups: dict[str, list[Imported]] = {}
    for it in items:
        path = Path(it.record["source"]["files"][0])
        if _is_result(path):
            groups.setdefault(str(path.parent), []).append(it)
    unread: dict[str, list[Path]] = {}
    for path in failed or []:
        if _is_result(path) and str(path.parent) in groups:
            unread.setdefault(str(path.parent), []).append(path)
    return groups, unread


def _folder_score(
    folder: str, members: list[Imported], bad: list[Path], gid: str, names: list[str]
) -> dict[str, Any]:
    """One folder's score and how it came about (runs, minutes, dropped, factor, flags)."""
    flags: list[str] = []
    if bad:
        flags.append(
            f"{len(bad)} result file(s) not readable ({', '.join(p.name for p in bad)}): "
            "counted as runs that did not converge, as MLCommons' summarizer does"
        )
    if len(names) > 1:
        flags.append(f"mixed benchmarks {names}: no score")
    minutes = []
    for i, m in enumerate(members):
        m.record["group"] = {"id": gid, "index": i, "size": len(members)}
        tta = m.record["time_to_accuracy"]
        minutes.append(tta["time_s"] / 60.0 if tta["reached"] else None)
    minutes += [None] * len(bad)
    runs = len(members) + len(bad)
    required = 0
    if len(names) == 1:  # a mixed folder has no one count: each benchmark has its own
        required = int(members[0].record["extra"]["mlperf"]["required_runs"] or 0)
        count = _count_flag(names[0], runs, required)
        if count:
            flags.append(count)
    dropped = max_dropped(names[0])
    om = olympic_mean(minutes, dropped) if len(names) == 1 else None
    factor, problem = scaling_factor(Path(folder))
    if problem:
        flags.append(f"{problem}: no score")
        om = None
    elif factor != 1.0:
        flags.append(f"scaling.json factor {factor:g} applied (as MLPerf's summarizer does)")
    score = None if om is None or om.value is None else om.value * factor
    mlperf = members[0].record["extra"]["mlperf"]
    count = members[0].record["hardware"].get("count")
    return {
        "folder": folder,
        "group_id": gid,
        "benchmark": names[0] if len(names) == 1 else None,
        "runs": runs,
        "unreadable": [str(p) for p in bad],
        "round": mlperf.get("round"),
        "submitter": mlperf.get("submitter"),
        "system": mlperf.get("system"),
        "accelerators": count,
        "converged": sum(v is not None for v in minutes),
        "required_runs": required or None,
        "dropped_each_end": dropped,
        "minutes": minutes,
        "score_min": score,
        # time x accelerators, so that systems of different sizes compare
        "accelerator_min": None if score is None or not count else score * count,
        "olympic_mean_min": None if om is None else om.value,
        "scaling_factor": factor,
        "kept_min": [] if om is None else list(om.kept),
        "reason": None if om is None else om.reason,
        "flags": flags,
    }


def score_folders(items: list[Imported], failed: list[Path] | None = None) -> list[dict[str, Any]]:
    """MLPerf score of each folder holding `result_*.txt` files; sets each record's `group`.

    Score = `perfsuite.stats.olympic_mean` of the runs' time to train in minutes (a run that did
    not converge, or a `result_*.txt` in `failed` that could not be read, counting as the
    slowest; 4 dropped at each end for unet3d, else 1), times the folder's `scaling.json`
    factor as in MLPerf's result summarizer. A run count other than the rules' is flagged.
    """
    groups, unread = _by_folder(items, failed)
    scores = []
    used_gids: set[str] = set()
    for folder, members in sorted(groups.items()):
        names = sorted({m.record["task"]["name"] for m in members})
        gid = _group_id(members[0], names, folder)
        if gid in used_gids:  # two systems' resnet/ folders: never one group
            gid += "-" + hashlib.sha256(folder.encode()).hexdigest()[:6]
        used_gids.add(gid)
        scores.append(_folder_score(folder, members, sorted(unread.get(folder, [])), gid, names))
    return scores
