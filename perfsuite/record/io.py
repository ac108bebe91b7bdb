"""Atomic writing and validated loading of run records."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from perfsuite.record import checks
from perfsuite.record.fastschema import UnsupportedSchema, compile_schema
from perfsuite.record.migrate import migrate, newer_problem
from perfsuite.record.model import SCHEMA, utc_now
from perfsuite.record.owner import stale_reason
from perfsuite.safeio import InputError, load_json

RECORD_NAME = "run.json"
# Records are small (a long run with per-op tables is well under 1 MB); a 64-level limit is
# ten times the depth any writer produces.
MAX_RECORD_BYTES = 32 * 1024 * 1024
MAX_RECORD_DEPTH = 64
LOCK_NAME = ".run.json.lock"
# Sections that commands attach to an existing run (`counters --into`, `eval`): a writer that
# does not hold one in memory (the running run) keeps the one on disk instead of dropping it.
ATTACHED_SECTIONS = ("counters", "generalization")


class RecordError(InputError):
    """A record that cannot be read or does not follow the schema. The message is one line."""


def _import_jsonschema() -> Any:
    """jsonschema, without the seconds its optional IRI format checker can cost.

    jsonschema's package import loads every optional format checker it finds; rfc3987-syntax
    (installed with jupyter, through jsonschema[format-nongpl]) compiles a grammar when imported,
    seconds of CPU that every `perfsuite.open` or analysis command would pay.
    Records are validated without format checking, so that checker is never used here: the
    module is hidden during the import (jsonschema skips a checker whose import fails) and
    importable again afterwards. The cost of hiding it: jsonschema's FormatChecker in this
    process does not check the "iri" formats.
    """
    import sys

    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        import jsonschema

        return jsonschema
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import -> ImportError
    try:
        import jsonschema
    finally:
        del sys.modules["rfc3987_syntax"]
    return jsonschema


@cache
def record_schema() -> dict[str, Any]:
    """The record's JSON Schema (run.schema.json), read once per process; do not change it."""
    return json.loads(resources.files("perfsuite.record").joinpath("run.schema.json").read_text())


@cache
def _validator() -> Any:
    """jsonschema's validator of the record schema: the reference, and the wording of errors."""
    return _import_jsonschema().Draft202012Validator(record_schema())


@cache
def _fast_valid() -> Callable[[Any], bool] | None:
    """The record schema compiled into a yes/no test (perfsuite.record.fastschema), once per
    process; None when the schema uses something that compiler does not implement."""
    try:
        return compile_schema(record_schema())
    except UnsupportedSchema:
        return None


def schema_errors(record: Any, fast: bool = True) -> list[Any]:
    """jsonschema's errors for `record`, sorted by field; [] when it is valid.

    `fast`: ask the compiled test first and skip jsonschema when it says valid. jsonschema
    decides whenever the compiled test says no, so its answer and wording are the result
    either way; `fast=False` is the reference path (used by the tests that compare them)."""
    check = _fast_valid() if fast else None
    if check is not None and check(record):
        return []
    return sorted(_validator().iter_errors(record), key=lambda e: [str(p) for p in e.absolute_path])


def _field_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def validate_record(record: Any, origin: str = "<record>", fast: bool = True) -> None:
    """Raise RecordError naming `origin` and the first offending field (`fast`: see
    `schema_errors`; the error is the same either way)."""
    if not isinstance(record, dict):
        raise RecordError(f"{origin}: field (top level): expected a JSON object")
    newer = newer_problem(record, origin)
    if newer:
        raise RecordError(newer)
    if record.get("schema") not in (None, SCHEMA):
        raise RecordError(
            f"{origin}: field schema: {_short(repr(record.get('schema')))} is not {SCHEMA!r}"
        )
    for check in (checks.schema_version_problem, checks.finite_problem):
        problem = check(record)
        if problem:
            raise RecordError(f"{origin}: field {_short(problem[0])}: {_short(problem[1])}")
    errors = schema_errors(record, fast)
    if errors:
        err = errors[0]
        raise RecordError(
            f"{origin}: field {_short(_field_path(err.absolute_path))}: {_short(_message(err))}"
        )
    problem = checks.sidecar_problem(record)
    if problem:
        raise RecordError(f"{origin}: field {_short(problem[0])}: {_short(problem[1])}")


def _message(err: Any) -> str:
    """jsonschema's message, said the way a person fixing the file needs it."""
    if err.validator == "const":
        return f"{_short(repr(err.instance))} is not {err.validator_value!r}"
    if err.validator == "minimum" and err.validator_value == 0:
        return f"{err.instance!r} is negative"
    return err.message


def _short(text: str, width: int = 160) -> str:
    """One line: newlines and other control characters escaped, long text cut."""
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return line if len(line) <= width else line[: width - 3] + "..."


def _finite(obj: Any) -> Any:
    """Replace NaN/inf by None recursively: JSON has no representation for them."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def write_json_atomic(path: str | os.PathLike[str], obj: Any, indent: int | None = 1) -> Path:
    """Write JSON so that readers see the old file or the new one, never a torn one."""
    text = json.dumps(_finite(obj), indent=indent, allow_nan=False, sort_keys=False)
    return write_text_atomic(path, text + "\n")


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Replace `path` with `text` atomically.

    The temp file is made by mkstemp in the target's folder: an unguessable name, created
    exclusively (O_EXCL), so a symlink planted at a predictable `.F.tmp` cannot redirect the
    write; then fsync, rename over the target, fsync the folder.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; records are ordinary shared files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
    return path


@contextlib.contextmanager
def record_lock(run_dir: str | os.PathLike[str], wait: bool = True) -> Iterator[None]:
    """Hold the run folder's writer lock (flock on `.run.json.lock`) for the block.

    Every record writer takes it, so a run rewriting its record and `counters --into` or
    `eval` attaching a section to the same record happen one after the other, never
    interleaved. The lock file is opened without following a symlink. `wait=False`: raise
    BlockingIOError at once when another holder has it (this process's own included).
    """
    path = Path(run_dir) / LOCK_NAME
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _keep_attached(target: Path, record: dict[str, Any]) -> None:
    """Copy into `record` the attached sections that the file on disk has and it lacks."""
    missing = [k for k in ATTACHED_SECTIONS if k not in record]
    if not missing or not target.is_file():
        return
    try:
        on_disk = load_json(target, RecordError, MAX_RECORD_BYTES, MAX_RECORD_DEPTH)
    except RecordError:
        return  # a damaged file is replaced by the valid record being written
    if isinstance(on_disk, dict) and on_disk.get("run_id") == record.get("run_id"):
        for key in missing:
            if key in on_disk:
                record[key] = on_disk[key]


def _remove_temps(run_dir: Path) -> None:
    """Remove the temp files of record writes that never reached their rename (a writer
    killed mid-write); called only while no writer can be writing (the lock is held)."""
    try:
        temps = list(run_dir.glob(f".{RECORD_NAME}.*.tmp"))
    except OSError:
        return
    for tmp in temps:
        with contextlib.suppress(OSError):
            tmp.unlink()


def clean_stale_temps(run_dir: str | os.PathLike[str]) -> None:
    """On opening a record: remove stale `.run.json.*.tmp` files when no writer holds the
    folder's lock (taken without waiting, and only when the lock file exists: a reader never
    creates it)."""
    folder = Path(run_dir)
    lock = folder / LOCK_NAME
    try:
        fd = os.open(lock, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return  # a writer is writing: its temp file is not stale
    try:
        _remove_temps(folder)
    finally:
        os.close(fd)


# A hidden staging folder (`Recorder` writes a run's first record in one, then renames it into
# place) older than this without a readable record is a writer's that was killed.
STAGING_GRACE_S = 60.0


def clean_stale_staging(parent: str | os.PathLike[str]) -> list[Path]:
    """Remove the hidden staging folders under `parent` (`.<run id>.<random>`, holding only
    a first record, its lock and temp files) whose writer is gone: the record's owner process
    ended, or, with no readable record, the folder is older than STAGING_GRACE_S. A run killed
    before its folder appeared thus leaves nothing, and nothing hidden either, once the next
    run into the same folder (or `perfsuite validate` on it) has looked. Returns the removed."""
    import shutil
    import time

    removed = []
    try:
        candidates = [p for p in Path(parent).iterdir() if p.name.startswith(".") and p.is_dir()]
    except OSError:
        return []
    for folder in candidates:
        try:
            names = {p.name for p in folder.iterdir()}
        except OSError:
            continue
        own = {RECORD_NAME, LOCK_NAME}
        if not names or any(n not in own and not n.startswith(f".{RECORD_NAME}.") for n in names):
            continue  # not a staging folder: something else lives there
        gone = False
        try:
            record = load_json(folder / RECORD_NAME, RecordError, MAX_RECORD_BYTES)
            gone = isinstance(record, dict) and stale_reason(record) is not None
        except RecordError:
            with contextlib.suppress(OSError):
                gone = time.time() - folder.stat().st_mtime > STAGING_GRACE_S
        if gone:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _write_unlocked(run_dir: str | os.PathLike[str], record: dict[str, Any]) -> Path:
    _remove_temps(Path(run_dir))  # the lock is held: any temp file is a killed writer's
    target = Path(run_dir) / RECORD_NAME
    _keep_attached(target, record)
    record["updated_at"] = utc_now()
    clean = _finite(strip_private(record))
    validate_record(clean, str(target))
    return write_json_atomic(target, clean)


def write_record(run_dir: str | os.PathLike[str], record: dict[str, Any]) -> Path:
    """Validate and atomically write `run_dir/run.json` under the folder's writer lock;
    sections attached by other commands meanwhile (ATTACHED_SECTIONS) are kept."""
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    with record_lock(run_dir):
        return _write_unlocked(run_dir, record)


def update_record(
    path: str | os.PathLike[str], change: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    """Load, `change` in place and rewrite a record, all under its writer lock, so a run
    writing the same record at that moment cannot lose the change (nor this its own)."""
    p = _resolve(path)
    with record_lock(p.parent):
        record = load_record(p)
        change(record)
        _write_unlocked(p.parent, record)
    return record


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p / RECORD_NAME if p.is_dir() else p


# The flag a run killed after training ended carries: its outcome stands, its capture does not.
CAPTURE_INCOMPLETE = "capture incomplete"


def end_killed_run(record: dict[str, Any], stale: str) -> None:
    """Give a 'running' record whose writer is gone (`owner.stale_reason`) the end its run
    never wrote. Killed after training ended: training's outcome, flagged "capture incomplete"
    (the threshold checkpoint, profile window or inference latency did not finish); else
    'interrupted'."""
    ended = (record.get("extra") or {}).get("training_ended_at")
    if ended:
        reached = bool((record.get("time_to_accuracy") or {}).get("reached"))
        record["status"] = "reached" if reached else "not_reached"
        record["error"] = record.get("error") or (
            f"interrupted after training ended ({ended}): {stale}; the work after training "
            "(threshold checkpoint, profile window, inference latency) did not finish"
        )
        flags = record.setdefault("flags", [])
        if isinstance(flags, list) and not any(
            isinstance(f, str) and f.startswith(CAPTURE_INCOMPLETE) for f in flags
        ):
            flags.append(
                f"{CAPTURE_INCOMPLETE}: the run was killed after training ended ({ended}), "
                "before its capture (threshold checkpoint, profile window, inference "
                "latency) finished; its time to accuracy stands"
            )
    else:
        record["status"] = "interrupted"
        record["error"] = record.get("error") or f"interrupted: {stale}"


def _write_killed_end(path: Path) -> None:
    """Write a killed run's end into its run.json (atomically, under the writer lock), so a
    tool reading the JSON sees it too: re-read under the lock, and only if it still says
    'running' with its writer gone. A folder this process cannot write, or whose lock another
    writer holds (`update_record`, which writes the loaded end itself), keeps its file."""
    try:
        with record_lock(path.parent, wait=False):
            record = migrate(load_json(path, RecordError, MAX_RECORD_BYTES, MAX_RECORD_DEPTH))
            stale = stale_reason(record) if isinstance(record, dict) else None
            if stale:
                end_killed_run(record, stale)
                _write_unlocked(path.parent, record)
    except (OSError, RecordError):
        return


def load_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and validate one record (a run.json or its folder).

    An older record is migrated to the current schema version first (perfsuite.record.migrate)
    and then validated as a current one; a newer one is refused. A record still 'running'
    whose writer process is known to be gone (perfsuite.record.owner) is returned with status
    'interrupted' (or training's outcome, flagged "capture incomplete", when training had
    ended), and that end is written into its run.json (`_write_killed_end`).

    The loaded dict gets `_path` (the file) and `_dir` (its folder) so analyzers can resolve
    sidecar files, and `_migrated_from` (the version on disk) when it was migrated; these keys
    are never written back.
    """
    p = _resolve(path)
    record = load_json(p, RecordError, MAX_RECORD_BYTES, MAX_RECORD_DEPTH)
    on_disk = record.get("schema_version") if isinstance(record, dict) else None
    newer = newer_problem(record, str(p)) if isinstance(record, dict) else None
    if newer:
        raise RecordError(newer)
    record = migrate(record)
    validate_record(record, str(p))
    clean_stale_temps(p.parent)
    stale = stale_reason(record)
    if stale:  # killed without a chance to write its end: shown, and written, as such
        end_killed_run(record, stale)
        _write_killed_end(p)
    record["_path"] = str(p)
    record["_dir"] = str(p.parent)
    if on_disk != record["schema_version"]:
        record["_migrated_from"] = on_disk
    return record


def find_records(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Expand run.json files and folders (searched recursively) into run.json paths, sorted."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            if (p / RECORD_NAME).exists():
                yield p / RECORD_NAME
            else:
                yield from sorted(p.rglob(RECORD_NAME))
        elif p.exists() or p.is_symlink():
            yield p  # a file, or something that is not one: load_record says which
        else:
            raise RecordError(f"{p}: no such file or folder")


def load_records(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Load every record under `paths` (files or folders); errors name the offending file."""
    return [load_record(p) for p in find_records(paths)]


def strip_private(record: dict[str, Any]) -> dict[str, Any]:
    """The record without loader-added keys (those starting with "_")."""
    return {k: v for k, v in record.items() if not k.startswith("_")}
