"""`perfsuite.track`: the same run record for a user's own model and training loop.

    with perfsuite.track("my-task", metric="top1", threshold=0.9,
                         model=model, optimizer=opt) as run:
        for epoch in range(epochs):
            for x, y in run.epoch(loader):       # the training clock runs while iterating
                run.step(train_step, x, y)       # your step; perfsuite may take detours
            run.evaluate(top1=accuracy(model))   # off the clock; True once reached
            if run.reached:
                break

The user's loop pushes into the engine that `perfsuite run` pulls through (runner/engine/engine.py):
the same clock, loss check, evaluation, checkpoint, telemetry, energy and status. Training (data
loading included) counts, evaluation does not. Leaving `run.epoch()` early (`break`, `return`,
`zip` with a shorter iterable) ends the epoch there, flagged. Instrumentation runs in detours
after the loop (runner/engine/detours.py: the FLOP count, the ceilings and the profile window
replay a kept call of your step at exit, or at the evaluation that reaches the threshold), so
no timed step follows one. Each detour snapshots the model, every tensor the optimizer trains,
gradients, scheduler and scaler, if given, and RNG state and restores them; a step that writes
globals or closure cells is refused them, with a warning (runner/engine/outside_state.py), and
one that changes other state (its own EMA copy, counters) should be passed
`detour_safe=False`. The rules, with the why: docs/seam.md, "perfsuite.track".
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from pathlib import Path
from typing import Any

from perfsuite.backends import torch_backend
from perfsuite.runner.engine import step_parts as parts
from perfsuite.runner.engine.detours import Detours
from perfsuite.runner.engine.engine import END, Engine, LossMeter
from perfsuite.runner.record import checkpoint
from perfsuite.runner.record.recorder import Recorder
from perfsuite.workloads.gpt.mfu import transformer_section
from perfsuite.workloads.state import TrainState


class Tracker:
    """One run of a user's loop. Use through `perfsuite.track(...)` as a context manager."""

    def __init__(
        self,
        task: str,
        *,
        threshold: float,
        metric: str = "top1",
        direction: str = "higher",
        model: Any = None,
        optimizer: Any = None,
        scheduler: Any = None,
        scaler: Any = None,
        device: str = "cpu",
        out: str | Path = "runs",
        dataset: str = "",
        epochs: int | None = None,
        batch_size: int | None = None,
        capture: bool = True,
        profile_steps: int = 3,
        measure_peaks: bool = True,  # as `perfsuite run`: roofs measured unless cached
        telemetry_interval_s: float = 0.5,
        progress: bool = False,
        model_flops: Mapping[str, Any] | None = None,
    ) -> None:
        if direction not in ("higher", "lower"):
            raise ValueError(
                f"perfsuite.track: direction must be higher or lower, got {direction!r}"
            )
        try:
            self.backend = torch_backend(device)
            self.backend.check_available()
        except ValueError as exc:
            raise ValueError(parts.device_error(exc)) from None
        # a track opened by a step that an outer track runs in a detour: it writes nothing
        self.inert = parts.in_detour()
        restorable, why_not = parts.restorable_optimizer(optimizer)
        complete = model is not None and restorable is not None
        self.capture_on = capture and complete and not self.inert
        self.profile_steps = profile_steps
        self.epochs_hint = epochs
        self.batch_size = batch_size
        self.measure_peaks = measure_peaks
        self.progress = progress and not self.inert
        task_section = {"name": task, "workload": "user loop", "metric": metric,
                        "direction": direction, "threshold": threshold,
                        "dataset": dataset}  # fmt: skip
        self.rec = Recorder(
            out,
            task,
            task_section,
            self.backend.device,
            self._config(epochs, batch_size),
            framework=f"pytorch {self.backend.version}",
            write_files=not self.inert,
        )
        self.run_dir, self.record = self.rec.run_dir, self.rec.record
        self._model_sections(model, model_flops)
        self.model = model
        self.optimizer = optimizer
        self.state = (
            TrainState(model, model, restorable, scheduler, None, self.backend, scaler=scaler)
            if complete
            else None
        )
        if capture and model is None:
            self.rec.flag(
                "no model given to perfsuite.track: no FLOP count or window (detours restore "
                "the model after their extra steps)"
            )
        elif capture and why_not:
            self.rec.flag(why_not)
        self.telemetry_interval_s = telemetry_interval_s
        self.reached = False
        self.engine = self._engine(batch_size)
        self.setup_s = self.engine.setup_s
        self._open: weakref.ref[Any] | None = None  # the current epoch's generator
        self._epoch_len: int | None = None  # len(batches), where it has one
        self._epoch_items = 0  # items it has yielded
        self.detours = Detours(self)
        self._early: list[tuple[int, int]] = []

    def _config(self, epochs: int | None, batch_size: int | None) -> dict[str, Any]:
        """The record's `config` section of a track."""
        return {
            "source": "perfsuite.track (user training loop)",
            "device": str(self.backend.device),
            "epochs": epochs,
            "batch_size": batch_size,
            "capture": self.capture_on,
            "profile_steps": self.profile_steps,
        }

    def _model_sections(self, model: Any, model_flops: Mapping[str, Any] | None) -> None:
        """`model_flops` (a transformer: MFU from 6N + 12·L·d·T, docs/gpt.md), `model` and
        the parameter count, where given."""
        if model_flops is not None:
            fields = dict(model_flops)
            n = fields.pop("non_embedding_parameters", None)
            if n is None:
                raise ValueError("perfsuite.track: model_flops needs non_embedding_parameters")
            self.record["model_flops"] = transformer_section(fields, n, ", as given")
        if model is not None:
            self.record["model"] = type(model).__name__
            params = sum(p.numel() for p in model.parameters())
            self.record["extra"] = {"parameters": params}

    def _engine(self, batch_size: int | None) -> Engine:
        """The engine the loop pushes into; on a GPU the loss sum stays on the device (a
        check is a sync)."""
        gpu = self.backend.device.is_gpu
        engine = Engine(
            self.rec,
            self.backend,
            LossMeter(
                50 if gpu else 1,
                read=parts.loss_of,
                plus=(lambda total, loss: total + loss) if gpu else _host_sum,
            ),
        )
        engine.data_kind = "user loader"
        engine.data_description = "the user's own iterable"
        engine.batch_size = batch_size
        if self.capture_on:
            engine.measure_energy()
        return engine

    # what the detours and the loop read of the engine
    @property
    def loss(self) -> LossMeter:
        return self.engine.loss

    @property
    def steps_total(self) -> int:
        return self.engine.steps_total

    @property
    def epoch_number(self) -> int:
        return self.engine.epoch

    @property
    def in_epoch(self) -> bool:
        return self.engine.in_epoch

    # -- context -------------------------------------------------------------------------

    def __enter__(self) -> Tracker:
        if self.capture_on:
            self.engine.open_telemetry(self.telemetry_interval_s)
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self._close_open_epoch()
        if exc is None and self.record["status"] == "running":
            self.engine.end_training()  # the loop ended
            self.detours.after_loop("at exit")
        self._flag_missing()
        self.engine.close(exc)
        self.say(f"{self.record['status']}: {self.run_dir}")

    def _flag_missing(self) -> None:
        """Flags for what the run could not measure, with the reason."""
        if self.steps_total == 0:
            self.rec.flag(parts.NEVER_STEPPED)
            return
        for flag in self.detours.missing():
            self.rec.flag(flag)

    # -- the loop ------------------------------------------------------------------------

    def epoch(self, batches: Iterable[Any]) -> Iterator[Any]:
        """Iterate one epoch of `batches` with the training clock running; the time spent
        waiting inside `next()` is recorded as input stall. Leaving the loop before `batches`
        runs out ends the epoch there (its time and steps count; flagged)."""
        self.engine.raise_if_diverged()
        self._close_open_epoch()
        gen = self._run_epoch(batches)
        self._open = weakref.ref(gen)  # weak: a `break` must free it, which ends the epoch
        return gen

    def _close_open_epoch(self) -> None:
        gen = self._open() if self._open is not None else None
        if gen is not None:
            gen.close()  # runs its `finally`: the epoch ends now
        self._open = None

    def _run_epoch(self, batches: Iterable[Any]) -> Iterator[Any]:
        self._epoch_len = len(batches) if isinstance(batches, Sized) else None
        self._epoch_items = 0
        self.engine.open_epoch()
        exhausted = False
        it = iter(batches)
        try:
            while (item := self.engine.next_batch(it)) is not END:
                self._epoch_items += 1
                yield item
            exhausted = True
        finally:  # also on GeneratorExit: the loop left early
            self._end_epoch(exhausted)

    def _end_epoch(self, exhausted: bool) -> None:
        """Stop the clock and record the epoch. Raises only when the iterable ran out: while
        a generator closes (GeneratorExit) an exception would be lost, so a divergence found
        then is raised by the next call of the run."""
        whole = exhausted or (self._epoch_len is not None and self._epoch_items >= self._epoch_len)
        if self.engine.close_epoch(may_raise=exhausted) is None:
            return  # diverged: not a finished epoch, as in `perfsuite run`
        if not whole:  # left before its last item
            self._early.append((self.epoch_number, self.engine.last_epoch[1]))
            self._note_early()
            self.rec.write()

    def _note_early(self) -> None:
        """One flag for every epoch the loop left early, kept up to date."""
        epochs = ", ".join(str(e) for e, _ in self._early)
        steps = ", ".join(str(k) for _, k in self._early)
        plural = "s" if len(self._early) > 1 else ""
        self.rec.flag(
            f"epoch{plural} {epochs} ended early after {steps} steps: the loop left "
            "run.epoch() before its iterable ran out (time and steps counted as run)",
            key="early",
        )

    def step(
        self,
        fn: Callable[..., Any],
        *args: Any,
        detour_safe: bool = True,
        batch_size: int | None = None,
        **kw: Any,
    ) -> Any:
        """Call your training step `fn(*args, **kw)` on the clock and return what it returns.
        `batch_size`: this step's samples, where the leading dimension of its first tensor
        argument (positional, keyword or nested) is not it; `detour_safe=False`: a step that
        changes state of its own (an EMA copy, counters) is kept out of detours."""
        engine = self.engine
        engine.raise_if_diverged()
        if not engine.in_epoch:
            raise ValueError(
                "perfsuite.track: run.step() outside a run.epoch() loop (off the clock)"
            )
        size = batch_size if batch_size is not None else parts.batch_size_of(args, kw)
        first = batch_size is None and engine.steps_total == 0
        if first and None not in (size, self.batch_size) and size != self.batch_size:
            self.rec.flag(  # e.g. a sequence-first (T, B) input: not silent
                f"run.step: the first tensor's leading dimension ({size}) is not "
                f"track(batch_size={self.batch_size}); samples are counted from the leading "
                "dimension: pass batch_size= to run.step where it is not the batch "
                "(sequence-first inputs)",
                key="batch dimension",
            )
        size = self.batch_size if size is None else size
        if "math" not in self.record:  # off the clock, as the runner reads it in its warm-up
            engine.off_clock(self.detours.read_math, args, kw)
        if detour_safe and self.capture_on:
            self.detours.before_step(fn, args, kw, size)
        out = fn(*args, **kw)
        if size is None and engine.samples is not None:
            self.rec.flag(parts.NO_SIZE, key="no size")
        if not engine.stepped(out, size) and not self.rec.has_flag("no loss"):  # Diverged
            self.rec.flag(parts.NO_LOSS, key="no loss")
        return out

    def off_clock(self, fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
        """Run `fn` with the epoch's clock paused (Engine.off_clock); fn's result and its
        wall seconds."""
        return self.engine.off_clock(fn, *args)

    # -- evaluation ----------------------------------------------------------------------

    def evaluate(self, **metrics: float | Callable[[], float]) -> bool:
        """Record an evaluation of held-out metrics; True once the threshold is reached.
        Between epochs the values may be numbers or callables. Inside `run.epoch()` only
        callables (`top1=lambda: accuracy(model)`): they run with the clock paused, and the
        training time is the run's so far, so the evaluation stays off the clock."""
        engine = self.engine
        engine.raise_if_diverged()
        if engine.epoch == 0:
            raise ValueError("perfsuite.track: evaluate() before any run.epoch()")
        if not engine.in_epoch:
            return self._record_evaluation(metrics, engine.train_time, engine.epoch, False)
        plain = next((k for k, v in metrics.items() if not callable(v)), None)
        if plain is not None:
            raise ValueError(
                f"perfsuite.track: evaluate() inside run.epoch() takes callables "
                f"({plain}=lambda: ...), so the evaluation runs off the training clock"
            )
        return self.off_clock(self._evaluate_mid_epoch, metrics)[0]

    def _evaluate_mid_epoch(self, metrics: dict[str, Any]) -> bool:
        so_far = self.engine.so_far()
        if self._epoch_len:  # by the steps taken before it, wherever it sits in the body
            done = self.engine.epoch_steps / self._epoch_len
            epoch: float = round(self.epoch_number - 1 + done, 6)
        else:
            epoch = self.epoch_number
            self.rec.flag(
                "evaluations inside an epoch of unknown length are numbered by the epoch "
                "they fell in",
                key="mid-epoch",
            )
        return self._record_evaluation(metrics, self.engine.train_time + so_far, epoch, True)

    def _record_evaluation(
        self, metrics: dict[str, Any], train_time: float, epoch: float, mid_epoch: bool
    ) -> bool:
        t = time.perf_counter()
        values = {k: float(v() if callable(v) else v) for k, v in metrics.items()}
        took = time.perf_counter() - t
        # the evaluation's seconds, where perfsuite ran it (callables); numbers come timed by none
        eval_s = took if any(callable(v) for v in metrics.values()) else None
        # the epoch's mean so far; at the top of an epoch's body (no step yet), the last one's
        so_far = mid_epoch and self.engine.epoch_steps > 0
        epoch_loss = self.loss.mean() if so_far else self.engine.epoch_loss
        self.reached = self.engine.evaluate(
            epoch,
            train_time,
            values,
            train_loss=self.loss.since_mark(),
            train_loss_epoch=epoch_loss,
            eval_time_s=eval_s,
        )
        self.loss.mark()
        metric = self.rec.metric
        value = values.get(metric, float("nan"))
        self.say(
            f"epoch {epoch:g}: {metric}={value:.4f} after "
            f"{train_time:.2f} s of training" + (" (reached)" if self.reached else "")
        )
        if self.reached and self.model is not None:  # off the clock: between epochs, or paused
            # through the module, so the one checkpoint function is what runs (and is patched)
            save = checkpoint.save_threshold_model
            self.engine.keep_threshold_model(save, self.model, epoch, value)
        if self.reached:  # the time to accuracy is fixed: the detours can run now
            self.detours.after_loop("at evaluate()")
            self.rec.write()
        return self.reached

    def say(self, text: str) -> None:
        """A progress line on stderr (`progress=True`)."""
        if self.progress:
            print(f"[perfsuite] {self.rec.run_id}: {text}", file=sys.stderr, flush=True)


def _host_sum(total: Any, loss: Any) -> float:
    return total + float(loss)


def track(task: str, **kwargs: Any) -> Tracker:
    """Measure a user's own training loop; see the module docstring for the pattern."""
    return Tracker(task, **kwargs)
