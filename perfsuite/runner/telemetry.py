"""Device telemetry sampled in a background thread, streamed to a CSV sidecar.

CPU utilization and resident memory come from psutil. On NVIDIA GPUs, utilization, SM clock,
power and memory come from NVML (nvidia-ml-py); without one, GPU columns stay empty and the
summary says why. Sampling is cheap (one psutil call and a few NVML queries per interval).
"""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path
from typing import Any

from perfsuite.record.sidecars import TELEMETRY_COLUMNS as COLUMNS


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

    def __init__(self, csv_path: Path, interval_s: float = 0.5, gpu_index: int | None = None):
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
        self._stop = threading.Event()
        self._primed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="perfsuite-telemetry", daemon=True)

    def __enter__(self) -> TelemetrySampler:
        self._fh = self.path.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._fh)
        self._writer.writerow(COLUMNS)
        self._t0 = time.perf_counter()
        self._thread.start()
        # The thread's start and first psutil call happen here, before the caller starts its
        # clock, not in the clock's first milliseconds (capture parity: docs/seam.md).
        self._primed.wait(timeout=5.0)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5 * self.interval_s + 1)
        self._fh.close()

    def _loop(self) -> None:
        # Prime here, not in __enter__: psutil keeps cpu_percent(None)'s last reading per
        # thread, so a reading primed in the caller's thread left this one's first sample 0.0.
        try:
            self.psutil.cpu_percent(None)
        finally:
            self._primed.set()
        while not self._stop.wait(self.interval_s):
            self._take()

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
        self.rows.append(row)
        self._writer.writerow(["" if v is None else v for v in row])
        self._fh.flush()

    def summary(self) -> dict[str, Any]:
        def col(i: int) -> list[float]:
            return [r[i] for r in self.rows if r[i] is not None]

        def mean(v: list[float]) -> float | None:
            return sum(v) / len(v) if v else None

        cpu, rss = col(1), col(2)
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
                "note": "system-wide CPU utilization, percent of all cores",
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
        if not self.rows:
            out["notes"].append("run shorter than one sampling interval: no samples")
        return out


class NullTelemetry:
    """Stands in for the sampler when capture is off."""

    def __enter__(self) -> NullTelemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def summary(self) -> None:
        return None
