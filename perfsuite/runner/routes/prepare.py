"""The prepare stage of `perfsuite run`: the data, the model and its train state, warmed up.

Takes a `RunPlan` and gives a `Prepared`: what the train stage runs on, plus the facts the
record stage writes (`SetupFacts`); this stage writes nothing into the record itself. The
warm-up steps run off the clock on batches of their own (`plan.seeds.warmup`), so one-off
costs (allocations, autotuning, compilation) stay out of the timed epochs, with capture on and
off alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from perfsuite.hostinfo import low_precision_note
from perfsuite.runner.engine import capture
from perfsuite.runner.engine.progress import RunProgress
from perfsuite.runner.engine.scheduling import SchedulerSteps
from perfsuite.runner.routes.plan import RunPlan


class ModelWrapper(Protocol):
    def wrap_model(self, state: Any) -> None:
        """Wrap the built model before the warm-up (a data-parallel rank: in DDP)."""


@dataclass(frozen=True)
class SetupFacts:
    """What the setup found, for the record: where the data came from, what model was
    built, what the switches did, and the notes a reader must see (in this order)."""

    dataset: str
    task_name: str  # a class subset renames the task (imagenet-10class)
    model_name: str  # the data may shape it
    parameters: int
    switch_effects: dict[str, Any]
    math: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    slow_math_note: str | None = None  # also shown on the terminal


@dataclass
class Prepared:
    """The run's live objects after setup and warm-up."""

    plan: RunPlan
    data: Any  # the DataSource
    state: Any  # the TrainState
    steps_per_epoch: int
    schedule: SchedulerSteps
    generator: Any  # the run's own generator: the timed epochs shuffle with it
    seconds: dict[str, float]  # data_load_s, warmup_s (the record's `extra.setup_s`)
    facts: SetupFacts

    def batches(self, seed: int) -> Any:
        """Endless training batches from a generator of their own, seeded `seed` (one of
        `plan.seeds`), so the epochs' draws stay what they are without capture."""
        g = self.plan.backend.generator(seed)
        return capture.endless(self.data, self.plan.recipe.batch_size, g)


def load_data(plan: RunPlan) -> tuple[Any, float, list[str]]:
    """(data source, seconds it took, notes): synthetic data when asked, else the workload's."""
    wl, backend, opts = plan.workload, plan.backend, plan.options
    notes = []
    if opts.synthetic:
        data, seconds = capture.timed(wl.synthetic_data, backend.torch_device, opts.seed)
        notes.append("synthetic data: accuracy is meaningless, throughput only")
    else:
        data, seconds = capture.timed(
            plan.parts.load_data, wl, opts.data_dir, backend, plan.switches
        )
    notes += list(getattr(data, "flags", ()))  # e.g. a smoke test, an evaluated subset
    return data, seconds, notes


def prepare(plan: RunPlan, progress: RunProgress, wrapper: ModelWrapper | None = None) -> Prepared:
    """Seed, load the data, build the model and state, warm up; see the module docstring."""
    wl, backend, parts, recipe = plan.workload, plan.backend, plan.parts, plan.recipe
    backend.seed_all(plan.seeds.run)
    generator = backend.generator(plan.seeds.run)
    progress.phase("loading data")
    data, load_s, notes = load_data(plan)
    progress.phase("building the model")
    model = parts.build_model(wl, recipe, backend, plan.switches, plan.seeds.run)
    steps_per_epoch = wl.steps_per_epoch(data, recipe)
    state = parts.build_state(wl, recipe, model, steps_per_epoch, backend, plan.switches)
    if wrapper is not None:
        wrapper.wrap_model(state)
    schedule = SchedulerSteps(wl, state)
    if parts.framework == "pytorch":  # what a detour restores beyond the train state
        state.owners = (getattr(wl, "__wrapped__", wl), data)
    seen, unhook = parts.watch_first_layer(state)
    tail = data.num_train % recipe.batch_size  # the epoch's last batch
    progress.phase(f"warm-up ({capture.WARMUP_STEPS + bool(tail)} steps, off the clock)")
    warm = capture.endless(data, recipe.batch_size, backend.generator(plan.seeds.warmup))
    _, warmup_s = capture.timed(capture.warm_up, wl, state, warm, capture.WARMUP_STEPS, tail)
    unhook()
    math = parts.math_section(state, seen)
    slow = low_precision_note(math["autocast_dtype"], math["autocast_native"])
    facts = SetupFacts(
        dataset=data.description or wl.dataset,
        task_name=wl.task,
        model_name=wl.model_name(recipe),
        parameters=parts.parameter_count(model),
        switch_effects=parts.switch_effects(state, plan.switches, seen),
        math=math,
        notes=[*notes, *([slow] if slow else []), *wl.notes()],
        slow_math_note=slow,
    )
    seconds = {"data_load_s": load_s, "warmup_s": warmup_s}
    return Prepared(plan, data, state, steps_per_epoch, schedule, generator, seconds, facts)
