"""`perfsuite.track`: the same run record for a user's own model and training loop.

    with perfsuite.track("my-task", metric="top1", threshold=0.9,
                         model=model, optimizer=opt) as run:
        for epoch in range(epochs):
            for x, y in run.epoch(loader):       # the training clock runs while iterating
                run.step(train_step, x, y)       # your step; perfsuite may take detours
            run.evaluate(top1=accuracy(model))   # off the clock; True once reached
            if run.reached:
                break

The clock follows the runner's rule: training (data loading included) counts, evaluation does
not. Instrumentation runs in detours with the clock paused: on the second step, one uncounted
and one FLOP-counted call of your step; in the middle epoch, a profile window of a few calls of
your step on the current batch. Each detour snapshots the model, optimizer (and scheduler, if
given) and RNG state and restores them, so your training is unchanged. A step function that
changes other state (its own EMA copy, counters) should be passed `detour_safe=False` to
`run.step` to keep it out of detours. Unlike `perfsuite run`, which profiles after the last
timed epoch, the window stays in the middle epoch: your contexts around the step (autocast,
no-grad regions) are live only inside your loop, so a window at exit could profile another
math; the epochs after it run after the profiler (docs/seam.md, "Capture parity").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from perfsuite.backends import torch_backend
from perfsuite.hostinfo import low_precision_note
from perfsuite.record import quantity
from perfsuite.runner import capture
from perfsuite.runner.clock import ClockReading
from perfsuite.runner.profile_window import ProfileWindow
from perfsuite.runner.recorder import Recorder
from perfsuite.workloads.state import TrainState, detour


class Tracker:
    """One run of a user's loop. Use through `perfsuite.track(...)` as a context manager."""

    def __init__(
        self,
        task: str,
        *,
        threshold: float,
        metric: str = "top1",
        model: Any = None,
        optimizer: Any = None,
        scheduler: Any = None,
        device: str = "cpu",
        out: str | Path = "runs",
        dataset: str = "",
        epochs: int | None = None,
        batch_size: int | None = None,
        capture: bool = True,
        profile_steps: int = 3,
        measure_peaks: bool = False,
        telemetry_interval_s: float = 0.5,
        progress: bool = False,
    ) -> None:
        self.backend = torch_backend(device)
        self.backend.check_available()
        self.capture_on = capture and model is not None and optimizer is not None
        self.profile_steps = profile_steps
        self.epochs_hint = epochs
        self.batch_size = batch_size
        self.measure_peaks = measure_peaks
        config = {
            "source": "perfsuite.track (user training loop)",
            "device": str(self.backend.device),
            "epochs": epochs,
            "batch_size": batch_size,
            "capture": self.capture_on,
            "profile_steps": profile_steps,
        }
        self.rec = Recorder(
            out,
            task,
            {
                "name": task,
                "workload": "user loop",
                "metric": metric,
                "threshold": threshold,
                "dataset": dataset,
            },
            self.backend.device,
            config,
            framework=f"pytorch {self.backend.version}",
        )
        self.run_dir, self.record = self.rec.run_dir, self.rec.record
        if model is not None:
            self.record["model"] = type(model).__name__
            params = sum(p.numel() for p in model.parameters())
            self.record["extra"] = {"parameters": params}
        self.model = model
        self.state = (
            TrainState(model, model, optimizer, scheduler, None, self.backend)
            if model is not None and optimizer is not None
            else None
        )
        if not self.capture_on:
            self.rec.flag("no model/optimizer given to perfsuite.track: no FLOP count or window")
        self.telemetry_interval_s = telemetry_interval_s
        self.telemetry: Any = None
        self.reached = False
        self._epoch = 0
        self._steps_total = 0
        self._epoch_steps = 0
        self._epoch_samples = 0
        self._samples = 0
        self._paused = ClockReading()  # the detours inside the epoch: wall, CPU, page faults
        self._train_time = 0.0
        self._stall: list[float] = []
        self._setup_s: dict[str, float] = {}
        self._window_done = False

    # -- context -------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        if self.capture_on:
            from perfsuite.runner.telemetry import TelemetrySampler

            self.telemetry = TelemetrySampler(
                self.run_dir / "telemetry.csv",
                self.telemetry_interval_s,
                self.backend.device.gpu_index,
            )
            self.record["sidecars"]["telemetry"] = "telemetry.csv"
            self.telemetry.__enter__()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if self.telemetry is not None:
            self.telemetry.__exit__(kind, exc, tb)
            self.record["telemetry"] = self.telemetry.summary()
        rec = self.record
        if exc is not None and rec["status"] == "running":
            rec["status"] = "interrupted" if isinstance(exc, KeyboardInterrupt) else "crashed"
            rec["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        self.rec.finish()
        rec.setdefault("extra", {})["setup_s"] = self._setup_s
        self.rec.close()

    # -- the loop ------------------------------------------------------------------------

    def epoch(self, batches: Iterable[Any]) -> Iterator[Any]:
        """Iterate one epoch of `batches` with the training clock running; the time spent
        waiting inside `next()` is recorded as input stall."""
        self._epoch += 1
        self._epoch_steps = self._epoch_samples = 0
        self._paused = ClockReading()
        stall = 0.0
        self.backend.sync()
        start = ClockReading.now()
        it = iter(batches)
        while True:
            t = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                stall += time.perf_counter() - t
                break
            stall += time.perf_counter() - t
            yield item
        self.backend.sync()
        used = ClockReading.now() - start - self._paused  # the detours taken out
        seconds = used.wall
        self._train_time += seconds
        self.rec.epoch_times.append(seconds)
        self.rec.add_epoch_usage(used)
        self._stall.append(stall)
        self.rec.set_throughput(self._epoch_steps, self.batch_size or self._last_batch)
        self.rec.set_data("user loader", "the user's own iterable", self._stall)
        self._epoch_seconds = seconds

    _last_batch = 1
    _epoch_seconds = 0.0

    def step(self, fn: Callable[..., Any], *args: Any, detour_safe: bool = True, **kw: Any) -> Any:
        """Call your training step `fn(*args, **kw)` and return what it returns."""
        first = next((a for a in args if hasattr(a, "shape") and len(a.shape) > 0), None)
        size = int(first.shape[0]) if first is not None else 1
        self._last_batch = size
        if detour_safe and self.capture_on:
            self._maybe_detour(fn, args, kw)
        out = fn(*args, **kw)
        self._steps_total += 1
        self._epoch_steps += 1
        self._epoch_samples += size
        self._samples += size
        if self._steps_total % 50 == 1 and hasattr(out, "detach"):
            value = float(out.detach().float())
            if not math.isfinite(value):
                self.record["status"] = "diverged"
                self.record["error"] = (
                    f"did not converge: non-finite loss at step {self._steps_total}"
                )
                raise FloatingPointError(self.record["error"])
        return out

    def _maybe_detour(self, fn: Callable[..., Any], args: tuple, kw: dict) -> None:
        mid = max(1, ((self.epochs_hint or 2) + 1) // 2)
        if self._steps_total == 1 and "work" not in self.record:
            self._setup_s["flop_count_s"] = self._paused_for(self._count, fn, args, kw)
        elif (
            not self._window_done
            and self.profile_steps > 0
            and self._epoch >= mid
            and self._epoch_steps == 2
        ):
            self._setup_s["profile_window_s"] = self._paused_for(self._window, fn, args, kw)

    def _paused_for(self, detour_fn: Callable[..., None], *args: Any) -> float:
        """Run a detour with the epoch's clock paused: its wall time, process CPU time and page
        faults are taken out of the epoch's. Returns its wall seconds."""
        start = ClockReading.now()
        detour_fn(*args)
        took = ClockReading.now() - start
        self._paused = self._paused + took
        return took.wall

    def _count(self, fn: Callable[..., Any], args: tuple, kw: dict) -> None:
        from perfsuite.flops import OpCounter

        counter = OpCounter()
        assert self.state is not None
        with detour(self.state):
            fn(*args, **kw)  # uncounted: optimizer state as in every later step
            with counter:
                fn(*args, **kw)
        work = counter.result().to_work_section()
        work["batch_size"] = self._last_batch
        first = next((a for a in args if hasattr(a, "dtype")), None)
        work["dtype"] = str(getattr(first, "dtype", "float32")).replace("torch.", "")
        self.record["work"] = work
        from perfsuite.backends.torch_math import math_policy

        param = str(next(self.state.module.parameters()).dtype).replace("torch.", "")
        # autocast entered inside the user's step is not visible from here; around it, it is
        autocast = autocast_dtype(self.backend.device.kind)
        self.record["math"] = math_policy(
            autocast_dtype=autocast,
            param_dtype=param,
            activation_dtype=work["dtype"],
            on_cpu=not self.backend.device.is_gpu,
        )
        slow = low_precision_note(autocast, self.record["math"]["autocast_native"])
        if slow:
            self.rec.flag(slow)
        ceil, why = capture.resolve_ceilings(
            str(self.backend.device), work["dtype"], self.measure_peaks, self.record["math"]
        )
        self.record["ceilings"] = ceil
        if why:
            self.rec.flag(why)

    def _window(self, fn: Callable[..., Any], args: tuple, kw: dict) -> None:
        assert self.state is not None
        window = ProfileWindow(
            self.run_dir, self.backend, wait=1, warmup=1, active=self.profile_steps
        )
        with detour(self.state):
            for _ in range(window.total_steps):
                fn(*args, **kw)
                window.step()
            window.close()
        self._window_done = True
        timeline = window.result()
        if timeline:
            timeline["epoch"] = self._epoch
            timeline["note"] = "profiled on repeated calls of the user's step on one batch"
            self.record["timeline"] = timeline
            self.record["sidecars"]["trace"] = timeline["trace"]

    def evaluate(self, **metrics: float) -> bool:
        """Record this epoch's held-out metrics (call after `epoch()` finished); True once the
        threshold is reached."""
        if self._epoch == 0:
            raise ValueError("perfsuite.track: evaluate() before any epoch()")
        timeline = self.record.get("timeline")
        if timeline and timeline.get("epoch") == self._epoch and self._epoch_steps:
            timeline["measured_step_time"] = quantity(
                self._epoch_seconds / self._epoch_steps,
                "s",
                "measured",
                f"training clock of epoch {self._epoch} / its steps (detours excluded)",
            )
        self.reached = self.rec.add_evaluation(
            self._epoch,
            self._train_time,
            {k: float(v) for k, v in metrics.items()},
            samples=self._samples,
        )
        if self.reached and self.model is not None and "checkpoint" not in self.record:
            self._save_threshold_model(metrics)
        return self.reached

    def _save_threshold_model(self, metrics: dict[str, float]) -> None:
        """Keep the model that first met the threshold, as `perfsuite run` does (off the
        clock: evaluate() is called between epochs); see runner/checkpoint.py."""
        from perfsuite.runner.checkpoint import save_threshold_model

        metric = (self.record.get("task") or {}).get("metric", "")
        section, self._setup_s["checkpoint_s"] = capture.timed(
            save_threshold_model,
            self.run_dir,
            self.model,
            epoch=self._epoch,
            evaluation_index=len(self.record["evaluations"]) - 1,
            metric=metric,
            value=float(metrics.get(metric, float("nan"))),
        )
        self.record["checkpoint"] = section
        self.record["sidecars"]["checkpoint"] = section["file"]
        self.rec.write()


def track(task: str, **kwargs: Any) -> Tracker:
    """Measure a user's own training loop; see the module docstring for the pattern."""
    return Tracker(task, **kwargs)


def autocast_dtype(kind: str) -> str | None:
    """The autocast dtype active around the step call, if any."""
    import torch

    if not torch.is_autocast_enabled(kind):
        return None
    return str(torch.get_autocast_dtype(kind)).replace("torch.", "")
