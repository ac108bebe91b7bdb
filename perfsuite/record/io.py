"""Atomic writing and validated loading of run records."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from perfsuite.record.model import SCHEMA, SCHEMA_VERSION, utc_now

RECORD_NAME = "run.json"


class RecordError(ValueError):
    """A record that cannot be read or does not follow the schema. The message is one line."""


def _import_jsonschema() -> Any:
    """jsonschema, without the seconds its optional IRI format checker can cost.

    jsonschema's package import loads every optional format checker it finds; rfc3987-syntax
    (installed with jupyter, through jsonschema[format-nongpl]) compiles a grammar when imported,
    2.8 s on a 2-core machine, and every `perfsuite.open` or analysis command would pay it.
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
def _validator() -> Any:
    jsonschema = _import_jsonschema()

    schema = json.loads(resources.files("perfsuite.record").joinpath("run.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _field_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def validate_record(record: Any, origin: str = "<record>") -> None:
    """Raise RecordError naming `origin` and the first offending field."""
    if not isinstance(record, dict):
        raise RecordError(f"{origin}: field (top level): expected a JSON object")
    version = record.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise RecordError(
            f"{origin}: field schema_version: {version} is newer than this perfsuite reads "
            f"({SCHEMA_VERSION}); upgrade perfsuite"
        )
    if record.get("schema") not in (None, SCHEMA):
        raise RecordError(f"{origin}: field schema: {record.get('schema')!r} is not {SCHEMA!r}")
    errors = sorted(_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        msg = err.message if len(err.message) < 160 else err.message[:157] + "..."
        raise RecordError(f"{origin}: field {_field_path(err.absolute_path)}: {msg}")


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
    """Write JSON so that readers see the old file or the new one, never a torn one.

    Temp file in the same folder, fsync, rename over the target, fsync the folder.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(obj), indent=indent, allow_nan=False, sort_keys=False)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; records are ordinary shared files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.write("\n")
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


def write_record(run_dir: str | os.PathLike[str], record: dict[str, Any]) -> Path:
    """Validate and atomically write `run_dir/run.json`; returns its path."""
    record["updated_at"] = utc_now()
    clean = _finite(strip_private(record))
    target = Path(run_dir) / RECORD_NAME
    validate_record(clean, str(target))
    return write_json_atomic(target, clean)


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p / RECORD_NAME if p.is_dir() else p


def load_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and validate one record (a run.json or its folder).

    The loaded dict gets `_path` (the file) and `_dir` (its folder) so analyzers can resolve
    sidecar files; these keys are never written back.
    """
    p = _resolve(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(f"{p}: file not found") from None
    except OSError as exc:
        raise RecordError(f"{p}: cannot read: {exc.strerror}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    validate_record(record, str(p))
    record["_path"] = str(p)
    record["_dir"] = str(p.parent)
    return record


def find_records(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Expand run.json files and folders (searched recursively) into run.json paths, sorted."""
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            yield p
        elif (p / RECORD_NAME).is_file():
            yield p / RECORD_NAME
        elif p.is_dir():
            yield from sorted(p.rglob(RECORD_NAME))
        else:
            raise RecordError(f"{p}: no such file or folder")


def load_records(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Load every record under `paths` (files or folders); errors name the offending file."""
    return [load_record(p) for p in find_records(paths)]


def strip_private(record: dict[str, Any]) -> dict[str, Any]:
    """The record without loader-added keys (those starting with "_")."""
    return {k: v for k, v in record.items() if not k.startswith("_")}
