"""The record stage of `perfsuite run`: the run folder opened from the plan, and the setup's
facts written into the record in one place.

`open_record` makes the Recorder (the run folder and the record as the run starts: task,
config, environment, price) and the Engine on it, so a run that fails in any later stage
still leaves a record that says so. `record_setup` writes what the prepare stage found (data,
model, switch effects, math, notes) and hands the engine its data; the train stage's
evaluations and the detours' sections follow through the engine.
"""

from __future__ import annotations

from typing import Any

from perfsuite.record import quantity
from perfsuite.runner.engine.engine import Engine, LossMeter
from perfsuite.runner.engine.progress import RunProgress
from perfsuite.runner.measure import model_flops
from perfsuite.runner.record.recorder import Recorder
from perfsuite.runner.routes.plan import RunPlan
from perfsuite.runner.routes.prepare import Prepared


def open_record(plan: RunPlan) -> tuple[Recorder, Engine]:
    """The run's Recorder and Engine. The process takes the run's thread count first, so the
    environment section describes the process as it trains."""
    opts, backend, parts = plan.options, plan.backend, plan.parts
    backend.set_threads(opts.threads)
    rec = Recorder(
        opts.out,
        plan.run_name,
        dict(plan.task),
        backend.device,
        dict(plan.config),
        framework=f"{backend.framework} {backend.version}",
        instance_type=opts.instance_type,
        group=opts.group,
        mllog_benchmark=plan.workload.task,
        write_files=plan.writes_files,
    )
    loss = LossMeter(
        50 if backend.device.is_gpu else 1,  # a check on a GPU is a sync
        read=lambda loss: loss,
        zero=lambda: parts.zero_loss(backend),
        plus=parts.add_loss,
    )
    engine = Engine(rec, backend, loss, energy_wanted=plan.measures)
    record = rec.record
    if opts.price_per_hour is not None:
        given = quantity(opts.price_per_hour, "USD/h", "spec", "given by --price")
        record["cost"] = {"usd_per_hour": given}
    if int(plan.recipe.extra.get("train_limit", 0) or 0):
        rec.flag(f"trained on a subset: train_limit={plan.recipe.extra['train_limit']} examples")
    if backend.framework != "pytorch":
        record["environment"]["frameworks"][backend.framework] = backend.version
    return rec, engine


def record_setup(rec: Recorder, engine: Engine, prepared: Prepared, progress: RunProgress) -> None:
    """The setup's sections and notes into the record; the engine gets the data it counts
    samples and stalls of, and energy is read from here on when the run measures."""
    plan, facts, record = prepared.plan, prepared.facts, rec.record
    record["task"]["dataset"] = facts.dataset
    record["task"]["name"] = facts.task_name
    record["model"] = facts.model_name
    extra = {"parameters": facts.parameters, "steps_per_epoch": prepared.steps_per_epoch}
    record["extra"] = extra
    model_flops.start(record, plan.workload, prepared.state.module, plan.recipe)
    extra.update(prepared.schedule.section())
    record["switches"] = {"requested": plan.switches.to_dict(), "effect": facts.switch_effects}
    if plan.preset:
        record["switches"]["preset"] = plan.preset
    record["math"] = facts.math
    for note in facts.notes:
        rec.flag(note)
    if facts.slow_math_note:
        progress.note(facts.slow_math_note)
    for name, seconds in prepared.seconds.items():
        engine.took(name, seconds)
    engine.set_data(prepared.data, plan.recipe.batch_size)
    if plan.measures:
        engine.measure_energy()
    rec.start_mllog(plan.recipe.batch_size, plan.seeds.run, plan.recipe.lr)


def threshold_model(rec: Recorder, prepared: Prepared) -> Any:
    """A copy of the run's model holding the threshold checkpoint's weights (with
    --all-epochs the live model is the last epoch's, not the one that met the target)."""
    view = {**rec.record, "_dir": str(rec.run_dir)}
    return prepared.plan.parts.threshold_model(view, prepared.state.module)
