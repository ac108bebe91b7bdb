"""The performance history: points of every run in a database (SQLite by default,
PostgreSQL for a team; one versioned schema), CSV in Apache Otava's layout, and the series
both give. The change-point analysis of a series is `perfsuite.analyzers.history`."""
