"""Who is writing a running record, and whether that writer is gone.

A run killed with SIGKILL (or by the kernel for memory) never writes its end: its record says
"running" forever. While running, a record names its owner (host, pid, the process's start
time); a reader on the same host whose owner process no longer exists (or whose pid now
belongs to a younger process) shows the run as "interrupted" and writes that end into the
file (`perfsuite.record.io.load_record`). On another host nothing can be known, and the
record is left as written.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

# A pid's start time read now may differ from the one recorded by clock rounding.
START_TOLERANCE_S = 2.0


def _start_time(pid: int) -> float | None:
    """The process's start time (seconds since the epoch), or None when it does not exist."""
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except ImportError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return 0.0  # exists, someone else's
        return 0.0
    except Exception:  # psutil.NoSuchProcess, AccessDenied, ZombieProcess
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            return 0.0
        return 0.0


def owner_section() -> dict[str, Any]:
    """This process as the owner of a record it is about to write."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": _start_time(pid) or 0.0}


def stale_reason(record: Mapping[str, Any]) -> str | None:
    """Why a 'running' record's writer is known to be gone, or None (alive, or unknowable)."""
    owner = record.get("owner")
    if record.get("status") != "running" or not isinstance(owner, Mapping):
        return None
    host, pid, started = owner.get("host"), owner.get("pid"), owner.get("started")
    if host != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return None
    now_started = _start_time(pid)
    if now_started is None:
        return f"its process {pid} on {host} ended without writing the run's end (killed?)"
    known = isinstance(started, (int, float)) and started and now_started
    if known and abs(now_started - started) > START_TOLERANCE_S:
        return f"its process {pid} on {host} is gone (the pid now belongs to another process)"
    return None
