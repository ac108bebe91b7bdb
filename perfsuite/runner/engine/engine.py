"""The training engine: one object that both routes into a run record drive.

`perfsuite run` (runner/routes/run.py) pulls: it calls the workload's `train_step` on each batch.
`perfsuite.track` (runner/routes/track.py) is pushed: the user's loop calls it. Either way the
engine
owns what a measured run is made of: the clock's edges (`ClockReading`, with the detours inside
an epoch taken out), the input stall, the loss and its divergence check, evaluations and the
threshold checkpoint, telemetry, energy, the bookkeeping of every detour (contained, off the
clock, its seconds under `extra.setup_s`), the step time the profile window is reconciled to,
and the run's final status. The routes differ only in who calls and where the detours fall.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

from perfsuite.record import quantity
from perfsuite.runner.engine import capture
from perfsuite.runner.engine.clock import ClockReading
from perfsuite.runner.measure import model_flops
from perfsuite.runner.measure.energy import EnergyClock, training_energy
from perfsuite.runner.measure.telemetry import open_sampler
from perfsuite.runner.record.chatter import LOG_NAME, stderr_to
from perfsuite.runner.record.contain import collector, formula_error_flag
from perfsuite.runner.record.recorder import Recorder

END = object()  # what `next_batch` returns once the epoch's batches ran out


class Diverged(FloatingPointError):
    """Training loss became NaN or infinite: the run did not converge (status "diverged").
    A FloatingPointError, so a user's loop sees the arithmetic failure it is."""


class Terminated(RuntimeError):
    """The process received SIGTERM."""


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside the block, SIGTERM raises Terminated (the run is recorded as interrupted);
    outside the main thread, where no handler can be set, it does nothing."""

    def on_term(signum: int, frame: Any) -> None:
        raise Terminated("terminated by SIGTERM")

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not in the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class LossMeter:
    """The losses of one epoch, summed where the step left them (on a GPU: no sync per step;
    on the host as Python floats, the cheapest there). A NaN or inf in any step keeps the sum
    non-finite, so checking the sum every `check_every` steps and at the epoch's end finds
    every one, not only those at a check. `read` takes the loss out of what a step returned
    (None: it held none); `zero` and `plus` start and extend the sum in the step's framework."""

    def __init__(
        self,
        check_every: int,
        read: Callable[[Any], Any],
        zero: Callable[[], Any] = float,
        plus: Callable[[Any, Any], Any] = lambda total, loss: total + float(loss),
    ) -> None:
        self.check_every = check_every
        self.read, self.zero, self.plus = read, zero, plus
        self.reset()

    def reset(self) -> None:
        """A new epoch's sum; what the last one added since the mark is carried over."""
        if getattr(self, "count", 0):
            self.carried = (
                self.carried[0] + float(self.total) - self.marked[0],
                self.carried[1] + self.count - self.marked[1],
            )
        elif not hasattr(self, "carried"):
            self.carried = (0.0, 0)
        self.total: Any = self.zero()
        self.count = 0
        self.marked: tuple[float, int] = (0.0, 0)

    def mark(self) -> None:
        """An evaluation: `since_mark` counts from here (a sync on a GPU: off the clock)."""
        self.marked = (float(self.total) if self.count else 0.0, self.count)
        self.carried = (0.0, 0)

    def since_mark(self) -> float | None:
        """The mean loss of the steps since the last `mark` (across epochs), None if none."""
        n = self.carried[1] + self.count - self.marked[1]
        if n <= 0:
            return None
        part = float(self.total) - self.marked[0] if self.count else 0.0
        return (self.carried[0] + part) / n

    def add(self, out: Any) -> bool:
        """Add a step's return value; False when it holds no loss."""
        loss = self.read(out)
        if loss is None:
            return False
        self.total = self.plus(self.total, loss)
        self.count += 1
        return True

    def due(self, steps: int) -> bool:
        return self.count > 0 and steps % self.check_every == 0

    def finite(self) -> bool:
        return math.isfinite(float(self.total))  # a sync on a GPU: only when due

    def mean(self) -> float | None:
        return float(self.total) / self.count if self.count else None


class Engine:
    """One run's clock, counts, evaluations, collectors and status, on one `Recorder`."""

    def __init__(
        self, rec: Recorder, backend: Any, loss: LossMeter, *, energy_wanted: bool = False
    ) -> None:
        """`energy_wanted`: the record gets an `energy` section even when the run ends before
        `measure_energy` (a crashed run says what it had)."""
        self.rec, self.record = rec, rec.record
        self.run_dir = rec.run_dir
        self.backend = backend
        self.loss = loss
        self.setup_s: dict[str, float] = {}
        self.energy = EnergyClock(None, "capture off: energy not read")
        self.energy_wanted = energy_wanted
        self.telemetry: Any = None
        # where data comes from, for the record's `data` section
        self.data_kind, self.data_description, self.data_source = "", "", None
        self.batch_size: int | None = None
        self.epoch = 0  # epochs begun
        self.in_epoch = False
        self.steps_total = 0
        self.epoch_steps = 0
        self.samples: int | None = 0  # None once a step's size is unknown
        self.epoch_samples: int | None = 0
        self.train_time = 0.0  # the training clock over finished epochs
        self.stall_s: list[float] = []
        self.last_epoch = (0.0, 0)  # (seconds, steps) of the last finished epoch
        self.epoch_loss: float | None = None
        self._rate: tuple[int, int | None] | None = None  # (steps, samples) of the last epoch
        self._start = ClockReading()
        self._paused = ClockReading()  # detours inside the epoch: wall, CPU, page faults
        self._pausing = 0
        self._stall = 0.0
        self._energy_mark = 0

    def set_data(self, source: Any, batch_size: int) -> None:
        """The data the steps draw from, for the record's `data` section."""
        self.data_kind, self.data_description = source.kind, source.description
        self.data_source, self.batch_size = source, batch_size

    def took(self, name: str, seconds: float) -> None:
        """Seconds of work off the clock (`data_load_s`, `inference_latency_s`, ...), for the
        record's `extra.setup_s`."""
        self.setup_s[name] = seconds

    # -- telemetry and energy -------------------------------------------------------------

    def measure_energy(self) -> None:
        """Read the device's energy counter on the clock's edges from here on."""
        self.energy_wanted = True
        self.energy = EnergyClock.for_device(self.backend.device.gpu_index)
        if not self.energy.available:
            self.rec.flag(f"energy not measured: {self.energy.reason}")

    def open_telemetry(self, interval_s: float) -> None:
        self.telemetry = open_sampler(self.rec, interval_s, self.backend.device.gpu_index)
        if self.telemetry is not None:
            self.telemetry.__enter__()

    def stop_telemetry(self, exc: BaseException | None = None) -> None:
        """Training is over: the samples end here (inference latency is not training)."""
        if self.telemetry is not None:
            self.telemetry.__exit__(type(exc) if exc else None, exc, None)
            self.record["telemetry"] = self.telemetry.summary()
            self.telemetry = None
        self.record.setdefault("telemetry", None)  # capture off: none taken

    # -- the clock ------------------------------------------------------------------------

    def open_epoch(self) -> None:
        """Start an epoch: queued device work first, the energy read outside the clock."""
        self.epoch += 1
        self.epoch_steps = 0
        self.epoch_samples = 0
        self._stall = 0.0
        self._paused = ClockReading()
        self.loss.reset()
        self.in_epoch = True
        self.backend.sync()
        self._energy_mark = len(self.energy.intervals_j)
        self.energy.start()
        self._start = ClockReading.now()

    def next_batch(self, batches: Iterator[Any]) -> Any:
        """The next batch, its wait counted as input stall; `END` once they ran out."""
        t = time.perf_counter()
        try:
            return next(batches, END)
        finally:
            self._stall += time.perf_counter() - t

    def stepped(self, out: Any, size: int | None) -> bool:
        """Count a step that returned `out` over `size` samples (None: unknown) and check its
        loss; raises Diverged when a check finds it non-finite. False: `out` held no loss."""
        self.steps_total += 1
        self.epoch_steps += 1
        if size is None:
            self.samples = self.epoch_samples = None
        else:
            if self.samples is not None:
                self.samples += size
            if self.epoch_samples is not None:
                self.epoch_samples += size
        if not self.loss.add(out):
            return False
        if self.loss.due(self.epoch_steps) and not self.loss.finite():
            raise self.diverge()
        return True

    def so_far(self) -> float:
        """Training seconds of the open epoch up to now (detours taken out)."""
        return (ClockReading.now() - self._start - self._paused).wall

    def close_epoch(self, *, may_raise: bool = True) -> float | None:
        """Stop the clock and record the epoch; its seconds, or None for a diverged one (not a
        finished epoch). A non-finite loss found here raises Diverged, unless `may_raise` is
        False (a generator closing, where it would be lost: the next call raises it)."""
        self.backend.sync()
        used = ClockReading.now() - self._start - self._paused
        self._stop_energy()
        self.in_epoch = False
        n = self.epoch_steps
        if self.record["status"] != "diverged" and n and not self.loss.finite():
            exc = self.diverge()
            if may_raise:
                raise exc
        if self.record["status"] == "diverged":
            del self.energy.intervals_j[self._energy_mark :]  # as its time: not an epoch
            return None
        seconds = used.wall
        self.train_time += seconds
        self.rec.epoch_times.append(seconds)
        self.rec.epoch_steps.append(n)
        self.rec.add_epoch_usage(used)
        self.stall_s.append(self._stall)
        self.last_epoch = (seconds, n)
        self.epoch_loss = self.loss.mean()
        if n:
            self._rate = (n, self.epoch_samples)
        if self._rate is not None:
            self.rec.set_throughput(self._rate[0], self.batch_size, self._rate[1])
        self.rec.set_data(
            self.data_kind, self.data_description, self.stall_s, self.data_source, self.samples
        )
        timeline = self.record.get("timeline")
        if timeline and timeline.get("epoch") == self.epoch:
            measured_step_time(timeline, self.epoch, *self.last_epoch)
        self.rec.write()
        return seconds

    def _stop_energy(self) -> None:
        """One energy interval per epoch: the pieces between the epoch's detours, summed."""
        self.energy.stop()
        pieces = self.energy.intervals_j[self._energy_mark :]
        if len(pieces) > 1:
            del self.energy.intervals_j[self._energy_mark :]
            self.energy.intervals_j.append(sum(pieces))

    def off_clock(self, fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
        """Run `fn` with the epoch's clock paused: its wall time, process CPU time, page faults
        and energy are taken out of the epoch's (queued device work is synced first, so it
        stays on the clock). Re-entrant. Returns fn's result and its wall seconds."""
        outer = self._pausing == 0
        if outer:
            self.backend.sync()
            if self.in_epoch:
                self.energy.stop()
        start = ClockReading.now()
        self._pausing += 1
        try:
            result = fn(*args)
        finally:
            self._pausing -= 1
            took = ClockReading.now() - start
            if outer:
                self._paused = self._paused + took
                if self.in_epoch:
                    self.energy.start()
        return result, took.wall

    # -- divergence and status ------------------------------------------------------------

    def diverge(self) -> Diverged:
        """Mark the run diverged (written at once); returns the exception to raise."""
        self.record["status"] = "diverged"
        self.record["error"] = f"did not converge: non-finite loss by step {self.steps_total}"
        self.rec.write()
        return Diverged(self.record["error"])

    def raise_if_diverged(self) -> None:
        if self.record["status"] == "diverged":
            raise Diverged(self.record["error"])

    def fail(self, exc: BaseException) -> None:
        """The status of a run that `exc` ended: diverged, interrupted (a signal) or crashed."""
        rec = self.record
        if isinstance(exc, Diverged):  # its message is the error (a rank's, in data-parallel)
            why = str(exc)
            rec["status"] = "diverged"
            rec["error"] = why if why.startswith("did not converge") else f"did not converge: {why}"
            return
        if rec["status"] != "running":
            return
        if isinstance(exc, (Terminated, KeyboardInterrupt)):  # a signal: stopped, not broken
            rec["status"] = "interrupted"
            rec["error"] = str(exc) if isinstance(exc, Terminated) else "interrupted by SIGINT"
            return
        rec["status"] = "crashed"
        rec["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]

    def end_training(self) -> None:
        """Training is over: `extra.training_ended_at` (and MLPerf's `run_stop`), before the
        work after it (checkpoint, window, inference latency) that is not training."""
        self.rec.stop_mllog()

    def close(self, exc: BaseException | None = None) -> None:
        """Finish the record, whatever ended the run (`exc`): energy, telemetry, setup
        seconds, derived model FLOPs, the final status; written."""
        if exc is not None:
            self.fail(exc)
        if self.energy_wanted:  # crashed runs keep theirs too
            tta = self.record.get("time_to_accuracy") or {}
            epoch = tta.get("epoch") if tta.get("reached") else None
            reached = None if epoch is None else math.ceil(float(epoch))
            self.record["energy"] = training_energy(self.energy, reached)
        self.stop_telemetry(exc)
        self.record.setdefault("extra", {})["setup_s"] = self.setup_s
        model_flops.complete(self.record)
        self.rec.finish()
        self.rec.close()

    # -- evaluation and the threshold model ------------------------------------------------

    def evaluate(
        self,
        epoch: float,
        train_time: float,
        metrics: dict[str, float],
        *,
        train_loss: float | None,
        eval_time_s: float | None = None,
        samples: int | None = None,
        train_loss_epoch: float | None = None,
    ) -> bool:
        """Record one evaluation; True once the threshold is reached. `samples`: trained so
        far, where the driver counts more than this process (every rank's); else the engine's.
        `train_loss_epoch`: the epoch's mean so far, where `train_loss` covers other steps."""
        self.record["telemetry"] = self.telemetry.summary() if self.telemetry else None
        return self.rec.add_evaluation(
            epoch,  # type: ignore[arg-type]  # a track's mid-epoch evaluation: a fraction
            train_time,
            metrics,
            train_loss=train_loss,
            eval_time_s=eval_time_s,
            samples=samples if samples is not None else self.samples if self.steps_total else None,
            train_loss_epoch=train_loss_epoch,
        )

    def keep_threshold_model(
        self, save: Callable[..., dict[str, Any]], module: Any, epoch: float, value: float
    ) -> None:
        """Save the model that first met the threshold (off the clock; runner/record/checkpoint.py),
        once; a run that writes no files keeps none."""
        if "checkpoint" in self.record or not self.rec.write_files:
            return
        with collector(self.rec, "checkpoint", capture.LOST_CHECKPOINT, passthrough=(Terminated,)):
            section, self.setup_s["checkpoint_s"] = capture.timed(
                save,
                self.run_dir,
                module,
                epoch=epoch,
                evaluation_index=len(self.record["evaluations"]) - 1,
                metric=self.rec.metric,
                value=value,
            )
            self.record["checkpoint"] = section
            self.record["sidecars"]["checkpoint"] = section["file"]
        self.rec.write()

    # -- detours --------------------------------------------------------------------------

    @contextlib.contextmanager
    def collecting(self, name: str, lost: str, seconds_key: str) -> Iterator[_Collected]:
        """One detour (FLOP count, profile window): contained (runner/record/contain.py), its
        profiler and tracing lines sent to the run's log, its seconds in `extra.setup_s`.
        Run its work through `.run(fn, *args)`: off the clock."""
        log = self.run_dir / LOG_NAME if self.rec.write_files else None
        quiet = stderr_to(log) if log is not None else contextlib.nullcontext()
        got = _Collected(self, seconds_key)
        with quiet, collector(self.rec, name, lost, passthrough=(Terminated,)) as failed:
            got.failed = failed
            yield got
        if log is not None and log.is_file() and log.stat().st_size:
            self.record["sidecars"]["log"] = LOG_NAME

    def set_work(self, work: dict[str, Any]) -> None:
        """The FLOP count's `work` section, with a flag for ops whose formula raised."""
        self.record["work"] = work
        formula_error_flag(self.rec, work)

    def set_ceilings(self, device: str, measure: bool) -> None:
        """The device's roofs for the counted step's dtype and math (cached, or measured)."""
        dtype = (self.record.get("work") or {}).get("dtype") or "float32"
        ceil, why = capture.resolve_ceilings(device, dtype, measure, self.record.get("math"))
        self.record["ceilings"] = ceil
        if why:
            self.rec.flag(why)

    def set_timeline(self, timeline: dict[str, Any] | None, epoch: int) -> None:
        """The profile window's section, taken in or after `epoch`; the clock's step time of
        that epoch is added once the epoch is finished (now, or at its end)."""
        self.record["timeline"] = timeline
        if not timeline:
            return
        timeline["epoch"] = epoch
        self.record["sidecars"]["trace"] = timeline["trace"]
        if not (self.in_epoch and epoch == self.epoch):
            measured_step_time(timeline, epoch, *self.last_epoch)


class _Collected:
    """A detour in progress (`Engine.collecting`)."""

    def __init__(self, engine: Engine, seconds_key: str) -> None:
        self.engine, self.key = engine, seconds_key
        self.failed: list[str] = []

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        result, self.engine.setup_s[self.key] = self.engine.off_clock(fn, *args)
        return result


def step_time(seconds: float, steps: int) -> float:
    """An epoch's measured step time: its training clock over its steps."""
    return seconds / max(1, steps)


def measured_step_time(timeline: dict[str, Any], epoch: int, seconds: float, steps: int) -> None:
    """The clock's step time in the window's epoch, which per-op times are reconciled to."""
    if steps:
        timeline["measured_step_time"] = quantity(
            step_time(seconds, steps),
            "s",
            "measured",
            f"training clock of epoch {epoch} / its {steps} steps (detours excluded)",
        )
