"""The one schema both back-ends share, and its version.

A store written by a newer perfsuite (a higher `schema_version` in its meta table) is refused
in one line rather than read wrongly; a store of this version or older is opened as it is.
Columns are typed so that SQLite and PostgreSQL accept the same statements: times are ISO 8601
UTC text with microseconds (`2026-11-29T01:02:03.000000Z`), which sorts as time does; the
series key and the attributes are JSON text.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

META_TABLE = "perfsuite_history_meta"

CREATE = (
    f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS history_points ("
    " record_key TEXT NOT NULL,"
    " metric TEXT NOT NULL,"
    " series TEXT NOT NULL,"
    " series_key TEXT NOT NULL,"
    " time TEXT NOT NULL,"
    " value DOUBLE PRECISION NOT NULL,"
    " attributes TEXT NOT NULL,"
    " source TEXT NOT NULL,"
    " PRIMARY KEY (record_key, metric))",
    "CREATE INDEX IF NOT EXISTS history_points_series ON history_points (series, metric, time)",
    "CREATE TABLE IF NOT EXISTS history_notes ("
    " series TEXT NOT NULL,"
    " time TEXT NOT NULL,"
    " text TEXT NOT NULL,"
    " PRIMARY KEY (series, time, text))",
)

# `?` placeholders; the PostgreSQL back-end rewrites them to `%s`.
INSERT_POINT = (
    "INSERT INTO history_points"
    " (record_key, metric, series, series_key, time, value, attributes, source)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (record_key, metric) DO NOTHING"
)
INSERT_NOTE = (
    "INSERT INTO history_notes (series, time, text) VALUES (?, ?, ?)"
    " ON CONFLICT (series, time, text) DO NOTHING"
)
SET_VERSION = (
    f"INSERT INTO {META_TABLE} (key, value) VALUES ('schema_version', ?)"
    " ON CONFLICT (key) DO NOTHING"
)
GET_VERSION = f"SELECT value FROM {META_TABLE} WHERE key = 'schema_version'"
SELECT_POINTS = (
    "SELECT series, metric, time, value, attributes, source, record_key FROM history_points"
    " ORDER BY series, metric, time, record_key"
)
SELECT_NOTES = "SELECT series, time, text FROM history_notes ORDER BY series, time, text"
COUNT_POINTS = "SELECT COUNT(*) FROM history_points"
