"""`perfsuite run` in one process, read top to bottom: a plan, then stages.

    plan      routes/plan.py       options resolved and checked (before this module runs)
    open      routes/sections.py   the run folder, the record as the run starts, the engine
    prepare   routes/prepare.py    data, model, train state, warm-up off the clock
    record    routes/sections.py   the setup's facts into the record
    train     routes/train.py      timed epochs through the engine (runner/engine/engine.py)
    detours   routes/off_clock.py  FLOP count, ceilings, profile window; inference, counters
    write     Engine.close         final status, energy, telemetry, setup seconds: written

Whatever ends the run, the record is finished and written: a divergence is the run's outcome
(returned, not raised); any other exception is recorded as the run's end ("crashed", or
"interrupted" for a signal), its traceback goes to the run's `perfsuite.log`, and it is raised
with `perfsuite_run_dir` naming the run folder. A data-parallel rank runs the same stages
through a `Route` (runner/launch/distributed.py); `--nproc` and executors start here through
runner/launch/.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfsuite.runner.engine.engine import Diverged, Engine, Terminated, sigterm_raises
from perfsuite.runner.engine.progress import RunProgress
from perfsuite.runner.record.contain import log_run_failure
from perfsuite.runner.record.recorder import Recorder
from perfsuite.runner.routes.off_clock import after_training, inference_and_counters
from perfsuite.runner.routes.plan import RunPlan
from perfsuite.runner.routes.prepare import prepare
from perfsuite.runner.routes.sections import open_record, record_setup
from perfsuite.runner.routes.train import EpochResult, Trained, train
from perfsuite.workloads.state import detour


class Route:
    """How a run differs from the single-process one; every hook does nothing here. A
    data-parallel rank overrides them (runner/launch/distributed.py)."""

    def opened(self, rec: Recorder, engine: Engine) -> None:
        """The record and its engine exist (add route-specific sections)."""

    def wrap_model(self, state: Any) -> None:
        """The train state is built; wrap its model before the warm-up."""

    def set_up(self, rec: Recorder) -> None:
        """The setup's facts are recorded."""

    def epoch(self, epoch: int, plain: Callable[[int], EpochResult]) -> EpochResult:
        """Train one epoch: `plain(epoch)` is the single-process epoch."""
        return plain(epoch)

    def after_window(self, trained: Trained) -> None:
        """The profile window is recorded."""

    def inference_workload(self, workload: Any) -> Any:
        """The workload whose `predict` the batch-1 latency times."""
        return workload

    def result(self, run_dir: Path) -> Path | None:
        """What the run gives its caller."""
        return run_dir


def run_here(plan: RunPlan, route: Route | None = None) -> Path | None:
    """Run one planned workload in this process; returns the run folder (with run.json), or
    None for a counters replay (which writes no record)."""
    if not plan.writes_files:
        return replay(plan)
    route = route or Route()
    rec, engine = open_record(plan)
    route.opened(rec, engine)
    progress = RunProgress(plan.options.progress, rec.run_id)
    restore_switches = plan.parts.apply_process_switches(plan.switches)
    ended: BaseException | None = None
    try:
        with sigterm_raises():
            prepared = prepare(plan, progress, route)
            record_setup(rec, engine, prepared, progress)
            route.set_up(rec)
            if plan.options.capture:
                engine.open_telemetry(plan.options.telemetry_interval_s)
            trained = train(prepared, engine, rec, progress, route.epoch)
            after_training(prepared, engine, progress, trained, route.after_window)
            engine.stop_telemetry()
            workload = route.inference_workload(plan.workload)
            inference_and_counters(prepared, rec, engine, progress, workload)
    except Diverged as exc:  # the run's outcome, recorded: nothing broke
        ended = exc
    except BaseException as exc:
        ended = exc
        exc.perfsuite_run_dir = rec.run_dir  # type: ignore[attr-defined]  # for the CLI
        if not isinstance(exc, (Terminated, KeyboardInterrupt)):
            log_run_failure(rec, exc)
        raise
    finally:
        progress.close()
        restore_switches()
        engine.close(ended)
    return route.result(rec.run_dir)


def replay(plan: RunPlan) -> None:
    """For a counters collector: setup and warm-up as in the run, then `replay_steps` steps
    inside one process-wide NVTX start/end range named `perfsuite.steps`, each op in a range
    of its own (`backend.op_ranges`) for per-op attribution. The batches are drawn before the
    range opens and are the profile window's (`seeds.window`), so the counters cover the step
    the FLOP counter counts and not the input pipeline."""
    plan.backend.set_threads(plan.options.threads)
    restore_switches = plan.parts.apply_process_switches(plan.switches)
    try:
        prepared = prepare(plan, RunProgress(plan.options.progress, "replay"))
        batches = prepared.batches(plan.seeds.window)
        drawn = [next(batches) for _ in range(plan.options.replay_steps)]
        backend = plan.backend
        backend.sync()
        with detour(prepared.state), backend.nvtx_range("perfsuite.steps"), backend.op_ranges():
            for batch in drawn:
                plan.workload.train_step(prepared.state, batch)
            backend.sync()
    finally:
        restore_switches()
