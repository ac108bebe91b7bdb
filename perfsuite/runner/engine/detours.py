"""The detours of `perfsuite.track` (runner/routes/track.py): the FLOP count and the profile
window, each on calls of the user's own step, with the track's clock paused.

Which step: the FLOP count takes the first detour-safe call after a step ran whose batch has
the first call's shapes (a partial last batch is not a step's typical work), or, where shapes
vary from call to call, the fourth such call. The window replays only calls with the counted
call's shapes, so per-op times and per-op FLOPs describe the same work: from the middle epoch
of `epochs` (the first without it) on, at the first such call after the count, whatever the
epoch's length. A run that reaches its threshold, or ends, before that gets it at that
`evaluate()` or at exit, on the last such call, provided autocast and grad mode there are the
step's (a window away from the loop would otherwise profile other math). `timeline.batch`
names the call and shapes replayed. A run without a window says why in its flags.

Every detour is a collector (Engine.collecting, runner/engine/contain.py): if it raises, the run
goes
on without it and the record says what was lost.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from perfsuite.backends.torch_math import math_policy
from perfsuite.hostinfo import low_precision_note
from perfsuite.runner.engine import capture
from perfsuite.runner.engine import step_parts as parts
from perfsuite.runner.engine.engine import Engine
from perfsuite.runner.engine.profile_window import ProfileWindow
from perfsuite.runner.record.recorder import Recorder
from perfsuite.workloads.state import TrainState, detour


class TrackedRun(Protocol):
    """What the detours read of a track: `runner/routes/track.py`'s Tracker, which owns them."""

    backend: Any  # the device seam (backends.pytorch.TorchBackend)
    capture_on: bool
    engine: Engine
    epochs_hint: int | None
    measure_peaks: bool
    model: Any  # the user's module, before the first step builds `state`
    optimizer: Any
    profile_steps: int
    rec: Recorder
    record: dict[str, Any]
    run_dir: Path
    state: TrainState | None

    @property
    def steps_total(self) -> int: ...

    @property
    def epoch_number(self) -> int: ...

    def say(self, text: str) -> None: ...


class Detours:
    """The FLOP count and the profile window of one track."""

    def __init__(self, run: TrackedRun) -> None:
        self.run = run
        self.counted = False
        self.window_done = False
        self.no_window = ""  # why no window was taken, once known
        self.pending: tuple[Any, ...] | None = None  # a late window's call (counted shapes)
        self.safe_calls = 0
        self.first_shapes: tuple | None = None  # the first detour-safe call's batch
        self.counted_shapes: tuple | None = None  # the batch the FLOPs were counted on
        self.counted_call = 0  # which run.step call that was (1-based)

    def window_epoch(self) -> int:
        hint = self.run.epochs_hint
        return max(1, (hint + 1) // 2) if hint else 1

    def before_step(self, fn: Callable[..., Any], args: tuple, kw: dict, size: Any) -> None:
        """FLOP count at a detour-safe call after a step ran (see the module docstring); the
        window at a later one of the same shapes from the window's epoch on (any epoch length:
        it need not be the epoch's third step)."""
        run = self.run
        self.safe_calls += 1
        if self.counted and (self.window_done or run.profile_steps <= 0):
            return  # nothing left to take: no shape reading on the clock
        shapes = parts.batch_shapes(args, kw)
        if self.first_shapes is None:
            self.first_shapes = shapes
        if not self.counted:
            if run.steps_total >= 1 and (shapes == self.first_shapes or self.safe_calls >= 4):
                self.counted = True
                self.counted_shapes, self.counted_call = shapes, run.steps_total + 1
                self._remember(fn, args, kw)
                run.say("counting FLOPs of one step (off the clock)")
                lost = capture.LOST_WORK
                with run.engine.collecting("FLOP count", lost, "flop_count_s") as taking:
                    taking.run(self.count, fn, args, kw, size)
            return
        if shapes != self.counted_shapes:
            return  # a partial or odd batch: never the one the window replays
        self._remember(fn, args, kw)
        if run.epoch_number >= self.window_epoch():
            self.take_window(fn, args, kw)

    def _remember(self, fn: Callable[..., Any], args: tuple, kw: dict) -> None:
        """This call, with the counted shapes, is the one a late window would replay."""
        run = self.run
        if not self.window_done and run.profile_steps > 0:
            context = parts.step_context(run.backend.device.kind)
            self.pending = (fn, args, kw, context, run.steps_total + 1, run.epoch_number)

    def late_window(self, where: str) -> None:
        """The window away from the loop (`where`: at evaluate() or at exit), on the last
        detour-safe call, where autocast and grad mode are as they were in the loop."""
        run = self.run
        if self.window_done or not run.capture_on or run.profile_steps <= 0:
            return
        if self.pending is None or run.steps_total < 2:
            return
        fn, args, kw, context, call, epoch = self.pending
        if context != parts.step_context(run.backend.device.kind):
            self.window_done, self.pending = True, None
            self.no_window = (
                f"autocast or grad mode {where} differs from the step's (the window would "
                "profile other math)"
            )
            return
        self.take_window(fn, args, kw, call, epoch)

    def take_window(
        self, fn: Callable[..., Any], args: tuple, kw: dict, call: int = 0, epoch: int = 0
    ) -> None:
        """The window, contained: if it raises, the run goes on and says why."""
        run = self.run
        self.window_done, self.pending = True, None
        if parts.profiler_active():
            self.no_window = (
                "a profiler was already recording (an outer perfsuite.track's window or your "
                "own): torch.profiler does not nest"
            )
            return
        run.say(f"profile window: {run.profile_steps} calls of your step (off the clock)")
        where = (call or run.steps_total + 1, epoch or run.epoch_number)
        lost = capture.LOST_WINDOW
        # the profiler's start/stop lines go to the run's log, not the user's terminal
        with run.engine.collecting("profile window", lost, "profile_window_s") as taking:
            taking.run(self.window, fn, args, kw, where)
        if taking.failed:
            self.no_window = f"the window raised: {taking.failed[0]}"

    def missing(self) -> list[str]:
        """Flags for a FLOP count or profile window that capture asked for and did not get."""
        run = self.run
        if not run.capture_on:
            return []
        flags = []
        if "work" not in run.record and not self.counted:
            if not self.safe_calls:
                why = "every run.step call was detour_safe=False"
            elif self.safe_calls == 1:
                why = "only one detour-safe run.step call (the count takes the second)"
            else:
                why = "no later run.step call had the first call's batch shapes"
            flags.append(f"no FLOP count: {why}")
        why = self._no_window_reason()
        if why:
            flags.append(f"no profile window: {why}")
        return flags

    def _no_window_reason(self) -> str | None:
        run = self.run
        if run.profile_steps <= 0 or run.record.get("timeline"):
            return None
        if self.no_window:
            return self.no_window
        if self.window_done:
            return "the profiler recorded no ops"
        if not self.safe_calls:
            return "every run.step call was detour_safe=False"
        if self.counted and self.pending is None and run.steps_total >= 2:
            return "no call to replay with the counted step's batch shapes"
        if run.epoch_number < self.window_epoch():
            return (
                f"the run ended in epoch {run.epoch_number}, before epoch {self.window_epoch()} "
                f"(the middle of epochs={run.epochs_hint})"
            )
        return f"the run had only {run.steps_total} step call(s): too few for a warm window"

    def count(self, fn: Callable[..., Any], args: tuple, kw: dict, size: Any) -> None:
        from perfsuite.flops.torch_counter import OpCounter  # imports torch

        run = self.run
        state = run.state
        assert state is not None
        counter = OpCounter(infer_update=True)
        with parts.detour_scope(), detour(state):
            fn(*args, **kw)  # uncounted: optimizer state as in every later step
            with counter, parts.optimizer_phase(run.optimizer, counter):
                fn(*args, **kw)
        work = counter.result().to_work_section()
        work["batch_size"] = size or None
        work["dtype"] = self.step_dtype(args, kw)
        work["counted_on"] = {
            "call": self.counted_call,
            "epoch": run.epoch_number,
            "shapes": [list(s) for s, _ in self.counted_shapes or ()],
            "note": "the whole step as written, FLOPs of every op it ran; phases: "
            + parts.PHASE_NOTE,
        }
        run.engine.set_work(work)
        run.engine.set_ceilings(str(run.backend.device), run.measure_peaks)

    def _trained(self) -> tuple[Any, Any]:
        state = self.run.state
        if state is not None:
            return state.module, state.optimizer
        return self.run.model, self.run.optimizer

    def step_dtype(self, args: tuple, kw: dict) -> str:
        """The dtype a call of the user's step computes in (its tensors and the trained ones)."""
        module, optimizer = self._trained()
        trained = [*module.parameters()] if module is not None else []
        if optimizer is not None:  # a module may hold none of the trained tensors
            trained += [p for g in optimizer.param_groups for p in g["params"]]
        return capture.compute_dtype(parts.leaves((args, kw)), trained)

    def read_math(self, args: tuple, kw: dict) -> None:
        """The record's `math`, read around the first call of the user's step (capture on or
        off, as `perfsuite run` reads it in its warm-up)."""
        run = self.run
        dtype = self.step_dtype(args, kw)
        param = parts.trained_parameter(*self._trained())
        param_dtype = str(param.dtype).replace("torch.", "") if param is not None else None
        # autocast entered inside the user's step is not visible from here; around it, it is
        autocast = parts.autocast_dtype(run.backend.device.kind)
        run.record["math"] = math_policy(
            autocast_dtype=autocast,
            param_dtype=param_dtype or dtype,
            activation_dtype=dtype,
            on_cpu=not run.backend.device.is_gpu,
        )
        slow = low_precision_note(autocast, run.record["math"]["autocast_native"])
        if slow:
            run.rec.flag(slow)

    def window(self, fn: Callable[..., Any], args: tuple, kw: dict, where: tuple[int, int]) -> None:
        run = self.run
        assert run.state is not None
        window = ProfileWindow(run.run_dir, run.backend, wait=1, warmup=1, active=run.profile_steps)
        # the machine's speed around the window, as `perfsuite run` measures it around its own
        probe = capture.MachineCheck(str(run.backend.device), run.record.get("ceilings"))
        probe.before()
        with parts.window_scope(), parts.detour_scope(), detour(run.state):
            try:
                for _ in range(window.total_steps):
                    fn(*args, **kw)
                    window.step()
            finally:
                window.close()
        probe.after()
        run.engine.setup_s["machine_check_s"] = probe.seconds
        timeline = window.result()
        if timeline:
            timeline["machine_check"] = probe.section()
            timeline["note"] = "profiled on repeated calls of the user's step on one batch"
            timeline["batch"] = {
                "call": where[0],
                "epoch": where[1],
                "shapes": [list(s) for s, _ in self.counted_shapes or ()],
                "same_as_flop_count": self.counted_shapes is not None,
            }
            run.engine.set_timeline(timeline, run.epoch_number)
