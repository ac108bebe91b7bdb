"""MLPerf-style result logs (`:::MLLOG {json}` lines) written by our own formatter.

Why our own: the runner must work without the `mlperf-logging` package (it is a test-only
dependency, used there to cross-check that the lines we write are accepted by its parser and
compliance checker). Every line is flushed as soon as it is written, so a run that is killed
keeps everything it logged up to that point; `perfsuite import mlperf` reads the file back.

Line format (same field order as MLPerf's reference logger):
    :::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "POINT_IN_TIME",
              "key": "eval_accuracy", "value": 0.93, "metadata": {"file": ..., "lineno": ...,
              "epoch_num": 3}}
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

MARKER = ":::MLLOG "
INTERVAL_START = "INTERVAL_START"
INTERVAL_END = "INTERVAL_END"
POINT_IN_TIME = "POINT_IN_TIME"

# Configuration keys that `start` logs when given (besides every `opt_*` key).
CONFIG_KEYS = (
    "global_batch_size",
    "seed",
    "train_samples",
    "eval_samples",
    "gradient_accumulation_steps",
    "max_sequence_length",
)
# Defaults for the submission keys that MLPerf's checker requires; a perfsuite run is not a
# closed-division submission, hence "open" / "research".
SUBMISSION_DEFAULTS = {
    "submission_division": "open",
    "submission_status": "research",
    "submission_platform": "unspecified",
}

_THIS_FILE = os.path.normcase(os.path.abspath(__file__))


def _jsonable(value: Any) -> Any:
    """numpy scalars -> Python numbers; NaN/inf -> None (JSON has neither)."""
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (list, dict)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def format_line(
    key: str,
    value: Any,
    time_ms: int,
    event_type: str = POINT_IN_TIME,
    metadata: dict[str, Any] | None = None,
    namespace: str = "",
) -> str:
    """One `:::MLLOG {json}` line (without newline)."""
    body = {
        "namespace": namespace,
        "time_ms": time_ms,
        "event_type": event_type,
        "key": key,
        "value": _jsonable(value),
        "metadata": _jsonable(metadata or {}),
    }
    return MARKER + json.dumps(body, allow_nan=False)


def _caller() -> dict[str, Any]:
    """File and line of the first frame outside this module (MLPerf's `metadata` convention)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.normcase(os.path.abspath(frame.f_code.co_filename)) == (
        _THIS_FILE
    ):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return {"file": "<unknown>", "lineno": 0}
    return {"file": os.path.basename(frame.f_code.co_filename), "lineno": frame.f_lineno}


class MLLogWriter:
    """Write one training run's MLPerf-style log to `path`.

    Typical use (the runner):
        with MLLogWriter(run_dir / "mlperf.log", benchmark="cifar10") as log:
            log.start({"global_batch_size": 512, "seed": 0, "opt_name": "sgd"})
            for epoch in ...:
                log.epoch_start(epoch); ...; log.epoch_stop(epoch)
                log.eval(epoch + 1, accuracy, samples=seen)
            log.stop(success=reached)
    Leaving the `with` block because of an exception before `stop` logs `run_stop` with
    status "aborted". `clock` (seconds since the epoch) is injectable for tests.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        benchmark: str,
        submitter: str = "perfsuite",
        *,
        namespace: str = "",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.benchmark = benchmark
        self.submitter = submitter
        self.namespace = namespace
        self._clock = clock
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO | None = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
        self.started = False
        self.stopped = False

    # -- low level -------------------------------------------------------------------------
    def log(
        self,
        key: str,
        value: Any = None,
        metadata: dict[str, Any] | None = None,
        event_type: str = POINT_IN_TIME,
        time_ms: int | None = None,
    ) -> str:
        """Write and flush one line; returns it. Raises ValueError once the file is closed."""
        if self._fh is None:
            raise ValueError(f"{self.path}: MLPerf log already closed")
        if time_ms is None:
            time_ms = round(self._clock() * 1000.0)
        meta = _caller()
        meta.update(metadata or {})
        line = format_line(key, value, time_ms, event_type, meta, self.namespace)
        self._fh.write(line + "\n")
        self._fh.flush()
        return line

    # -- run phases ------------------------------------------------------------------------
    def start(self, config: dict[str, Any] | None = None) -> None:
        """Submission keys, init_start, the configuration, init_stop, run_start.

        `config` may override submission_* keys and carries global_batch_size, seed, opt_* and
        the other keys in CONFIG_KEYS; keys with value None and unknown keys are not logged.
        """
        config = dict(config or {})
        self.log("init_start", None, event_type=INTERVAL_START)
        submission = {
            "submission_benchmark": self.benchmark,
            "submission_org": self.submitter,
            **SUBMISSION_DEFAULTS,
        }
        for key in list(submission):
            if config.get(key) is not None:
                submission[key] = config[key]
        for key, value in submission.items():
            self.log(key, value)
        self.log("cache_clear", True)
        for key in CONFIG_KEYS:
            if config.get(key) is not None:
                self.log(key, config[key])
        for key in sorted(k for k in config if k.startswith("opt_")):
            if config[key] is not None:
                self.log(key, config[key])
        self.log("init_stop", None, event_type=INTERVAL_END)
        self.log("run_start", None, event_type=INTERVAL_START)
        self.started = True

    def epoch_start(self, epoch: int) -> None:
        self.log("epoch_start", None, {"epoch_num": epoch}, INTERVAL_START)

    def epoch_stop(self, epoch: int) -> None:
        self.log("epoch_stop", None, {"epoch_num": epoch}, INTERVAL_END)

    def eval_start(self, epoch: float) -> None:
        """Optional: mark the evaluation interval (MLPerf's checker expects it)."""
        self.log("eval_start", None, {"epoch_num": epoch}, INTERVAL_START)

    def eval_stop(self, epoch: float) -> None:
        self.log("eval_stop", None, {"epoch_num": epoch}, INTERVAL_END)

    def eval(self, epoch: float, accuracy: float, samples: int | None = None) -> None:
        """`eval_accuracy` (a fraction in [0, 1]) after `epoch` epochs (may be fractional)."""
        meta: dict[str, Any] = {"epoch_num": epoch}
        if samples is not None:
            meta["samples_count"] = int(samples)
        self.log("eval_accuracy", accuracy, meta)

    def stop(self, success: bool) -> None:
        """`run_stop` with status success/aborted, then close the file. Idempotent."""
        if self.stopped:
            return
        status = "success" if success else "aborted"
        self.log("run_stop", None, {"status": status}, INTERVAL_END)
        self.stopped = True
        self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> MLLogWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self.started and not self.stopped and self._fh is not None:
            self.stop(success=False)
        self.close()
