"""Nsight Systems SQLite exports built with the schema of a real one: the tests' small
emit_nvtx profile and the benchmark's large export.

The tables are created from the CREATE statements of a real export (`source`, one of
../shared/data/nsys), its export metadata and TARGET_INFO_GPU rows copied, so the reader sees
the columns, types and constraints nsys wrote; NOT NULL columns a row does not set are 0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
COPIED = ("EXPORT_META_DATA", "META_DATA_EXPORT", "TARGET_INFO_GPU")
TABLES = ("StringIds", KERNEL, MEMCPY, RUNTIME, NVTX, *COPIED)
PID = 4242
PUSH_POP = 59  # NVTX_EVENTS.eventType of a push/pop range


def global_tid(pid: int, tid: int) -> int:
    """A serialized GlobalId as nsys writes it: process in bits 24-47, thread in 0-23."""
    return (0x100 << 40) | (pid << 24) | tid


class ExportBuilder:
    """An export being written at `out`, with the schema of `source`."""

    def __init__(self, out: Path, source: Path) -> None:
        src = sqlite3.connect(f"file:{source}?mode=ro&immutable=1", uri=True)
        self.con = sqlite3.connect(out)
        self.con.execute("PRAGMA journal_mode = OFF")
        self.con.execute("PRAGMA synchronous = OFF")
        for name, sql in src.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"):
            if name in TABLES:
                self.con.execute(sql)
                if name in COPIED:
                    rows = src.execute(f"SELECT * FROM {name}").fetchall()
                    marks = ",".join("?" * len(rows[0])) if rows else ""
                    self.con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
        src.close()
        self.strings: dict[str, int] = {}
        self._fill: dict[str, list[str]] = {}

    def string(self, text: str) -> int:
        """The StringIds id of `text`, added on first use."""
        sid = self.strings.get(text)
        if sid is None:
            sid = self.strings[text] = len(self.strings) + 1
            self.con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (sid, text))
        return sid

    def insert(self, table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
        """Rows of `columns`; the table's other NOT NULL columns are 0."""
        if table not in self._fill:
            info = self.con.execute(f'PRAGMA table_info("{table}")').fetchall()
            self._fill[table] = [r[1] for r in info if r[3] and r[4] is None]
        rest = [c for c in self._fill[table] if c not in columns]
        names = ", ".join([*columns, *rest])
        values = ", ".join(["?"] * len(columns) + ["0"] * len(rest))
        self.con.executemany(f"INSERT INTO {table} ({names}) VALUES ({values})", rows)

    def kernels(
        self, rows: Iterable[tuple[int, int, int, int, int]], device: int = 0, pid: int = PID
    ) -> None:
        """(start ns, end ns, stream, correlationId, name string id) kernels of process `pid`."""
        gpid = global_tid(pid, 0)
        self.insert(
            KERNEL,
            (
                "start",
                "end",
                "deviceId",
                "contextId",
                "streamId",
                "correlationId",
                "globalPid",
                "demangledName",
                "shortName",
            ),
            ((s, e, device, 1, st, c, gpid, n, n) for s, e, st, c, n in rows),
        )

    def runtime(
        self, rows: Iterable[tuple[int, int, int, int]], tid: int = PID, pid: int = PID
    ) -> None:
        """(start ns, end ns, correlationId, name string id) runtime calls on thread `tid` of
        process `pid`."""
        gtid = global_tid(pid, tid)
        self.insert(
            RUNTIME,
            ("start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue"),
            ((s, e, 0, gtid, c, n, 0) for s, e, c, n in rows),
        )

    def ranges(self, rows: Iterable[tuple[int, int | None, str]], tid: int = PID) -> None:
        """(start ns, end ns or None, text) push/pop NVTX ranges on thread `tid`."""
        gtid = global_tid(PID, tid)
        self.insert(
            NVTX,
            ("start", "end", "eventType", "text", "globalTid"),
            ((s, e, PUSH_POP, t, gtid) for s, e, t in rows),
        )

    def close(self) -> None:
        self.con.commit()
        self.con.close()


def synthetic_export(out: Path, source: Path, n_events: int) -> int:
    """An export of about `n_events` kernels and launch calls (half each) on two streams, the
    shape of synthetic Kineto traces of trace_throughput. Returns the event count."""
    b = ExportBuilder(out, source)
    launch = b.string("cudaLaunchKernel_v7000")
    names = [b.string(f"void at::native::elementwise_kernel<{i}>(int)") for i in range(8)]
    pairs = n_events // 2

    def kernels() -> Iterable[tuple[int, int, int, int, int]]:
        for i in range(pairs):
            t = 1_000_000 + i * 20_000
            yield (
                t + 8_000,
                t + 8_000 + 2_000 + (i % 7) * 1_000,
                7 if i % 3 else 13,
                i,
                names[i % 8],
            )

    def calls() -> Iterable[tuple[int, int, int, int]]:
        for i in range(pairs):
            t = 1_000_000 + i * 20_000
            yield t, t + 3_000, i, launch

    b.kernels(kernels())
    b.runtime(calls())
    b.close()
    return 2 * pairs
