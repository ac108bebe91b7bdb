"""The detours stage of `perfsuite run`: what is measured off the clock once training is over.

In order: the FLOP count of one step and the device ceilings, the profile window (both on the
warm model right after the last timed epoch: nothing timed follows them, so what they allocate
changes no epoch; docs/seam.md "Capture parity"), then, with telemetry stopped, the batch-1
inference latency of the threshold model and the hardware counters. The count and the window
run the workload's own `train_step` in detours that restore the model exactly; each runs as a
contained collector, so a failure costs that measurement, never the run. Each takes the
prepared run and fills its record sections through the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfsuite.runner.engine import capture
from perfsuite.runner.engine.engine import Engine
from perfsuite.runner.engine.progress import RunProgress
from perfsuite.runner.measure import inference
from perfsuite.runner.measure.energy import EnergyClock
from perfsuite.runner.record.chatter import LOG_NAME
from perfsuite.runner.record.recorder import Recorder
from perfsuite.runner.routes.counters import collect_counters
from perfsuite.runner.routes.nsys_profile import record_profile
from perfsuite.runner.routes.prepare import Prepared
from perfsuite.runner.routes.sections import threshold_model
from perfsuite.runner.routes.train import Trained


def count_step_work(prepared: Prepared, engine: Engine) -> None:
    """The FLOP count of one real training step (`work`), in a contained detour."""
    batch = next(prepared.batches(prepared.plan.seeds.flop_count))
    parts, wl, state = prepared.plan.parts, prepared.plan.workload, prepared.state
    with engine.collecting("FLOP count", capture.LOST_WORK, "flop_count_s") as detour:
        try:
            engine.set_work(detour.run(parts.count_step_work, wl, state, batch))
        except ImportError as exc:
            engine.rec.flag(f"FLOP counting unavailable: {exc}")


def take_window(
    prepared: Prepared, engine: Engine, progress: RunProgress, trained: Trained
) -> None:
    """The profile window: `window_steps` steps sized from the last epoch's step time, with
    the machine checked before and after it (another job's load shows there)."""
    plan, record, run_dir = prepared.plan, engine.record, engine.run_dir
    opts = plan.options
    active = capture.window_steps(opts.profile_steps, opts.profile_seconds, trained.step_s)
    progress.phase(f"profile window: {active} steps, off the clock")
    log = run_dir / LOG_NAME
    probe = capture.MachineCheck(opts.device, record.get("ceilings"))
    record["timeline"] = timeline = None
    with engine.collecting("profile window", capture.LOST_WINDOW, "profile_window_s") as detour:
        probe.before()
        batches = prepared.batches(plan.seeds.window)
        timeline = detour.run(
            plan.parts.profile_window, run_dir, plan.backend, plan.workload, prepared.state,
            batches, active,
        )  # fmt: skip
        probe.after()
    engine.took("machine_check_s", probe.seconds)
    if not (log.is_file() and log.stat().st_size):
        log.unlink(missing_ok=True)
    if timeline:
        timeline["machine_check"] = probe.section()
    engine.set_timeline(timeline, trained.epoch)


def after_training(
    prepared: Prepared,
    engine: Engine,
    progress: RunProgress,
    trained: Trained,
    after_window: Callable[[Trained], None] | None = None,
) -> None:
    """The FLOP count, the ceilings and the profile window (see the module docstring), when
    the run captures; `after_window` reads the window further (a data-parallel route: the
    collectives' time)."""
    plan = prepared.plan
    if not plan.options.capture:
        return
    progress.phase("counting FLOPs of one step, off the clock")
    count_step_work(prepared, engine)  # TF's deprecation lines from tracing go to the run's log
    progress.phase("device ceilings (cached, or measured once)")
    engine.set_ceilings(plan.options.device, plan.options.measure_peaks)
    if plan.options.profile_steps > 0:
        take_window(prepared, engine, progress, trained)
        if after_window is not None:
            after_window(trained)
    engine.rec.write()


def measure_inference(prepared: Prepared, rec: Recorder, engine: Engine, workload: Any) -> None:
    """DAWNBench latency on the threshold model through `workload`, or a stated reason."""
    record, plan = rec.record, prepared.plan
    if "checkpoint" not in record:
        why = "the run did not reach its threshold: no threshold model, no DAWNBench latency"
        if record["time_to_accuracy"].get("reached"):
            why = "the threshold model's checkpoint failed: no DAWNBench latency"
        record["inference"] = inference.not_measured(why)
        rec.flag(why)
        return
    try:
        entry, seconds = capture.timed(
            inference.measure,
            workload,
            threshold_model(rec, prepared),
            prepared.data,
            plan.backend,
            precision=prepared.state.precision or "fp32",
            limit=plan.options.inference_limit,
            energy=EnergyClock.for_device(plan.backend.device.gpu_index),
            by="perfsuite run",
        )
    except inference.InferenceError as exc:  # the trained run is kept, with the reason
        record["inference"] = inference.not_measured(str(exc))
        rec.flag(f"inference not measured: {exc}")
        return
    engine.took("inference_latency_s", seconds)
    entry["model"] = inference.model_of(record)
    inference.store(record, entry)


def inference_and_counters(
    prepared: Prepared, rec: Recorder, engine: Engine, progress: RunProgress, workload: Any
) -> None:
    """After telemetry stops: inference latency, then hardware counters and an Nsight Systems
    profile of the window, where asked."""
    opts = prepared.plan.options
    if opts.capture and opts.inference_repeats > 0:
        progress.phase("inference latency")
        measure_inference(prepared, rec, engine, workload)
    if opts.capture and opts.counters:
        progress.phase(  # ncu replays every kernel alone
            f"hardware counters ({opts.counters}; ncu replays every kernel alone: minutes)"
        )
        _, seconds = capture.timed(collect_counters, prepared, rec)
        engine.took("counters_s", seconds)
    if opts.capture and opts.profiler == "nsys":
        progress.phase("nsys profile of the window (a replay child under nsys)")
        (path, what), seconds = capture.timed(record_profile, opts, rec.run_dir)
        engine.took("nsys_profile_s", seconds)
        if path is None:
            rec.flag(what)
        progress.note(
            what
            if path is None
            else f"{what}; read it with `perfsuite timeline {path}` and `perfsuite roofline {path}`"
        )
