"""One entry point for every profile format the timeline reads: a Kineto (Chrome-trace JSON)
file, an Nsight Systems SQLite export, or an Nsight Systems report (`.nsys-rep`), exported
to SQLite by `nsys` when it is on PATH. The format is told by the file's first bytes, not
its name, so a renamed export still reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from perfsuite.traces.nsys import is_sqlite, read_nsys
from perfsuite.traces.reader import TraceData, TraceError, read_trace

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
EXPORT_TIMEOUT_S = 3600


def export_command(report: Path, output: Path) -> list[str]:
    """The `nsys export` call that writes `report` as an SQLite file at `output`."""
    return [
        "nsys",
        "export",
        "--type",
        "sqlite",
        "--force-overwrite",
        "true",
        "--output",
        str(output),
        str(report),
    ]


def _export_report(p: Path, progress: Callable[[int], None] | None) -> TraceData:
    """Read a `.nsys-rep` through a temporary SQLite export; a one-line TraceError without
    nsys on PATH, or when the export fails."""
    if not p.is_file():
        raise TraceError(f"{p}: file not found")
    if shutil.which("nsys") is None:
        raise TraceError(
            f"{p}: an Nsight Systems report, and `nsys` is not on PATH to export it: run "
            f"`nsys export --type sqlite --output REPORT.sqlite {p}` and give the .sqlite file"
        )
    with tempfile.TemporaryDirectory(prefix="perfsuite-nsys-") as tmp:
        out = Path(tmp) / (p.stem + ".sqlite")
        try:
            done = subprocess.run(
                export_command(p, out),
                capture_output=True,
                text=True,
                timeout=EXPORT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TraceError(f"{p}: nsys export failed: {exc}") from None
        if done.returncode != 0 or not out.is_file():
            last = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
            raise TraceError(f"{p}: nsys export failed (exit {done.returncode}): {last[0]}")
        data = read_nsys(out, progress)
        data.path = str(p)
        return data


def read_profile(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None
) -> TraceData:
    """The timeline columns of a Kineto trace, an nsys SQLite export or an nsys report."""
    p = Path(path)
    if p.name.endswith(REPORT_SUFFIXES):
        return _export_report(p, progress)
    if is_sqlite(p):
        return read_nsys(p, progress)
    return read_trace(p, progress)
