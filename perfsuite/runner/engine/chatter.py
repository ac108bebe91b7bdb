"""Native libraries' chatter (Kineto's `USDT: ... profiler_start/stop` lines) into the run's
log file instead of the user's terminal.

Those lines are written by C++ straight to file descriptor 2, so redirecting `sys.stderr` does
not catch them: the descriptor itself is pointed at the log for the duration of the block.
Only short, off-the-clock blocks (the profile window) are wrapped, so the progress bar and
errors of the run still reach the terminal.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

LOG_NAME = "perfsuite.log"


@contextlib.contextmanager
def stderr_to(path: Path) -> Iterator[None]:
    """Send everything written to fd 2 inside the block to `path` (appended)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # pytest capture, no real descriptor
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    try:
        os.dup2(log, fd)
        yield
    finally:
        try:
            sys.stderr.flush()
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            os.close(log)
