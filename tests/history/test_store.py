"""The history store on both back-ends: one schema with a version, idempotent adds, one
transaction per add, concurrent writers, and the store's bad inputs."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from perfsuite.history_store import schema
from perfsuite.history_store.store import HistoryError, open_store
from tests.history.conftest import make_row


def test_add_and_read_back(store_url) -> None:
    with open_store(store_url, create=True) as store:
        assert store.add([make_row(i, 1.0 + i) for i in range(5)]) == 5
        (series,) = store.series()
    assert series.name == "s"
    assert series.metric == "step_time_s"
    assert series.direction == "lower"
    assert series.values == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert series.points[2].attributes == {"commit": "c0002"}
    assert series.points[2].time == "2026-01-01T00:00:02.000000Z"


def test_adding_twice_leaves_one_row(store_url) -> None:
    rows = [make_row(i, 2.0) for i in range(3)]
    with open_store(store_url, create=True) as store:
        assert store.add(rows) == 3
        assert store.add(rows) == 0
        assert store.add([*rows, make_row(3, 2.5)]) == 1
        assert store.count() == 4


def test_failed_add_leaves_the_store_as_it_was(store_url) -> None:
    with open_store(store_url, create=True) as store:
        store.add([make_row(0, 1.0)])
        bad = make_row(2, 1.0)
        bad = bad.__class__(**{**bad.__dict__, "time": "not a time"})
        with pytest.raises(ValueError):
            store.add([make_row(1, 1.0), bad])
        assert store.count() == 1


def test_schema_version_is_stored_and_a_newer_store_refused(store_url) -> None:
    with open_store(store_url, create=True) as store:
        store.add([make_row(0, 1.0)])
        cursor = store.connection.cursor()
        cursor.execute(schema.GET_VERSION)
        assert cursor.fetchone()[0] == str(schema.SCHEMA_VERSION)
        cursor.execute(
            f"UPDATE {schema.META_TABLE} SET value = '{schema.SCHEMA_VERSION + 1}'"
            " WHERE key = 'schema_version'"
        )
        store.connection.commit()
    with open_store(store_url) as store, pytest.raises(HistoryError) as err:
        store.series()
    message = str(err.value)
    assert message.startswith(f"{store.where}: field schema_version: {schema.SCHEMA_VERSION + 1} ")
    assert "newer" in message
    with open_store(store_url) as store, pytest.raises(HistoryError, match="schema_version"):
        store.add([make_row(1, 1.0)])


def test_notes_are_kept(store_url) -> None:
    with open_store(store_url, create=True) as store:
        store.add([make_row(0, 1.0)])
        store.note("s", "2026-01-01T00:00:00Z", "driver 550 -> 560")
        store.note("s", "2026-01-01T00:00:00Z", "driver 550 -> 560")
        (series,) = store.series()
    assert [(n.time, n.text) for n in series.notes] == [
        ("2026-01-01T00:00:00.000000Z", "driver 550 -> 560")
    ]


WRITER = textwrap.dedent(
    """
    import sys
    from perfsuite.history_store.store import open_store
    from tests.history.conftest import make_row
    url, first = sys.argv[1], int(sys.argv[2])
    with open_store(url, create=True) as store:
        for batch in range(first, first + 1000, 10):
            store.add([make_row(i, float(i)) for i in range(batch, batch + 10)])
    """
)


def test_two_concurrent_writers_lose_nothing(store_url, tmp_path) -> None:
    """Two processes, each adding 1,000 records ten to a transaction, give 2,000 rows."""
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, store_url, str(first)])
        for first in (0, 1000)
    ]
    assert [w.wait(timeout=300) for w in writers] == [0, 0]
    with open_store(store_url) as store:
        assert store.count() == 2000
        (series,) = store.series()
    assert sorted(series.values) == [float(i) for i in range(2000)]


def test_missing_sqlite_store_is_named(tmp_path) -> None:
    path = tmp_path / "none.sqlite"
    with pytest.raises(HistoryError) as err:
        open_store(str(path))
    assert str(err.value).startswith(f"{path}: field db: no history store here")


def test_sqlite_url_and_a_file_that_is_no_store(tmp_path) -> None:
    path = tmp_path / "h.sqlite"
    with open_store(f"sqlite:///{path}", create=True) as store:
        store.add([make_row(0, 1.0)])
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM history_points").fetchone() == (1,)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    with open_store(str(other)) as store, pytest.raises(HistoryError) as err:
        store.series()
    assert str(err.value).startswith(f"{other}: field history_points: not a perfsuite history")
    text = tmp_path / "text.sqlite"
    text.write_text("hello, not a database at all" * 100)
    with pytest.raises(HistoryError, match=r"field db: not a SQLite database"):
        open_store(str(text))


def test_url_that_does_not_answer() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://someone:secret@127.0.0.1:9/history"
    with pytest.raises(HistoryError) as err:
        open_store(url)
    message = str(err.value)
    assert message.startswith("postgresql://someone:***@127.0.0.1:9/history: field db: ")
    assert "does not answer" in message
    assert "secret" not in message
    assert "\n" not in message
