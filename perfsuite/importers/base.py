"""The one import pipeline every importer goes through: discover -> load -> finalize -> write.

An importer only knows its format (`Importer`); this module owns what they share: loading
with `--keep-going`, run ids that never collide (two systems' `resnet/result_0.txt`, DAWNBench
`a b.json` and `a_b.json`) and writes that never overwrite a different record silently, so
the number of records reported written is the number on disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfsuite.importers.common import Imported, ImportFailure
from perfsuite.record import RecordError, write_record
from perfsuite.record.consistency import problems
from perfsuite.record.io import LOCK_NAME
from perfsuite.safeio import InputError, load_json, read_bytes

MAX_SOURCE_BYTES = 256 * 1024 * 1024


class Importer(Protocol):
    """A result format: where its files are, how one becomes a record, what spans files."""

    kind: str

    def discover(self, paths: Iterable[str | Path]) -> Iterator[Path]: ...

    def load(self, path: Path) -> Imported: ...

    def finalize(self, items: list[Imported]) -> dict[str, Any]:
        """Work across files (MLPerf folder scores); returns extra JSON output."""
        ...


@dataclass
class ImportResult:
    items: list[Imported]  # written (or, with failures, loaded and then refused: path None)
    failed: list[dict[str, str]]
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def written(self) -> int:
        return sum(1 for it in self.items if it.path is not None)


def content_digest(files: Iterable[str]) -> str:
    """sha256 over the source files' bytes: the identity of an imported result."""
    h = hashlib.sha256()
    for f in files:
        h.update(read_bytes(f, MAX_SOURCE_BYTES, ImportFailure))
        h.update(b"\0")
    return h.hexdigest()


def _on_disk_digest(out: Path, run_id: str) -> str | None:
    """The digest of the record already at out/run_id, "" if it has none, None if no record."""
    path = out / run_id / "run.json"
    if not path.exists() and not path.is_symlink():
        return None
    try:
        rec = load_json(path, InputError)
    except InputError:
        return ""
    source = rec.get("source") if isinstance(rec, dict) else None
    digest = source.get("sha256") if isinstance(source, dict) else None
    return digest if isinstance(digest, str) else ""


def unique_ids(items: list[Imported], out: Path) -> tuple[list[str], list[tuple[Imported, str]]]:
    """Give every item a run id no other item and no different record on disk has.

    Same id and same content (one file reached twice) keeps one copy. Content already on disk
    under the id or under `<id>-<8 hex of its digest>` is a re-import and keeps that id, so a
    result is never on disk twice. Otherwise an id that other content holds (on disk, or
    another item of this import) gets `-<8 hex of the content digest>` appended; the notes name
    each renamed id. Returns the notes and the items refused (with why): those whose id is
    taken on disk by other content even after suffixing.
    """
    notes: list[str] = []
    refused: list[tuple[Imported, str]] = []
    by_id: dict[str, list[Imported]] = {}
    for it in items:
        by_id.setdefault(it.record["run_id"], []).append(it)
    kept: list[Imported] = []
    for run_id, group in by_id.items():
        seen: dict[str, Imported] = {}
        for it in group:
            digest = it.record["source"]["sha256"]
            if digest in seen:
                first = seen[digest].summary.get("file")
                notes.append(f"{it.summary.get('file')}: same content as {first}; imported once")
                continue
            seen[digest] = it
        bare = _on_disk_digest(out, run_id)
        for digest, it in seen.items():
            new_id, existing = _choose_id(out, run_id, digest, bare, len(seen))
            if existing is not None and existing != digest:
                why = (
                    f"{it.summary.get('file')}: run id {new_id} is taken under {out} by a "
                    "record of other content; refusing to overwrite it"
                )
                refused.append((it, why))
                continue
            if new_id != run_id:
                notes.append(
                    f"{it.summary.get('file')}: run id {run_id} taken; imported as {new_id}"
                )
            elif _on_disk_digest(out, stale := f"{run_id}-{digest[:8]}") == digest:
                notes.append(
                    f"{it.summary.get('file')}: {stale} under {out} is the same result as "
                    f"{run_id} (left by an earlier import); remove {stale}"
                )
            _rename(it, new_id)
            kept.append(it)
    items[:] = kept
    return notes, refused


def _choose_id(
    out: Path, run_id: str, digest: str, bare: str | None, distinct: int
) -> tuple[str, str | None]:
    """The id for content `digest` among `distinct` contents wanting `run_id` (whose record on
    disk has digest `bare`), and the digest on disk under the chosen id."""
    suffixed = f"{run_id}-{digest[:8]}"
    if bare == digest:
        return run_id, bare  # a re-import keeps its id
    on_disk = _on_disk_digest(out, suffixed)
    if on_disk == digest or bare is not None or distinct > 1:
        return suffixed, on_disk
    return run_id, None


# How long a writer waits for the record of a run folder another import has just reserved,
# to tell the same result imported twice at once from a different one.
RESERVED_WAIT_S = 5.0


def _settled_digest(out: Path, run_id: str) -> str | None:
    """The digest on disk under out/run_id once its record is there; None when the folder
    stays without a record (reserved by a writer still writing, or left by one killed)."""
    deadline = time.monotonic() + RESERVED_WAIT_S
    while True:
        digest = _on_disk_digest(out, run_id)
        if digest is not None or time.monotonic() >= deadline:
            return digest
        time.sleep(0.05)


def reserve(out: Path, it: Imported) -> Path:
    """Reserve the run folder for `it` by creating it exclusively (mkdir fails when it exists),
    so that two imports running at the same time into one `--out` never write one folder.

    A folder that exists already holds the same result (a re-import: rewritten) or another:
    then `<id>-<8 hex of the content digest>` is reserved the same way, else refused.
    `unique_ids` has chosen the id against what was on disk before; this closes the window
    between that choice and the write.
    """
    out.mkdir(parents=True, exist_ok=True)
    run_id = it.record["run_id"]
    digest = it.record["source"]["sha256"]
    suffixed = run_id if run_id.endswith(f"-{digest[:8]}") else f"{run_id}-{digest[:8]}"
    for candidate in dict.fromkeys((run_id, suffixed)):
        folder = out / candidate
        try:
            folder.mkdir()
        except FileExistsError:
            if _settled_digest(out, candidate) == digest:
                _rename(it, candidate)
                return folder  # the same result: rewriting it loses nothing
            continue
        _rename(it, candidate)
        return folder
    raise ImportFailure(
        f"{it.summary.get('file')}: run id {run_id} and {suffixed} are taken under {out} by "
        "other content; refusing to overwrite them"
    )


def _unreserve(folder: Path) -> None:
    """Remove a reserved folder whose record could not be written (nothing else in it)."""
    (folder / LOCK_NAME).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()  # fails, and keeps it, when anything else is in it


def _rename(it: Imported, run_id: str) -> None:
    it.record["run_id"] = run_id
    it.summary["run_id"] = run_id


def run_import(
    importer: Importer,
    paths: Iterable[str | Path],
    out: str | Path,
    keep_going: bool,
    progress: Callable[[list[Path]], Iterable[Path]] = lambda files: files,
) -> ImportResult:
    """Discover, load (skipping bad files with `keep_going`), finalize, make ids unique, write.

    Without `keep_going` the first bad file raises ImportFailure/RecordError and nothing is
    written. `progress` wraps the file list (a progress bar).
    """
    files = list(importer.discover(paths))
    if not files:
        raise ImportFailure(f"{' '.join(str(p) for p in paths)}: no {importer.kind} result found")
    items: list[Imported] = []
    failed: list[dict[str, str]] = []
    for f in progress(files):
        try:
            it = importer.load(f)
            found = problems(it.record)  # the claims and bounds `perfsuite validate` checks
            if found:
                raise ImportFailure(f"{f}: {found[0]}")
            it.record["source"]["sha256"] = content_digest(it.record["source"].get("files") or [])
            items.append(it)
        except (ImportFailure, RecordError) as exc:
            if not keep_going:
                raise
            failed.append({"file": str(f), "error": str(exc)})
    notes, refused = unique_ids(items, Path(out))
    for it, why in refused:
        if not keep_going:
            raise ImportFailure(why)
        failed.append({"file": str(it.summary.get("file", "?")), "error": why})
    extra = importer.finalize(items)
    for it in items:
        try:
            wanted = it.record["run_id"]
            folder = reserve(Path(out), it)
            if it.record["run_id"] != wanted:
                notes.append(
                    f"{it.summary.get('file')}: run id {wanted} taken meanwhile (another "
                    f"import?); imported as {it.record['run_id']}"
                )
            try:
                it.path = write_record(folder, it.record)
            except RecordError:
                _unreserve(folder)
                raise
        except (ImportFailure, RecordError) as exc:
            if not keep_going:
                raise
            failed.append({"file": str(it.summary.get("file", "?")), "error": str(exc)})
        it.summary["path"] = None if it.path is None else str(it.path)
    return ImportResult(items, failed, extra, notes)
