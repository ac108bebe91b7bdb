"""The detours of `perfsuite.track` (perfsuite/tracking.py): the FLOP count and the profile
window, each on calls of the user's own step, with the track's clock paused.

Where the window goes: from the middle epoch of `epochs` (the first without it) on, at the first
detour-safe `run.step` after the FLOP count, whatever the epoch's length. A run that reaches its
threshold, or ends, before that gets it at that `evaluate()` or at exit, on the last
detour-safe call, provided autocast and grad mode there are the step's (a window away from the
loop would otherwise profile other math). A run without a window says why in its flags.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perfsuite import tracking_parts as parts
from perfsuite.hostinfo import low_precision_note
from perfsuite.record import quantity
from perfsuite.runner import capture
from perfsuite.runner.profile_window import ProfileWindow
from perfsuite.workloads.state import detour

if TYPE_CHECKING:
    from perfsuite.tracking import Tracker


class Detours:
    """The FLOP count and the profile window of one track."""

    def __init__(self, run: Tracker) -> None:
        self.run = run
        self.counted = False
        self.window_done = False
        self.no_window = ""  # why no window was taken, once known
        self.pending: tuple[Any, ...] | None = None  # the last detour-safe call: a late window
        self.safe_calls = 0

    def window_epoch(self) -> int:
        hint = self.run.epochs_hint
        return max(1, (hint + 1) // 2) if hint else 1

    def before_step(self, fn: Callable[..., Any], args: tuple, kw: dict, size: Any) -> None:
        """FLOP count at the first detour-safe call after a step ran; the window at a later one
        from the window's epoch on (any epoch length: it need not be the epoch's third step)."""
        run = self.run
        self.safe_calls += 1
        if not self.window_done and run.profile_steps > 0:
            self.pending = (fn, args, kw, parts.step_context(run.backend.device.kind))
        if not self.counted:
            if run.steps_total >= 1:
                self.counted = True
                run.say("counting FLOPs of one step (off the clock)")
                _, run.setup_s["flop_count_s"] = run.off_clock(self.count, fn, args, kw, size)
        elif (
            run.profile_steps > 0
            and not self.window_done
            and run.epoch_number >= self.window_epoch()
        ):
            self.take_window(fn, args, kw)

    def late_window(self, where: str) -> None:
        """The window away from the loop (`where`: at evaluate() or at exit), on the last
        detour-safe call, where autocast and grad mode are as they were in the loop."""
        run = self.run
        if self.window_done or not run.capture_on or run.profile_steps <= 0:
            return
        if self.pending is None or run.steps_total < 2:
            return
        fn, args, kw, context = self.pending
        if context != parts.step_context(run.backend.device.kind):
            self.window_done, self.pending = True, None
            self.no_window = (
                f"autocast or grad mode {where} differs from the step's (the window would "
                "profile other math)"
            )
            return
        try:
            self.take_window(fn, args, kw)
        except Exception as exc:  # off the loop, a window is not worth the user's run
            self.window_done, self.pending = True, None
            why = f"the step raised in the window: {type(exc).__name__}: {exc}"
            self.no_window = why.splitlines()[0][:300]

    def take_window(self, fn: Callable[..., Any], args: tuple, kw: dict) -> None:
        run = self.run
        self.window_done, self.pending = True, None
        if parts.profiler_active():
            self.no_window = (
                "a profiler was already recording (an outer perfsuite.track's window or your "
                "own): torch.profiler does not nest"
            )
            return
        run.say(f"profile window: {run.profile_steps} calls of your step (off the clock)")
        _, run.setup_s["profile_window_s"] = run.off_clock(self.window, fn, args, kw)

    def missing(self) -> list[str]:
        """Flags for a FLOP count or profile window that capture asked for and did not get."""
        run = self.run
        if not run.capture_on:
            return []
        flags = []
        if "work" not in run.record and not self.counted:
            why = (
                "every run.step call was detour_safe=False"
                if not self.safe_calls
                else "only one detour-safe run.step call (the count takes the second)"
            )
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
        if run.epoch_number < self.window_epoch():
            return (
                f"the run ended in epoch {run.epoch_number}, before epoch {self.window_epoch()} "
                f"(the middle of epochs={run.epochs_hint})"
            )
        return f"the run had only {run.steps_total} step call(s): too few for a warm window"

    def count(self, fn: Callable[..., Any], args: tuple, kw: dict, size: Any) -> None:
        from perfsuite.backends.torch_math import math_policy
        from perfsuite.flops import OpCounter

        run = self.run
        record, state = run.record, run.state
        assert state is not None
        counter = OpCounter()
        with parts.detour_scope(), detour(state):
            fn(*args, **kw)  # uncounted: optimizer state as in every later step
            with counter:
                fn(*args, **kw)
        work = counter.result().to_work_section()
        work["batch_size"] = size or None
        trained = [*state.module.parameters()]  # else the optimizer's (a module may hold none)
        trained += [p for g in state.optimizer.param_groups for p in g["params"]]
        work["dtype"] = capture.compute_dtype(parts.leaves((args, kw)), trained)
        record["work"] = work
        param = parts.trained_parameter(state.module, state.optimizer)
        param_dtype = str(param.dtype).replace("torch.", "") if param is not None else None
        # autocast entered inside the user's step is not visible from here; around it, it is
        autocast = parts.autocast_dtype(run.backend.device.kind)
        record["math"] = math_policy(
            autocast_dtype=autocast,
            param_dtype=param_dtype or work["dtype"],
            activation_dtype=work["dtype"],
            on_cpu=not run.backend.device.is_gpu,
        )
        slow = low_precision_note(autocast, record["math"]["autocast_native"])
        if slow:
            run.rec.flag(slow)
        ceil, why = capture.resolve_ceilings(
            str(run.backend.device), work["dtype"], run.measure_peaks, record["math"]
        )
        record["ceilings"] = ceil
        if why:
            run.rec.flag(why)

    def window(self, fn: Callable[..., Any], args: tuple, kw: dict) -> None:
        run = self.run
        assert run.state is not None
        window = ProfileWindow(run.run_dir, run.backend, wait=1, warmup=1, active=run.profile_steps)
        with parts.window_scope(), parts.detour_scope(), detour(run.state):
            try:
                for _ in range(window.total_steps):
                    fn(*args, **kw)
                    window.step()
            finally:
                window.close()
        timeline = window.result()
        if timeline:
            timeline["epoch"] = run.epoch_number
            timeline["note"] = "profiled on repeated calls of the user's step on one batch"
            run.record["timeline"] = timeline
            run.record["sidecars"]["trace"] = timeline["trace"]
            if not run.in_epoch:  # taken at evaluate() or exit: the epoch is over
                measured_step_time(timeline, run.epoch_number, *run.last_epoch)


def measured_step_time(timeline: dict[str, Any], epoch: int, seconds: float, steps: int) -> None:
    """The clock's step time in the window's epoch, which per-op times are reconciled to."""
    if steps:
        timeline["measured_step_time"] = quantity(
            seconds / steps,
            "s",
            "measured",
            f"training clock of epoch {epoch} / its {steps} steps (detours excluded)",
        )
