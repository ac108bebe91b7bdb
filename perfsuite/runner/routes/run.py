"""`perfsuite run`'s driver of the training engine (runner/engine/engine.py): one workload run ->
one
run record. It pulls: each step is the workload's `train_step` on the next batch.

Time-to-accuracy follows DAWNBench: the clock counts training steps and per-epoch data
preparation, not evaluation. The same untimed warm-up runs with capture on and off (capture.
warm_up), so one-off costs stay in epoch 1 alike. Capture (FLOP count, profile window, counters)
runs the workload's own `train_step` in detours that leave the model and the clock untouched,
all of it after the last timed epoch (what it allocates would change the epochs after it).
"""

from __future__ import annotations

import re
import signal
from dataclasses import asdict
from typing import Any

from perfsuite.hostinfo import low_precision_note
from perfsuite.record import quantity
from perfsuite.runner.engine import capture
from perfsuite.runner.engine.chatter import LOG_NAME
from perfsuite.runner.engine.engine import END, Diverged, Engine, LossMeter, Terminated, step_time
from perfsuite.runner.engine.progress import RunProgress
from perfsuite.runner.engine.scheduling import SchedulerSteps
from perfsuite.runner.frameworks import assemble
from perfsuite.runner.frameworks.parts import framework_backend, run_parts
from perfsuite.runner.launch import torchrun as launch
from perfsuite.runner.measure import inference, model_flops
from perfsuite.runner.measure.counters_step import collect_counters
from perfsuite.runner.measure.energy import EnergyClock
from perfsuite.runner.options import RunOptions
from perfsuite.runner.record.recorder import Recorder
from perfsuite.workloads import get_workload
from perfsuite.workloads.state import detour
from perfsuite.workloads.switches import parse_switches, resolve_preset


class _Run:
    """State of one run; `execute()` drives it and always leaves a valid record."""

    def __init__(self, opts: RunOptions) -> None:
        self.backend = framework_backend(opts.framework, opts.device)
        self.parts = run_parts(opts.framework)
        self.backend.check_available()
        self.backend.set_threads(opts.threads)
        self.opts = opts
        self.workload = wl = get_workload(opts.workload, opts.framework)
        wl.download = opts.download
        self.switches = parse_switches(opts.switches, wl.switches, wl.name)
        self.parts.check_switches(self.switches, self.backend)
        self.recipe = assemble.prepare_recipe(
            wl,
            opts.device,
            opts.recipe,
            opts.overrides,
            opts.epochs,
            opts.batch_size,
            self.switches,
        )
        # the recipe's tuned precision and compile mode, for this device (the record says which)
        self.preset = resolve_preset(self.switches, self.recipe.extra, opts.device)
        wl.configure(self.recipe)
        self.threshold = opts.threshold if opts.threshold is not None else wl.default_threshold
        if opts.inference_limit is not None and opts.inference_limit < 1:
            raise ValueError(f"--inference-limit must be >= 1, got {opts.inference_limit}")
        config = {k: v for k, v in asdict(opts).items() if k not in ("group", "progress")}
        config["recipe_values"] = self.recipe.to_dict()
        config["threshold"] = self.threshold
        task = {
            "name": wl.task,
            "workload": wl.name,
            "metric": wl.metric,
            "direction": getattr(wl, "direction", "higher"),  # the crossing honours it
            "threshold": self.threshold,
            "dataset": wl.dataset,
        }
        self.rec = Recorder(
            opts.out,
            wl.name
            or re.sub(r"[^A-Za-z0-9_.-]+", "-", opts.workload.rsplit("/", 1)[-1]).strip("-"),
            task,
            self.backend.device,
            config,
            framework=f"{self.backend.framework} {self.backend.version}",
            instance_type=opts.instance_type,
            group=opts.group,
            mllog_benchmark=wl.task,
            write_files=opts.replay_steps <= 0,
        )
        self.run_dir, self.record = self.rec.run_dir, self.rec.record
        backend, parts = self.backend, self.parts
        self.engine = Engine(
            self.rec,
            backend,
            LossMeter(
                50 if backend.device.is_gpu else 1,  # a check on a GPU is a sync
                read=lambda loss: loss,
                zero=lambda: parts.zero_loss(backend),
                plus=parts.add_loss,
            ),
        )
        self.setup_s = self.engine.setup_s
        self.engine.energy_wanted = opts.capture and not opts.replay_steps
        self.record["model"] = wl.model_name(self.recipe)
        if opts.price_per_hour is not None:
            self.record["cost"] = {
                "usd_per_hour": quantity(opts.price_per_hour, "USD/h", "spec", "given by --price")
            }
        if int(self.recipe.extra.get("train_limit", 0) or 0):
            self.rec.flag(
                f"trained on a subset: train_limit={self.recipe.extra['train_limit']} examples"
            )
        if self.backend.framework != "pytorch":
            self.record["environment"]["frameworks"][self.backend.framework] = self.backend.version
        self.stall_s = self.engine.stall_s
        self.progress = RunProgress(opts.progress, self.rec.run_id)
        self.restore_switches = self.parts.apply_process_switches(self.switches)

    # -- phases ---------------------------------------------------------------------------

    def _setup(self) -> None:
        opts, wl, backend = self.opts, self.workload, self.backend
        backend.seed_all(opts.seed)
        self.gen = backend.generator(opts.seed)
        self.progress.phase("loading data")
        if opts.synthetic:
            self.data, self.setup_s["data_load_s"] = capture.timed(
                wl.synthetic_data, backend.torch_device, opts.seed
            )
            self.rec.flag("synthetic data: accuracy is meaningless, throughput only")
        else:
            self.data, self.setup_s["data_load_s"] = capture.timed(
                self.parts.load_data, wl, opts.data_dir, backend, self.switches
            )
        self.record["task"]["dataset"] = self.data.description or wl.dataset
        engine = self.engine
        engine.data_kind, engine.data_description = self.data.kind, self.data.description
        engine.data_source, engine.batch_size = self.data, self.recipe.batch_size
        for note in getattr(self.data, "flags", ()):  # e.g. a smoke test, an evaluated subset
            self.rec.flag(note)
        self.record["task"]["name"] = wl.task  # a class subset renames it (imagenet-10class)
        self.progress.phase("building the model")
        parts = self.parts
        model = parts.build_model(wl, self.recipe, backend, self.switches, opts.seed)
        self.record["model"] = wl.model_name(self.recipe)  # the data may have shaped it
        self.steps_per_epoch = wl.steps_per_epoch(self.data, self.recipe)
        self.state = parts.build_state(
            wl, self.recipe, model, self.steps_per_epoch, backend, self.switches
        )
        self._distribute()
        self.schedule = SchedulerSteps(wl, self.state)
        if parts.framework == "pytorch":  # what a detour restores beyond the train state
            self.state.owners = (getattr(wl, "__wrapped__", wl), self.data)
        params = parts.parameter_count(model)
        self.record["extra"] = {"parameters": params, "steps_per_epoch": self.steps_per_epoch}
        model_flops.start(self.record, wl, self.state.module, self.recipe)
        self.record["extra"].update(self.schedule.section())
        seen, unhook = parts.watch_first_layer(self.state)
        tail = self.data.num_train % self.recipe.batch_size  # the epoch's last batch
        self.progress.phase(f"warm-up ({capture.WARMUP_STEPS + bool(tail)} steps, off the clock)")
        _, self.setup_s["warmup_s"] = capture.timed(
            capture.warm_up, wl, self.state, self._batches(30_011), capture.WARMUP_STEPS, tail
        )
        unhook()
        self.record["switches"] = {
            "requested": self.switches.to_dict(),
            "effect": parts.switch_effects(self.state, self.switches, seen),
        }
        if self.preset:
            self.record["switches"]["preset"] = self.preset
        self.record["math"] = parts.math_section(self.state, seen)
        policy = self.record["math"]
        slow = low_precision_note(policy["autocast_dtype"], policy["autocast_native"])
        if slow:
            self.rec.flag(slow)
            self.progress.note(slow)
        for note in wl.notes():
            self.rec.flag(note)
        if opts.capture and not opts.replay_steps:
            self.engine.measure_energy()
        self.rec.start_mllog(self.recipe.batch_size, opts.seed, self.recipe.lr)

    def _distribute(self) -> None:
        """Hook: a data-parallel rank wraps the model here (runner/launch/distributed.py)."""

    def _batches(self, salt: int) -> Any:
        """Real training batches from a generator of their own (the run's draws stay intact)."""
        g = self.backend.generator(self.opts.seed + salt)
        return capture.endless(self.data, self.recipe.batch_size, g)

    def _count_and_ceilings(self) -> None:
        """Capture's FLOP count of one step and the device ceilings (see `_window_after`)."""
        opts = self.opts
        self.progress.phase("counting FLOPs of one step, off the clock")
        self._capture_work()  # TF's deprecation lines from tracing go to the run's log
        self.progress.phase("device ceilings (cached, or measured once)")
        self.engine.set_ceilings(opts.device, opts.measure_peaks)

    def _capture_work(self) -> None:
        batch = next(self._batches(10_007))
        with self.engine.collecting("FLOP count", capture.LOST_WORK, "flop_count_s") as detour:
            try:
                work = detour.run(self.parts.count_step_work, self.workload, self.state, batch)
                self.engine.set_work(work)
            except ImportError as exc:
                self.rec.flag(f"FLOP counting unavailable: {exc}")

    def _capture_timeline(self, epoch: int, epoch_step_s: float) -> None:
        """The profile window, taken warm after the last timed epoch: steps in a detour."""
        opts, rec = self.opts, self.record
        active = capture.window_steps(opts.profile_steps, opts.profile_seconds, epoch_step_s)
        self.progress.phase(f"profile window: {active} steps, off the clock")
        log = self.run_dir / LOG_NAME
        probe = capture.MachineCheck(opts.device, rec.get("ceilings"))
        rec["timeline"] = timeline = None
        lost = capture.LOST_WINDOW
        with self.engine.collecting("profile window", lost, "profile_window_s") as detour:
            probe.before()
            timeline = detour.run(
                self.parts.profile_window,
                self.run_dir,
                self.backend,
                self.workload,
                self.state,
                self._batches(20_011),
                active,
            )
            probe.after()
        self.setup_s["machine_check_s"] = probe.seconds
        if not (log.is_file() and log.stat().st_size):
            log.unlink(missing_ok=True)
        if timeline:
            timeline["machine_check"] = probe.section()
        self.engine.set_timeline(timeline, epoch)

    def _train_epoch(self, epoch: int) -> tuple[float, float, int, int]:
        """One epoch through the engine; returns (seconds, mean loss, steps, samples). The
        clock includes data preparation and the workload's epoch hooks."""
        state, wl, engine = self.state, self.workload, self.engine
        engine.open_epoch()
        self.schedule.epoch_start()
        wl.on_epoch_start(state, self.data, epoch)
        batches = iter(self.data.train_batches(self.recipe.batch_size, self.gen))
        tick = self.progress.step if self.progress.bar is not None else None
        while (batch := engine.next_batch(batches)) is not END:
            out = wl.train_step(state, batch)
            self.schedule.after_step()
            engine.stepped(out, batch.size)  # raises Diverged
            if tick is not None:
                tick()
        wl.on_epoch_end(state, self.data, epoch)
        self.schedule.epoch_end(epoch, engine.epoch_steps)
        seconds = engine.close_epoch()  # raises Diverged
        assert seconds is not None
        return seconds, engine.epoch_loss or 0.0, engine.epoch_steps, engine.epoch_samples or 0

    def _window_after(self, epoch: int, step_s: float, stopping: bool) -> None:
        """The FLOP count and the profile window follow the last timed epoch (the one the run
        stops after): warm, trained, and no timed epoch after them. Not before or during
        training: on CPU their allocations changed the page-fault rate of later epochs (the
        count before the clock: 2-3x the faults, 4-7% slower epochs; docs/seam.md "Capture
        parity"), and on GPUs Kineto leaves CUPTI attached unless told otherwise."""
        opts = self.opts
        if not (opts.capture and stopping):
            return
        self.progress.close()  # training is over: the phases after it are timed on their own
        if "ceilings" not in self.record:
            self._count_and_ceilings()
        if opts.profile_steps > 0 and "timeline" not in self.record:
            self._capture_timeline(epoch, step_s)
        self.rec.write()

    def _epochs(self) -> None:
        opts, metric, mllog = self.opts, self.workload.metric, self.rec.mllog
        samples = 0
        self.progress.start_training(self.recipe.epochs, self.steps_per_epoch)
        for epoch in range(1, self.recipe.epochs + 1):
            if mllog:
                mllog.epoch_start(epoch)
            seconds, loss, steps, n = self._train_epoch(epoch)
            samples += n
            if mllog:
                mllog.epoch_stop(epoch)
            self.progress.epoch_done(epoch, n / seconds if seconds > 0 else None)
            if epoch < min(opts.eval_from, self.recipe.epochs):
                # Not evaluated: time to accuracy can only be later than with evaluation here.
                self.rec.set_throughput(self.steps_per_epoch, self.recipe.batch_size, n)
                self.rec.write()
                continue
            if mllog:
                mllog.eval_start(epoch)
            self.progress.evaluating(epoch)
            with self.state.autocast():
                metrics, eval_s = capture.timed(
                    self.workload.evaluate, self.state.module, self.data
                )
            if mllog:
                mllog.eval_stop(epoch)
            # n and samples: every rank's (runner/launch/distributed.py), where the engine has its
            # own
            self.rec.set_throughput(self.steps_per_epoch, self.recipe.batch_size, n)
            self.rec.set_data(
                self.data.kind, self.data.description, self.stall_s, self.data, samples
            )
            reached = self.engine.evaluate(
                epoch,
                self.engine.train_time,
                metrics,
                train_loss=loss,
                eval_time_s=eval_s,
                samples=samples,
            )
            self.progress.epoch_done(
                epoch,
                n / seconds if seconds > 0 else None,
                f"{metric}={metrics[metric]:.4f}, loss={loss:.3f}",
            )
            stopping = (reached and not opts.keep_going) or epoch == self.recipe.epochs
            if stopping:
                self.engine.end_training()  # what follows is off MLPerf's clock
            if reached:  # the model that first met it, kept off the clock (checkpoint.py)
                self.engine.keep_threshold_model(
                    self.parts.save_threshold_model, self.state.module, epoch, metrics[metric]
                )
            self._window_after(epoch, step_time(seconds, steps), stopping)
            if reached and not opts.keep_going:
                break
        self.progress.close()

    def _threshold_model(self) -> Any:
        """A copy of the run's model holding the threshold checkpoint's weights (with
        --keep-going the live model is the last epoch's, not the one that met the target)."""
        view = {**self.record, "_dir": str(self.run_dir)}
        return self.parts.threshold_model(view, self.state.module)

    def _measure_inference(self) -> None:
        """DAWNBench latency on the threshold model, or a stated reason for none."""
        rec, opts = self.record, self.opts
        if "checkpoint" not in rec:
            why = "the run did not reach its threshold: no threshold model, no DAWNBench latency"
            if rec["time_to_accuracy"].get("reached"):
                why = "the threshold model's checkpoint failed: no DAWNBench latency"
            rec["inference"] = inference.not_measured(why)
            self.rec.flag(why)
            return
        try:
            entry, self.setup_s["inference_latency_s"] = capture.timed(
                inference.measure,
                self.workload,
                self._threshold_model(),
                self.data,
                self.backend,
                precision=self.state.precision or "fp32",
                limit=opts.inference_limit,
                energy=EnergyClock.for_device(self.backend.device.gpu_index),
                by="perfsuite run",
            )
        except inference.InferenceError as exc:  # the trained run is kept, with the reason
            rec["inference"] = inference.not_measured(str(exc))
            self.rec.flag(f"inference not measured: {exc}")
            return
        entry["model"] = inference.model_of(rec)
        inference.store(rec, entry)

    def _finish(self) -> None:
        opts = self.opts
        if opts.capture and opts.inference_repeats > 0:
            self.progress.phase("inference latency")
            self._measure_inference()
        if opts.capture and opts.counters:
            self.progress.phase(  # ncu: ~0.3 s per kernel launch on an H200
                f"hardware counters ({opts.counters}; ncu replays every kernel alone: minutes)"
            )
            _, self.setup_s["counters_s"] = capture.timed(collect_counters, self)

    def replay(self) -> None:
        """For a counters collector: setup and warm-up as in the run, then `replay_steps` steps
        inside one process-wide NVTX start/end range named `perfsuite.steps`, each op in a
        range of its own (`backend.op_ranges`) for per-op attribution. The batches are drawn
        before the range opens: the counters cover the step the FLOP counter counts, not the
        input pipeline (on the GPU cifar10 recipe its augmentation was 80% of the launches)."""
        self._setup()
        batches = self._batches(20_011)
        drawn = [next(batches) for _ in range(self.opts.replay_steps)]
        self.backend.sync()
        steps = self.backend.nvtx_range("perfsuite.steps")
        with detour(self.state), steps, self.backend.op_ranges():
            for batch in drawn:
                self.workload.train_step(self.state, batch)
            self.backend.sync()

    def execute(self) -> Any:
        previous = signal.getsignal(signal.SIGTERM)

        def on_term(signum: int, frame: Any) -> None:
            raise Terminated("terminated by SIGTERM")

        try:
            signal.signal(signal.SIGTERM, on_term)
        except ValueError:  # not in the main thread
            previous = None
        try:
            self._setup()
            if self.opts.capture:
                self.engine.open_telemetry(self.opts.telemetry_interval_s)
            self._epochs()
            self.engine.stop_telemetry()
            self._finish()
        except Diverged as exc:  # the run's outcome, recorded: nothing broke
            self._close(exc)
        except BaseException as exc:
            exc.perfsuite_run_dir = self.run_dir  # type: ignore[attr-defined]  # for the CLI
            self._close(exc)
            raise
        else:
            self._close(None)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        return self.run_dir

    def _close(self, exc: BaseException | None) -> None:
        self.progress.close()
        self.restore_switches()
        self.engine.close(exc)


def run_workload(opts: RunOptions) -> Any:
    """Run one workload under instrumentation; returns the run folder (with run.json)."""
    if opts.nproc > 1:
        return launch.launch(opts)
    if opts.replay_steps > 0:
        run = _Run(opts)
        try:
            run.replay()
        finally:
            run.restore_switches()
        return None
    return _Run(opts).execute()
