"""The history stores the tests run on: a SQLite file, and a fresh database on a real
PostgreSQL server when `PERFSUITE_TEST_POSTGRES` names one (`.ci/run` starts it).

Without a server the PostgreSQL cases skip with the reason; under
`PERFSUITE_REQUIRE_POSTGRES=1` (CI) they fail instead. Nothing is mocked.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from perfsuite.history_store.series import Row

BACKENDS = ("sqlite", "postgresql")


def postgres_server() -> str:
    """The server URL, or a skip (a failure under PERFSUITE_REQUIRE_POSTGRES=1)."""
    url = os.environ.get("PERFSUITE_TEST_POSTGRES")
    required = os.environ.get("PERFSUITE_REQUIRE_POSTGRES") == "1"
    why = None
    if not url:
        why = "no PostgreSQL server: set PERFSUITE_TEST_POSTGRES=postgresql://... (.ci/run does)"
    else:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            why = "psycopg 3 is not installed (pip install 'perfsuite[history]')"
    if why:
        if required:
            pytest.fail(f"PERFSUITE_REQUIRE_POSTGRES=1 but {why}")
        pytest.skip(why)
    return url


def _with_database(server: str, name: str) -> str:
    base, _, _ = server.rpartition("/")
    return f"{base}/{name}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new, empty database on the server, dropped after the test."""
    import psycopg

    server = postgres_server()
    name = f"perfsuite_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield _with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=BACKENDS)
def store_url(request, tmp_path) -> str:
    """A store URL on each back-end: a SQLite file path, a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("postgres_url")


def make_row(i: int, value: float, series: str = "s", metric: str = "step_time_s") -> Row:
    """A row of record `i`, one second after the previous one."""
    return Row(
        record_key=f"rec{i:06d}",
        series=series,
        series_key={"task": series},
        metric=metric,
        time=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
        value=value,
        attributes={"commit": f"c{i:04d}"},
        source=f"runs/r{i}",
    )
