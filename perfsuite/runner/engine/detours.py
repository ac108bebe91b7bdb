"""The detours of `perfsuite.track` (runner/routes/track.py): the FLOP count, the device's
ceilings and the profile window with its machine check, each on calls of the user's own step.

Where: after the timed loop, at exit, or at the `evaluate()` that reaches the threshold (the
time to accuracy is then fixed), never between timed steps. A detour allocates and frees its
own large tensors, which moves the allocator's state (glibc's dynamic mmap and trim thresholds
rise with the largest block freed; a GPU's caching allocator keeps the blocks), so steps after
it would be steps of another process than the user's (docs/seam.md, "Detours leave the process
as they found it").

Which call: the loop keeps the last detour-safe call whose batch has the first call's shapes
(a partial last batch is not a step's typical work), or, where shapes vary from call to call,
the fourth call's shapes from then on; the count and the window both replay it, so per-op times
and per-op FLOPs describe the same work, in the autocast and grad mode the call ran in.
`work.counted_on` and `timeline.batch` name the call and shapes replayed. A step that writes
globals or closure cells, or advances an iterator it reaches, is refused the detours with a
warning (runner/engine/outside_state.py). A run without a count or window says why in its
flags.

Every detour is a collector (Engine.collecting, runner/record/contain.py): if it raises, the
run goes on without it and the record says what was lost.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from perfsuite.backends.torch_math import math_policy
from perfsuite.hostinfo import low_precision_note
from perfsuite.runner.engine import capture
from perfsuite.runner.engine import step_parts as parts
from perfsuite.runner.engine.engine import Engine
from perfsuite.runner.engine.outside_state import outside_writes, refusal, step_code
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
        self.pending: tuple[Any, ...] | None = None  # the call the detours replay
        self.safe_calls = 0
        self.first_shapes: tuple | None = None  # the first detour-safe call's batch
        self.counted_shapes: tuple | None = None  # the batch shapes the detours replay
        self.counted_call = 0  # which run.step call that was (1-based)
        self.refused = ""  # the warning of a step with outside writes, once found
        self._inspected: Any = None  # the code object read last (a step's code rarely changes)

    def before_step(self, fn: Callable[..., Any], args: tuple, kw: dict, size: Any) -> None:
        """Keep this call for the detours when it has the replayed shapes (see the module
        docstring); nothing runs here but reading the call, and a new step's code once."""
        run = self.run
        self.safe_calls += 1
        code = step_code(fn)
        if code is not None and code is not self._inspected:
            self._inspected = code
            run.engine.off_clock(self._inspect, fn)
        if self.refused or (self.window_done and self.counted):
            return
        shapes = parts.batch_shapes(args, kw)
        if self.first_shapes is None:
            self.first_shapes = shapes
        if self.counted_shapes is None and (shapes == self.first_shapes or self.safe_calls >= 4):
            self.counted_shapes = shapes
        if shapes == self.counted_shapes:
            context = parts.step_context(run.backend.device.kind)
            self.pending = (fn, args, kw, context, run.steps_total + 1, run.epoch_number, size)

    def _inspect(self, fn: Callable[..., Any]) -> None:
        """Refuse the detours, with a warning, to a step that writes outside state."""
        found = outside_writes(fn)
        if found and not self.refused:
            self.refused = refusal(found)
            self.pending = None
            print(self.refused, file=sys.stderr, flush=True)
            self.run.rec.flag(self.refused, key="outside state")

    def after_loop(self, where: str) -> None:
        """The detours on the kept call (`where`: at evaluate() or at exit), in the autocast
        and grad mode that call ran in: the FLOP count with the ceilings, then the window."""
        run = self.run
        if not run.capture_on or self.pending is None or self.refused:
            return
        fn, args, kw, context, call, epoch, size = self.pending
        with parts.in_step_context(run.backend.device.kind, context):
            if not self.counted:
                self.counted, self.counted_call = True, call
                run.say(f"counting FLOPs of one step {where} (off the clock)")
                lost = capture.LOST_WORK
                with run.engine.collecting("FLOP count", lost, "flop_count_s") as taking:
                    taking.run(self.count, fn, args, kw, size, epoch)
            if not self.window_done and run.profile_steps > 0:
                self.take_window(fn, args, kw, call, epoch)
        self.pending = None

    def take_window(
        self, fn: Callable[..., Any], args: tuple, kw: dict, call: int, epoch: int
    ) -> None:
        """The window, contained: if it raises, the run goes on and says why."""
        run = self.run
        self.window_done = True
        if parts.profiler_active():
            self.no_window = (
                "a profiler was already recording (an outer perfsuite.track's window or your "
                "own): torch.profiler does not nest"
            )
            return
        run.say(f"profile window: {run.profile_steps} calls of your step (off the clock)")
        lost = capture.LOST_WINDOW
        # the profiler's start/stop lines go to the run's log, not the user's terminal
        with run.engine.collecting("profile window", lost, "profile_window_s") as taking:
            taking.run(self.window, fn, args, kw, (call, epoch))
        if taking.failed:
            self.no_window = f"the window raised: {taking.failed[0]}"

    def missing(self) -> list[str]:
        """Flags for a FLOP count or profile window that capture asked for and did not get."""
        run = self.run
        if not run.capture_on or self.refused:
            return []  # a refused step is flagged with the refusal
        flags = []
        if "work" not in run.record and not self.counted:
            if not self.safe_calls:
                why = "every run.step call was detour_safe=False"
            else:
                why = "the run ended before its loop did (the count runs after the loop)"
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
        return "the run ended before its loop did (the window runs after the loop)"

    def count(self, fn: Callable[..., Any], args: tuple, kw: dict, size: Any, epoch: int) -> None:
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
            "epoch": epoch,
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
