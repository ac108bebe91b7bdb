"""Instrumentation never breaks the user's run.

Every collector (FLOP count, profile window, telemetry, threshold checkpoint) runs inside
`collector(...)`: an exception there is caught, its traceback goes to the run's log
(`perfsuite.log`, a sidecar), and the record says what was lost, in `capture_failures`
`{collector, error, lost}` and in a flag. The run goes on without that measurement. Both
routes use it: `perfsuite run` (runner/routes/run.py) and `perfsuite.track`
(runner/routes/track.py).

A FLOP formula that raises is contained one level lower, by the counter itself: that op is
listed in `work.unknown_ops` with `error: "formula error: ..."` (not modeled) and the count
goes on (`formula_error_flag` says so in the flags).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from perfsuite.runner.engine.chatter import LOG_NAME

LOGGER = logging.getLogger("perfsuite")

_handlers: dict[str, tuple[logging.Handler, int]] = {}  # log path -> (handler, users)


@contextlib.contextmanager
def run_log(rec: Any) -> Iterator[None]:
    """Inside the block, perfsuite's log records (tracebacks of contained failures) are
    appended to the run's `perfsuite.log`, which becomes a sidecar once it holds anything.
    A record that writes no files (an inert track) logs nowhere."""
    if not rec.write_files:
        yield
        return
    path = rec.run_dir / LOG_NAME
    key = str(path)
    handler, users = _handlers.get(key, (None, 0))
    if handler is None:
        handler = logging.FileHandler(path, encoding="utf-8", delay=True)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s"))
        LOGGER.addHandler(handler)
    _handlers[key] = (handler, users + 1)
    try:
        yield
    finally:
        handler, users = _handlers[key]
        if users > 1:
            _handlers[key] = (handler, users - 1)
        else:
            del _handlers[key]
            LOGGER.removeHandler(handler)
            handler.close()
        if path.is_file() and path.stat().st_size:
            rec.record["sidecars"]["log"] = LOG_NAME


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


@contextlib.contextmanager
def collector(
    rec: Any, name: str, lost: str, *, passthrough: tuple[type[BaseException], ...] = ()
) -> Iterator[list[str]]:
    """Run one collector; an exception (other than `passthrough`: a signal's) is logged with
    its traceback and recorded as lost. Yields a list that holds the one-line error after a
    failure (empty otherwise), for callers that say more (e.g. why there is no window)."""
    failed: list[str] = []
    with run_log(rec):
        try:
            yield failed
        except passthrough:
            raise
        except Exception as exc:
            LOGGER.error("%s failed; the run went on without it (lost: %s)", name, lost,
                         exc_info=True)  # fmt: skip
            failed.append(one_line(exc))
            record_failure(rec, name, failed[0], lost)


def record_failure(rec: Any, name: str, error: str, lost: str) -> None:
    """`capture_failures` entry and flag for a collector that failed with `error`."""
    rec.record.setdefault("capture_failures", []).append(
        {"collector": name, "error": error, "lost": lost}
    )
    where = "; traceback in perfsuite.log" if rec.write_files else ""
    rec.flag(f"{name} failed ({error}): {lost} not measured; the run went on{where}")


def formula_error_flag(rec: Any, work: dict[str, Any] | None) -> None:
    """Flag a FLOP count with ops whose formula raised (their FLOPs are missing)."""
    failed = [u for u in (work or {}).get("unknown_ops") or [] if u.get("error")]
    if not failed:
        return
    ops = ", ".join(f"{u['op']} x{u['calls']} ({u['error']})" for u in failed[:5])
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    where = "; tracebacks in perfsuite.log" if rec.write_files else ""
    rec.flag(
        f"FLOP count incomplete: not modeled because their formula raised: {ops}{more}; "
        f"flops_per_step leaves them out{where}"
    )
