"""The history store: one small data layer over two back-ends that share one schema.

- SQLite (default): one file, `runs/history.sqlite` unless told otherwise (a path or a
  `sqlite:///` URL); writers take the database's write lock first (`BEGIN IMMEDIATE`) and wait
  up to a minute for it, so concurrent `history add` processes queue and lose nothing.
- PostgreSQL: a `postgresql://` URL, through psycopg 3 (the `history` extra); the schema is
  created under a transaction-level advisory lock, so two first writers do not race.

Every add is one transaction: a failure leaves the store as it was. A row is keyed by its
record and metric (`INSERT ... ON CONFLICT DO NOTHING`), so adding a record twice leaves one.
Errors are `HistoryError`: one line naming the file or URL and the field.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from perfsuite.history_store import schema
from perfsuite.history_store.series import Note, Point, Row, Series, direction_of
from perfsuite.history_store.times import normalized_time

DEFAULT_SQLITE = Path("runs") / "history.sqlite"
BUSY_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 5


class HistoryError(ValueError):
    """A store, URL or file that cannot be used; one line naming it and the field."""


def shown_url(url: str) -> str:
    """`url` with any password replaced by `***`, fit for messages."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> Path:
    """The file of a SQLite store: a path, or `sqlite:///relative` / `sqlite:////absolute`."""
    return Path(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else Path(url)


class Store:
    """A history store (see the module docstring). Use `open_store`; close with `close()` or
    as a context manager."""

    where: str
    placeholder = "?"

    def __init__(self, connection: Any, where: str) -> None:
        self.connection = connection
        self.where = where

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _begin(self, cursor: Any) -> None:
        """Start a write transaction."""

    def _create(self, cursor: Any) -> None:
        """Create the tables when missing and record the schema version."""
        for statement in schema.CREATE:
            cursor.execute(statement)
        cursor.execute(self._sql(schema.SET_VERSION), (str(schema.SCHEMA_VERSION),))

    def _check_version(self, cursor: Any) -> None:
        cursor.execute(schema.GET_VERSION)
        found = cursor.fetchone()
        if found is None:
            return
        try:
            version = int(found[0])
        except ValueError:
            raise HistoryError(
                f"{self.where}: field schema_version: {found[0]!r} is not an integer"
            ) from None
        if version > schema.SCHEMA_VERSION:
            raise HistoryError(
                f"{self.where}: field schema_version: {version} is newer than this perfsuite "
                f"reads ({schema.SCHEMA_VERSION}); upgrade perfsuite"
            )

    def _write(self, statement: str, rows: Sequence[tuple[Any, ...]]) -> int:
        """Run `statement` over `rows` in one transaction (schema created first); the number of
        rows it inserted. Any failure rolls everything back."""
        cursor = self.connection.cursor()
        try:
            self._begin(cursor)
            self._check_version(cursor)
            added = 0
            if rows:  # rowcount: the rows inserted, summed over the batch by both drivers
                cursor.executemany(self._sql(statement), rows)
                added = max(cursor.rowcount, 0)
            self.connection.commit()
        except BaseException:
            self.connection.rollback()
            raise
        return added

    def create(self) -> None:
        """Make the tables when missing and record the schema version (one transaction);
        HistoryError for a store of a newer schema."""
        cursor = self.connection.cursor()
        try:
            self._begin(cursor)
            self._create(cursor)
            self._check_version(cursor)
            self.connection.commit()
        except BaseException:
            self.connection.rollback()
            raise

    def add(self, rows: Iterable[Row]) -> int:
        """Add rows in one transaction; those already stored are left as they are. Returns how
        many were new."""
        values = [
            (
                r.record_key,
                r.metric,
                r.series,
                json.dumps(r.series_key, sort_keys=True),
                normalized_time(r.time),
                float(r.value),
                json.dumps(r.attributes, sort_keys=True),
                r.source,
            )
            for r in rows
        ]
        return self._write(schema.INSERT_POINT, values)

    def note(self, series: str, time: str, text: str) -> None:
        """Mark a known change of `series` at `time`."""
        self._write(schema.INSERT_NOTE, [(series, normalized_time(time), text)])

    def _read(self, statement: str) -> list[tuple[Any, ...]]:
        cursor = self.connection.cursor()
        try:
            self._check_version(cursor)
            cursor.execute(statement)
            found = list(cursor.fetchall())
        finally:
            self.connection.rollback()
        return found

    def count(self) -> int:
        return int(self._read(schema.COUNT_POINTS)[0][0])

    def series(self) -> list[Series]:
        """Every series of the store, by name and metric, points oldest first, with notes."""
        notes: dict[str, list[Note]] = {}
        for name, time, text in self._read(schema.SELECT_NOTES):
            notes.setdefault(name, []).append(Note(name, time, text))
        grouped: dict[tuple[str, str], list[Point]] = {}
        for name, metric, time, value, attrs, source, key in self._read(schema.SELECT_POINTS):
            point = Point(time, float(value), json.loads(attrs), source, key)
            grouped.setdefault((name, metric), []).append(point)
        return [
            Series(name, metric, direction_of(metric), tuple(points), tuple(notes.get(name, ())))
            for (name, metric), points in grouped.items()
        ]


class SQLiteStore(Store):
    def _begin(self, cursor: Any) -> None:
        cursor.execute("BEGIN IMMEDIATE")

    def _read(self, statement: str) -> list[tuple[Any, ...]]:
        cursor = self.connection.cursor()
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'history_points'"
        )
        if cursor.fetchone() is None:
            raise HistoryError(
                f"{self.where}: field history_points: not a perfsuite history store "
                "(`perfsuite history add` makes one)"
            )
        return super()._read(statement)


class PostgresStore(Store):
    placeholder = "%s"

    def _create(self, cursor: Any) -> None:
        cursor.execute("SELECT pg_advisory_xact_lock(727170510)")  # one schema creator at a time
        super()._create(cursor)

    def _read(self, statement: str) -> list[tuple[Any, ...]]:
        cursor = self.connection.cursor()
        cursor.execute("SELECT to_regclass('history_points') IS NOT NULL")
        exists = cursor.fetchone()[0]
        self.connection.rollback()
        if not exists:
            raise HistoryError(
                f"{self.where}: field history_points: not a perfsuite history store "
                "(`perfsuite history add --db URL` makes one)"
            )
        return super()._read(statement)


def _open_sqlite(path: Path, create: bool) -> SQLiteStore:
    where = str(path)
    if not path.exists() and not create:
        raise HistoryError(
            f"{where}: field db: no history store here (`perfsuite history add` makes one)"
        )
    if path.exists() and not path.is_file():
        raise HistoryError(f"{where}: field db: not a regular file")
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        if create:  # write-ahead log: readers never wait for a writer, commits fsync less
            connection.execute("PRAGMA journal_mode = WAL")
    except sqlite3.DatabaseError as exc:
        raise HistoryError(f"{where}: field db: not a SQLite database ({exc})") from None
    # isolation_level=None: transactions are the store's own (BEGIN IMMEDIATE ... COMMIT)
    return SQLiteStore(connection, where)


def _open_postgres(url: str) -> PostgresStore:
    where = shown_url(url)
    try:
        import psycopg
    except ImportError:
        raise HistoryError(
            f"{where}: field db: PostgreSQL needs psycopg 3: pip install 'perfsuite[history]'"
        ) from None
    try:
        connection = psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        detail = " ".join(str(exc).split())[:200]
        raise HistoryError(f"{where}: field db: the server does not answer ({detail})") from None
    return PostgresStore(connection, where)


def open_store(url: str | None = None, create: bool = False) -> Store:
    """The store at `url` (default `runs/history.sqlite`): PostgreSQL for a `postgresql://`
    URL, else a SQLite file. `create`: a missing SQLite file is made (writers); readers get a
    HistoryError naming it."""
    target = url or str(DEFAULT_SQLITE)
    store = (
        _open_postgres(target) if is_postgres(target) else _open_sqlite(sqlite_path(target), create)
    )
    if create:
        try:
            store.create()
        except BaseException:
            store.close()
            raise
    return store
