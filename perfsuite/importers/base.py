"""The one import pipeline every importer goes through: discover -> load -> finalize -> write.

An importer only knows its format (`Importer`); this module owns what they share: loading
with `--keep-going`, run ids that never collide (two systems' `resnet/result_0.txt`, DAWNBench
`a b.json` and `a_b.json`) and writes that never overwrite a different record silently, so
the number of records reported written is the number on disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perfsuite.importers.common import Imported, ImportFailure
from perfsuite.record import RecordError, write_record
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
            it.path = write_record(Path(out) / it.record["run_id"], it.record)
        except RecordError as exc:
            if not keep_going:
                raise
            failed.append({"file": str(it.summary.get("file", "?")), "error": str(exc)})
        it.summary["path"] = None if it.path is None else str(it.path)
    return ImportResult(items, failed, extra, notes)
