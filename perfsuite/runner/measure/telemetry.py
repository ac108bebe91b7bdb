"""Device telemetry sampled in a background thread, streamed to a CSV sidecar.

CPU utilization and resident memory come from psutil: the machine's utilization (every
process, percent of all cores: on a shared machine mostly other jobs) and this process's own
(percent of one core, so a process keeping 4 threads busy reads 400). On NVIDIA GPUs,
utilization, SM clock, power and memory come from NVML (nvidia-ml-py); without one, GPU
columns stay empty and the summary says why. Sampling is cheap (two psutil calls and a few
NVML queries per interval). A sampler that fails stops; the run goes on (runner/engine/contain.py).
"""

from __future__ import annotations

import contextlib
import csv
import threading
import time
from pathlib import Path
from typing import Any

from perfsuite.record.sidecars import TELEMETRY_COLUMNS as COLUMNS
from perfsuite.runner.engine.contain import LOGGER, collector, one_line, record_failure, run_log

LOST = "telemetry (CPU/GPU utilization, memory, clocks, power over time)"


class _Nvml:
    """Thin NVML reader for one GPU; `open` returns None (with a reason) when unavailable."""

    def __init__(self, pynvml: Any, handle: Any) -> None:
        self.nv = pynvml
        self.handle = handle
        self.name = pynvml.nvmlDeviceGetName(handle)
        if isinstance(self.name, bytes):
            self.name = self.name.decode()
        try:
            mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
            self.max_sm_clock_hz: float | None = mhz * 1e6
        except Exception:
            self.max_sm_clock_hz = None

    @classmethod
    def open(cls, index: int) -> tuple[_Nvml | None, str]:
        try:
            import pynvml
        except ImportError:
            return None, "nvidia-ml-py not installed: GPU telemetry not collected"
        try:
            pynvml.nvmlInit()
            return cls(pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)), ""
        except Exception as exc:
            return None, f"NVML unavailable ({exc}): GPU telemetry not collected"

    def sample(self) -> list[float | None]:
        nv, h = self.nv, self.handle
        util = nv.nvmlDeviceGetUtilizationRates(h).gpu
        clock = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM) * 1e6
        power = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
        mem = nv.nvmlDeviceGetMemoryInfo(h).used
        return [float(util), float(clock), float(power), float(mem)]


class TelemetrySampler:
    """Context manager: samples every `interval_s` until exit, then `summary()`."""

    def __init__(
        self,
        csv_path: Path,
        interval_s: float = 0.5,
        gpu_index: int | None = None,
        rec: Any = None,
    ):
        import psutil

        self.path = Path(csv_path)
        self.interval_s = interval_s
        self.proc = psutil.Process()
        self.psutil = psutil
        self.notes: list[str] = []
        self.gpu: _Nvml | None = None
        if gpu_index is None:
            self.notes.append("no NVIDIA GPU in use: GPU telemetry not collected")
        else:
            self.gpu, why = _Nvml.open(gpu_index)
            if why:
                self.notes.append(why)
        self.rows: list[list[float | None]] = []
        self.rec = rec  # the run's Recorder: a failure while sampling is recorded there
        self.failed = ""  # the sampler's error, once it stopped on one
        self._reported = False
        self._log = contextlib.ExitStack()
        self._stop = threading.Event()
        self._primed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="perfsuite-telemetry", daemon=True)

    def __enter__(self) -> TelemetrySampler:
        if self.rec is not None:  # the thread's traceback, if it fails, goes to the run's log
            self._log.enter_context(run_log(self.rec))
        try:
            self._fh = self.path.open("w", newline="", encoding="utf-8")
            self._writer = csv.writer(self._fh)
            self._writer.writerow(COLUMNS)
        except Exception as exc:
            if self.rec is None:
                raise
            self._fail(exc)  # no thread: the run goes on without telemetry
            return self
        self._t0 = time.perf_counter()
        self._thread.start()
        # The thread's start and first psutil call happen here, before the caller starts its
        # clock, not in the clock's first milliseconds (capture parity: docs/seam.md).
        self._primed.wait(timeout=5.0)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5 * self.interval_s + 1)
        if hasattr(self, "_fh"):
            self._fh.close()
        self._report()
        self._log.close()

    def _fail(self, exc: Exception) -> None:
        self.failed = one_line(exc)
        LOGGER.error("telemetry sampling stopped; the run went on without it", exc_info=True)

    def _report(self) -> None:
        """Record a sampler failure once, from the caller's thread (the record is not
        written from the sampling thread)."""
        if self.failed and self.rec is not None and not self._reported:
            self._reported = True
            record_failure(self.rec, "telemetry", self.failed, LOST)

    def _loop(self) -> None:
        # Prime here, not in __enter__: psutil keeps cpu_percent(None)'s last reading per
        # thread, so a reading primed in the caller's thread left this one's first sample 0.0.
        try:
            self.psutil.cpu_percent(None)
            self.proc.cpu_percent(None)
        except Exception as exc:
            self._fail(exc)
            return
        finally:
            self._primed.set()
        while not self._stop.wait(self.interval_s):
            try:
                self._take()
            except Exception as exc:  # contained: the training thread never sees it
                self._fail(exc)
                return

    def _take(self) -> None:
        row: list[float | None] = [
            round(time.perf_counter() - self._t0, 4),
            self.psutil.cpu_percent(None),
            float(self.proc.memory_info().rss),
        ]
        try:
            row += self.gpu.sample() if self.gpu else [None] * 4
        except Exception as exc:  # a GPU that stops answering must not kill the run
            self.notes.append(f"GPU sampling stopped: {exc}")
            self.gpu = None
            row += [None] * 4
        row.append(self.proc.cpu_percent(None))
        self.rows.append(row)
        self._writer.writerow(["" if v is None else v for v in row])
        self._fh.flush()

    def summary(self) -> dict[str, Any]:
        def col(i: int) -> list[float]:
            return [r[i] for r in self.rows if r[i] is not None]

        def mean(v: list[float]) -> float | None:
            return sum(v) / len(v) if v else None

        cpu, rss, own = col(1), col(2), col(7)
        out: dict[str, Any] = {
            "sampler": "psutil" + (" + NVML" if self.gpu else ""),
            "interval_s": self.interval_s,
            "samples": len(self.rows),
            "file": self.path.name,
            "cpu": {
                "util_pct_mean": mean(cpu),
                "util_pct_max": max(cpu) if cpu else None,
                "rss_bytes_mean": mean(rss),
                "rss_bytes_max": max(rss) if rss else None,
                "process_util_pct_mean": mean(own),
                "process_util_pct_max": max(own) if own else None,
                "note": (
                    "util_pct: machine-wide CPU utilization, every process, percent of all "
                    f"{self.psutil.cpu_count() or '?'} cores; process_util_pct: this process "
                    "alone, percent of one core"
                ),
            },
            "gpu": None,
            "notes": list(self.notes),
        }
        if self.gpu and col(3):
            clk = col(4)
            out["gpu"] = {
                "name": self.gpu.name,
                "util_pct_mean": mean(col(3)),
                "sm_clock_hz_mean": mean(clk),
                "sm_clock_hz_min": min(clk) if clk else None,
                "sm_clock_hz_max_spec": self.gpu.max_sm_clock_hz,
                "power_w_mean": mean(col(5)),
                "mem_used_bytes_max": max(col(6)) if col(6) else None,
            }
        if self.failed:
            out["notes"].append(f"telemetry sampling stopped: {self.failed}")
        elif not self.rows:
            out["notes"].append("run shorter than one sampling interval: no samples")
        self._report()
        return out


def open_sampler(rec: Any, interval_s: float, gpu_index: int | None) -> TelemetrySampler | None:
    """The run's sampler writing `telemetry.csv`, or None when it cannot be built (recorded
    as lost): telemetry never stops a run (runner/engine/contain.py)."""
    sampler = None
    with collector(rec, "telemetry", LOST):
        sampler = TelemetrySampler(rec.run_dir / "telemetry.csv", interval_s, gpu_index, rec)
        rec.record["sidecars"]["telemetry"] = "telemetry.csv"
    return sampler


class NullTelemetry:
    """Stands in for the sampler when capture is off."""

    def __enter__(self) -> NullTelemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def summary(self) -> None:
        return None
