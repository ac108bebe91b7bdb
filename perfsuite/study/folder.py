"""A study folder: `study.json` (what the study is and where each configuration's runs are)
plus one ordinary run folder per run under `configs/NN-name/`.

The manifest is written atomically and validated on load with a one-line error naming the file
and the field. Resume needs no bookkeeping of its own: a run is finished when a record with
the configuration's switches, process count and the repeat's seed has a final status (reached,
not_reached, diverged) in the configuration's folder; crashed and killed runs are run again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.analyzers.results.distributed import world_size
from perfsuite.analyzers.results.record_view import FINISHED
from perfsuite.analyzers.runs.study import analyze_study
from perfsuite.record import RecordError, load_record, write_json_atomic
from perfsuite.record.model import utc_now
from perfsuite.study.plan import Config
from perfsuite.study.spec import StudyError, StudySpec, spec_from_dict
from perfsuite.workloads import get_workload

MANIFEST = "study.json"
SCHEMA = "perfsuite.study"
SCHEMA_VERSION = 2


def _v1_to_v2(manifest: dict[str, Any]) -> None:
    """Study manifest version 1 -> 2: the run setting `keep_going` is `all_epochs`, the name of
    its flag (`--all-epochs`) and of the run option it sets."""
    spec = manifest.get("spec")
    run = spec.get("run") if isinstance(spec, dict) else None
    if isinstance(run, dict) and "keep_going" in run:
        run.setdefault("all_epochs", run.pop("keep_going"))


@dataclass(frozen=True)
class Study:
    """A loaded study folder."""

    path: Path
    study_id: str
    spec: StudySpec
    configs: list[Config]
    manifest: dict[str, Any]


def seeds(spec: StudySpec) -> list[int]:
    """Repeat r of every configuration uses seed + r: configurations are compared on the same
    seeds."""
    return [spec.seed + r for r in range(spec.repeats)]


def new_manifest(study_id: str, spec: StudySpec, configs: list[Config]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "study_id": study_id,
        "created_at": utc_now(),
        "updated_at": utc_now(),
        "spec": spec.to_dict(),
        "reference": configs[0].name,
        "configurations": [{**c.to_dict(), "runs": []} for c in configs],
    }


def _field(origin: str, where: str, why: str) -> StudyError:
    return StudyError(f"{origin}: field {where}: {why}")


def _check_config(raw: Any, i: int, origin: str) -> Config:
    where = f"configurations[{i}]"
    if not isinstance(raw, dict):
        raise _field(origin, where, "expected an object")
    for key, kind in (("name", str), ("description", str), ("folder", str), ("switches", list)):
        if not isinstance(raw.get(key), kind):
            raise _field(origin, f"{where}.{key}", f"expected a {kind.__name__}")
    folder = raw["folder"]
    if folder.startswith("/") or ".." in Path(folder).parts:
        raise _field(origin, f"{where}.folder", f"{folder!r} must stay inside the study folder")
    batch = raw.get("batch_size")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise _field(origin, f"{where}.batch_size", f"expected a positive integer, got {batch!r}")
    if raw.get("index") != i:
        raise _field(origin, f"{where}.index", f"expected {i}, got {raw.get('index')!r}")
    if not isinstance(raw.get("runs", []), list):
        raise _field(origin, f"{where}.runs", "expected a list")
    nproc = raw.get("nproc", 1)  # absent in studies written before scaling studies
    if isinstance(nproc, bool) or not isinstance(nproc, int) or nproc < 1:
        raise _field(origin, f"{where}.nproc", f"expected a positive integer, got {nproc!r}")
    return Config(i, raw["name"], raw["description"], tuple(raw["switches"]), batch, folder, nproc)


def load_study(path: str | Path) -> Study:
    """Load and validate `path/study.json` (or the manifest file itself)."""
    path = Path(path)
    file = path if path.name == MANIFEST else path / MANIFEST
    origin = str(file)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StudyError(f"{origin}: no study manifest here (not a study folder)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise StudyError(f"{origin}: cannot read ({exc})") from None
    if not isinstance(raw, dict):
        raise _field(origin, "(top level)", "expected a JSON object")
    if raw.get("schema") != SCHEMA:
        raise _field(origin, "schema", f"{raw.get('schema')!r} is not {SCHEMA!r}")
    version = raw.get("schema_version")
    if not isinstance(version, int) or not 1 <= version <= SCHEMA_VERSION:
        raise _field(origin, "schema_version", f"{version!r} is not one this perfsuite reads")
    if version == 1:
        _v1_to_v2(raw)
        raw["schema_version"] = 2
    if not isinstance(raw.get("study_id"), str) or not raw["study_id"]:
        raise _field(origin, "study_id", "expected a non-empty string")
    spec = spec_from_dict(raw.get("spec"), f"{origin} (spec)")
    configs_raw = raw.get("configurations")
    if not isinstance(configs_raw, list) or not configs_raw:
        raise _field(origin, "configurations", "expected a non-empty list")
    configs = [_check_config(c, i, origin) for i, c in enumerate(configs_raw)]
    if raw.get("reference") != configs[0].name:
        raise _field(origin, "reference", f"expected {configs[0].name!r} (the first configuration)")
    return Study(file.parent, raw["study_id"], spec, configs, raw)


def write_manifest(study: Study) -> None:
    study.manifest["updated_at"] = utc_now()
    write_json_atomic(study.path / MANIFEST, study.manifest)


def config_records(study: Study, config: Config) -> list[dict[str, Any]]:
    """The records of one configuration: per seed the latest finished one, else the latest
    unfinished one (a crash that resume has not replaced yet). Records of other switches or
    seeds (a folder edited by hand) are left out."""
    by_seed: dict[Any, dict[str, Any]] = {}
    folder = study.path / config.folder
    for file in sorted(folder.glob("*/run.json")):
        try:
            rec = load_record(file)
        except RecordError:
            continue  # a torn or foreign file is not a finished run: resume runs it again
        cfg = rec.get("config") or {}
        if list(cfg.get("switches") or []) != list(config.switches):
            continue
        if cfg.get("batch_size") != config.batch_size:
            continue
        if world_size(rec) != config.nproc:
            continue
        seed = cfg.get("seed")
        old = by_seed.get(seed)
        if old is None or _rank(rec) >= _rank(old):
            by_seed[seed] = rec
    wanted = seeds(study.spec)
    return [by_seed[s] for s in wanted if s in by_seed]


def _rank(rec: dict[str, Any]) -> tuple[bool, str]:
    return rec.get("status") in FINISHED, str(rec.get("created_at"))


def refresh_runs(study: Study) -> dict[str, list[dict[str, Any]]]:
    """Rebuild the manifest's per-configuration run lists from the folder; returns the records
    by configuration name."""
    out = {}
    for config, entry in zip(study.configs, study.manifest["configurations"], strict=True):
        recs = config_records(study, config)
        entry["runs"] = [
            {
                "seed": (r.get("config") or {}).get("seed"),
                "run_id": r.get("run_id"),
                "status": r.get("status"),
                "folder": str(Path(r["_path"]).parent.relative_to(study.path))
                if r.get("_path")
                else None,
            }
            for r in recs
        ]
        out[config.name] = recs
    return out


def pending(study: Study) -> list[tuple[Config, int, int]]:
    """(configuration, repeat index, seed) of every run that has no finished record yet."""
    todo = []
    for config in study.configs:
        done = {
            (r.get("config") or {}).get("seed")
            for r in config_records(study, config)
            if r.get("status") in FINISHED
        }
        for r, seed in enumerate(seeds(study.spec)):
            if seed not in done:
                todo.append((config, r, seed))
    return todo


def analyze_folder(folder: str | Path) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    """(StudyResult, records by configuration) of a study folder, the one analysis that the
    CLI, the report and the Python API show. Before any run, the heading names the
    workload's own target. Raises StudyError for a folder that is not a study."""
    study = load_study(folder)
    records = refresh_runs(study)
    metric, threshold = (None, None) if any(records.values()) else _workload_target(study.spec)
    result = analyze_study(
        study.manifest, records, default_metric=metric, default_threshold=threshold
    )
    return result, records


def _workload_target(spec: Any) -> tuple[str | None, float | None]:
    """The workload's metric and default threshold, for the heading of a study with no run
    record yet; (None, None) when the workload cannot be loaded here (a user file moved)."""
    try:
        wl = get_workload(spec.workload, spec.run.framework)
    except (KeyError, ValueError, ImportError, OSError):  # only the heading needs it
        return None, None
    return wl.metric, wl.default_threshold
