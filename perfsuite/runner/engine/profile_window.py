"""One sampled kernel/op timeline window per run, through torch.profiler with a schedule.

Only a few training steps are profiled (skip `wait`, `warmup` more, record `active`), so the
cost stays small; the trace is saved gzipped as a Chrome-trace sidecar and per-op aggregates go
into the record.
"""

from __future__ import annotations

import bisect
import gzip
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from perfsuite.record import quantity

TRACE_NAME = "trace.json.gz"
# Bounds of one window, whatever --profile-steps asks: the profiler keeps every event of the
# window in memory until it closes (100,000 digits steps grew past 3 GiB), and a window is a
# sample, not a run. The window closes at the first bound it meets and says which.
MAX_WINDOW_STEPS = 1000
MAX_WINDOW_S = 120.0
MAX_WINDOW_BYTES = 2 * 1024**3  # growth of the process's peak resident memory


def _peak_rss_bytes() -> int:
    """The process's peak resident memory so far (bytes; 0 where unknown)."""
    try:
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak) * (1 if sys.platform == "darwin" else 1024)
    except (ImportError, OSError):
        return 0


def _us(event: Any, name: str) -> float:
    """A key_averages time field in seconds (older torch names it `cuda` instead of `device`)."""
    value = getattr(event, name, None)
    if value is None:
        value = getattr(event, name.replace("device", "cuda"), 0.0)
    return float(value) / 1e6


def step_cvs(events: Any, on_gpu: bool) -> dict[str, float]:
    """Per op: coefficient of variation (sample stdev / mean) of its time per profiled step.

    The time is the one the roofline judges: inclusive device time on GPUs, inclusive host
    time otherwise. Why: it is the window's own noise; repeated runs cannot agree on an op's
    roof fraction more closely than the op's steps agree with each other. A host event belongs
    to the host `ProfilerStep` range in which it starts, whichever thread ran it; a device
    event (kernel, copy) to the device-side copy of that range. The two sets of ranges are
    kept apart: on a GPU each step appears twice (host and `gpu_user_annotation`), and mixing
    them put every op into alternate half-steps (every CV read ~100%).
    """
    from torch.autograd import DeviceType

    host_steps, device_steps = [], []
    host_items, device_items = [], []
    for e in events:
        on_host = e.device_type == DeviceType.CPU
        if _is_step(e.name):
            (host_steps if on_host else device_steps).append((e.time_range.start, e.time_range.end))
        elif on_host:
            seconds = _us(e, "device_time_total") if on_gpu else e.cpu_time_total / 1e6
            host_items.append((e.name, e.time_range.start, seconds))
        else:
            device_items.append((e.name, e.time_range.start, _us(e, "device_time_total")))
    cvs = cvs_per_step(device_steps, device_items)
    cvs.update(cvs_per_step(host_steps, host_items))
    return cvs


def _is_step(name: str) -> bool:
    return name.startswith("ProfilerStep")


def cvs_per_step(
    steps: list[tuple[float, float]], items: list[tuple[str, float, float]]
) -> dict[str, float]:
    """Framework-free core of `step_cvs`: `steps` are (start, end) ranges, `items` are
    (op name, start, seconds); an item belongs to the step in which it starts."""
    steps = sorted(steps)
    if len(steps) < 2:
        return {}
    starts = [a for a, _ in steps]
    per_step: dict[str, list[float]] = {}
    for name, start, seconds in items:
        i = bisect.bisect_right(starts, start) - 1
        if i < 0 or start >= steps[i][1]:
            continue
        per_step.setdefault(name, [0.0] * len(steps))[i] += seconds
    out = {}
    for name, times in per_step.items():
        mean = statistics.fmean(times)
        if mean > 0:
            out[name] = statistics.stdev(times) / mean
    return out


class ProfileWindow:
    """Call `step()` after every training step; `result()` once the window has closed."""

    def __init__(
        self,
        run_dir: Path,
        backend: Any,
        wait: int = 2,
        warmup: int = 1,
        active: int = 3,
        experimental_config: Any = None,
        trace_name: str = TRACE_NAME,
    ) -> None:
        import torch

        self.run_dir = run_dir
        self.trace_name = trace_name
        self.backend = backend
        self.cap_note: str | None = None
        if active > MAX_WINDOW_STEPS:
            self.cap_note = (
                f"profile window capped at {MAX_WINDOW_STEPS} steps ({active} asked): the "
                "step bound (perfsuite.runner.engine.profile_window.MAX_WINDOW_STEPS)"
            )
            active = MAX_WINDOW_STEPS
        self.wait, self.warmup, self.active = wait, warmup, active
        self._started = time.perf_counter()
        self._rss0 = _peak_rss_bytes()
        activities = [torch.profiler.ProfilerActivity.CPU]
        if backend.device.is_gpu:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        kwargs: dict[str, Any] = {}
        if experimental_config is not None:
            kwargs["experimental_config"] = experimental_config
        self.prof = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1),
            record_shapes=True,
            on_trace_ready=self._ready,
            **kwargs,
        )
        self.steps_seen = 0
        self.stamps: list[float] = []
        self.ops: list[dict[str, Any]] = []
        self.done = False
        self.prof.start()

    @property
    def total_steps(self) -> int:
        return self.wait + self.warmup + self.active

    def step(self) -> None:
        """Advance the schedule; stamps the boundaries of the active steps for step time."""
        if self.done:
            return
        if self.steps_seen >= self.wait + self.warmup - 1:
            self.backend.sync()
            self.stamps.append(time.perf_counter())
        self.steps_seen += 1
        if self.steps_seen >= self.total_steps:
            self.prof.step()
            self.close()
            return
        recorded = len(self.stamps) - 1  # active steps recorded so far
        bound = self._bound() if recorded >= 1 else None
        if bound:  # stop inside the active phase: the trace holds the steps recorded so far
            self.cap_note = (
                f"profile window cut at {recorded} of {self.active} steps: {bound} "
                "(perfsuite.runner.engine.profile_window)"
            )
            self.active = recorded
            self.close()
            return
        self.prof.step()

    def _bound(self) -> str | None:
        """The time or memory bound the window has met, in words, or None."""
        elapsed = time.perf_counter() - self._started
        if elapsed > MAX_WINDOW_S:
            return f"the time bound ({elapsed:.0f} s > MAX_WINDOW_S {MAX_WINDOW_S:.0f} s)"
        grown = _peak_rss_bytes() - self._rss0
        if grown > MAX_WINDOW_BYTES:
            return (
                f"the memory bound (peak resident memory grew {grown / 2**30:.1f} GiB > "
                f"MAX_WINDOW_BYTES {MAX_WINDOW_BYTES / 2**30:.0f} GiB)"
            )
        return None

    def close(self) -> None:
        if not self.done:
            self.done = True
            self.prof.stop()

    def _ready(self, prof: Any) -> None:
        fd, tmp = tempfile.mkstemp(suffix=".json", dir=self.run_dir)
        os.close(fd)
        try:
            prof.export_chrome_trace(tmp)
            target = self.run_dir / self.trace_name
            with open(tmp, "rb") as src, gzip.open(str(target) + ".tmp", "wb", 6) as dst:
                shutil.copyfileobj(src, dst)
            os.replace(str(target) + ".tmp", target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        on_gpu = self.backend.device.is_gpu
        for ev in prof.key_averages():
            if ev.key.startswith("ProfilerStep"):
                continue
            self.ops.append(
                {
                    "op": ev.key,
                    "calls": int(ev.count),
                    "self_time_s": ev.self_cpu_time_total / 1e6,
                    "total_time_s": ev.cpu_time_total / 1e6,
                    # self: kernels launched by this op itself; total: also by its children
                    "device_time_s": _us(ev, "self_device_time_total") if on_gpu else None,
                    "device_total_time_s": _us(ev, "device_time_total") if on_gpu else None,
                }
            )
        cvs = step_cvs(prof.events(), on_gpu)
        for row in self.ops:
            row["step_cv"] = cvs.get(row["op"])
        self.ops.sort(key=lambda o: -o["self_time_s"])

    def result(self) -> dict[str, Any] | None:
        """The record's `timeline` section, or None if the window never completed."""
        if not self.ops:
            return None
        deltas = [b - a for a, b in zip(self.stamps, self.stamps[1:], strict=False)]
        step_s = sum(deltas) / len(deltas) if deltas else None
        out = {
            "trace": self.trace_name,
            "tool": "torch.profiler",
            "steps": self.active,
            "step_time": quantity(
                step_s,
                "s",
                "measured",
                f"mean wall time of the {self.active} profiled steps (profiler on, perf_counter)",
            ),
            "ops": self.ops,
        }
        if self.cap_note:
            out["notes"] = [self.cap_note]
        return out
