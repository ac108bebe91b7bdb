"""The train stage of `perfsuite run`: timed epochs through the engine, evaluated by the
threshold rule, until the run reaches its threshold (or every epoch with --all-epochs).

Time to accuracy follows DAWNBench: the clock counts training steps and each epoch's data
preparation and hooks, not evaluation. The stage takes the prepared run and gives `Trained`:
the epoch it stopped after and that epoch's step time, for the detours that follow it. A
non-finite loss raises `Diverged` out of the stage (the run's outcome, recorded by the engine).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfsuite.runner.engine import capture
from perfsuite.runner.engine.engine import END, Engine, step_time
from perfsuite.runner.engine.progress import RunProgress
from perfsuite.runner.record.recorder import Recorder
from perfsuite.runner.routes.prepare import Prepared


@dataclass(frozen=True)
class EpochResult:
    """One timed epoch: its seconds, mean loss, steps and samples (every rank's, where a
    data-parallel route gathers them)."""

    seconds: float
    loss: float
    steps: int
    samples: int


@dataclass(frozen=True)
class Trained:
    """Where training stopped: the last timed epoch and its step time (the profile window's
    length is sized from it)."""

    epoch: int
    step_s: float


# A route that trains each epoch its own way (a data-parallel rank gathers every rank's
# numbers): given the epoch number and the plain epoch, returns the epoch's result.
EpochRunner = Callable[[int, Callable[[int], EpochResult]], EpochResult]


def train_epoch(
    prepared: Prepared, engine: Engine, progress: RunProgress, epoch: int
) -> EpochResult:
    """One epoch through the engine. The clock includes data preparation and the workload's
    epoch hooks; raises Diverged for a non-finite loss."""
    wl, state, data, schedule = (
        prepared.plan.workload,
        prepared.state,
        prepared.data,
        prepared.schedule,
    )
    engine.open_epoch()
    schedule.epoch_start()
    wl.on_epoch_start(state, data, epoch)
    batches = iter(data.train_batches(prepared.plan.recipe.batch_size, prepared.generator))
    tick = progress.step if progress.bar is not None else None
    while (batch := engine.next_batch(batches)) is not END:
        out = wl.train_step(state, batch)
        schedule.after_step()
        engine.stepped(out, batch.size)  # raises Diverged
        if tick is not None:
            tick()
    wl.on_epoch_end(state, data, epoch)
    schedule.epoch_end(epoch, engine.epoch_steps)
    seconds = engine.close_epoch()  # raises Diverged
    assert seconds is not None
    loss, samples = engine.epoch_loss or 0.0, engine.epoch_samples or 0
    return EpochResult(seconds, loss, engine.epoch_steps, samples)


def train(
    prepared: Prepared,
    engine: Engine,
    rec: Recorder,
    progress: RunProgress,
    epoch_runner: EpochRunner | None = None,
) -> Trained:
    """The timed epochs, each evaluated from `--eval-from` on; the model that first meets
    the threshold is kept (off the clock). Stops after the epoch that reaches the threshold,
    unless the plan trains every epoch."""
    plan = prepared.plan
    recipe, opts, metric, mllog = plan.recipe, plan.options, plan.workload.metric, rec.mllog

    def plain(epoch: int) -> EpochResult:
        return train_epoch(prepared, engine, progress, epoch)

    epoch, samples, result = 0, 0, EpochResult(0.0, 0.0, 0, 0)
    progress.start_training(recipe.epochs, prepared.steps_per_epoch)
    for epoch in range(1, recipe.epochs + 1):
        if mllog:
            mllog.epoch_start(epoch)
        result = epoch_runner(epoch, plain) if epoch_runner else plain(epoch)
        samples += result.samples
        if mllog:
            mllog.epoch_stop(epoch)
        rate = result.samples / result.seconds if result.seconds > 0 else None
        progress.epoch_done(epoch, rate)
        rec.set_throughput(prepared.steps_per_epoch, recipe.batch_size, result.samples)
        if epoch < min(opts.eval_from, recipe.epochs):
            # Not evaluated: time to accuracy can only be later than with evaluation here.
            rec.write()
            continue
        reached, metrics = evaluate(prepared, engine, rec, progress, epoch, result, samples)
        progress.epoch_done(epoch, rate, f"{metric}={metrics[metric]:.4f}, loss={result.loss:.3f}")
        stopping = (reached and not opts.all_epochs) or epoch == recipe.epochs
        if stopping:
            engine.end_training()  # what follows is off MLPerf's clock
        if reached:  # the model that first met it, kept off the clock (checkpoint.py)
            engine.keep_threshold_model(
                plan.parts.save_threshold_model, prepared.state.module, epoch, metrics[metric]
            )
        if stopping:
            break
    progress.close()
    return Trained(epoch, step_time(result.seconds, result.steps))


def evaluate(
    prepared: Prepared,
    engine: Engine,
    rec: Recorder,
    progress: RunProgress,
    epoch: int,
    result: EpochResult,
    samples: int,
) -> tuple[bool, dict[str, float]]:
    """Evaluate after `epoch` (off the clock) and record it; (threshold reached, metrics)."""
    wl, state, data, mllog = prepared.plan.workload, prepared.state, prepared.data, rec.mllog
    if mllog:
        mllog.eval_start(epoch)
    progress.evaluating(epoch)
    with state.autocast():
        metrics, eval_s = capture.timed(wl.evaluate, state.module, data)
    if mllog:
        mllog.eval_stop(epoch)
    # samples: every rank's in a data-parallel run, where the engine counts its own only
    rec.set_data(data.kind, data.description, engine.stall_s, data, samples)
    reached = engine.evaluate(
        epoch,
        engine.train_time,
        metrics,
        train_loss=result.loss,
        eval_time_s=eval_s,
        samples=samples,
    )
    return reached, metrics
