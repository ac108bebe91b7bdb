"""The instrumented training loop: one workload run -> one run record.

Time-to-accuracy follows DAWNBench: the clock counts training steps and per-epoch data
preparation (shuffling, augmentation), not evaluation. The record is rewritten atomically after
every evaluation, so a run killed at any point leaves a valid record of every epoch it finished.
"""

from __future__ import annotations

import math
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analyzers.tta import crossing_dict, first_crossing
from perfsuite.record import new_record, new_run_id, quantity, write_record
from perfsuite.runner import capture
from perfsuite.runner.environment import collect_environment, hardware_section
from perfsuite.runner.profile_window import ProfileWindow
from perfsuite.runner.telemetry import TelemetrySampler


class Diverged(RuntimeError):
    """Training loss became NaN or infinite: the run did not converge."""


class Terminated(RuntimeError):
    """The process received SIGTERM."""


@dataclass
class RunOptions:
    workload: str
    data_dir: str | None = None
    out: str = "runs"
    threshold: float | None = None
    epochs: int | None = None
    batch_size: int | None = None
    seed: int = 0
    device: str = "cpu"
    keep_going: bool = False
    capture: bool = True
    recipe: str | None = None
    overrides: list[str] = field(default_factory=list)
    threads: int | None = None
    counters: str | None = None
    instance_type: str | None = None
    price_per_hour: float | None = None
    group: dict[str, Any] | None = None
    download: bool = False
    telemetry_interval_s: float = 0.5
    profile_steps: int = 3
    measure_peaks: bool = True
    inference_repeats: int = 100
    progress: bool = True


def _prepare_recipe(workload: Any, opts: RunOptions) -> Any:
    import copy

    if opts.recipe:
        presets = workload.presets()
        if opts.recipe not in presets:
            known = ", ".join(sorted(presets)) or "none"
            raise ValueError(f"unknown recipe {opts.recipe!r} for {workload.name}; known: {known}")
        recipe = copy.deepcopy(presets[opts.recipe])
    else:
        recipe = workload.default_recipe(opts.device)
    for item in opts.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects key=value, got {item!r}")
        recipe.override(key.strip(), value.strip())
    if opts.epochs is not None:
        recipe.epochs = opts.epochs
    if opts.batch_size is not None:
        recipe.batch_size = opts.batch_size
    return recipe


def _check_device(device: str) -> None:
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but no CUDA device is available")
    if not (device == "cpu" or device.startswith("cuda")):
        raise ValueError(f"--device must be cpu or cuda[:N], got {device!r}")


class _Run:
    """State of one run; `execute()` drives it and always leaves a valid record."""

    def __init__(self, opts: RunOptions) -> None:
        import torch

        from perfsuite.workloads import get_workload

        _check_device(opts.device)
        if opts.threads:
            torch.set_num_threads(opts.threads)
        self.opts = opts
        self.torch = torch
        self.workload = get_workload(opts.workload)
        self.workload.download = opts.download
        self.recipe = _prepare_recipe(self.workload, opts)
        self.workload.configure(self.recipe)
        self.threshold = (
            opts.threshold if opts.threshold is not None else self.workload.default_threshold
        )
        self.run_id = new_run_id(opts.workload)
        self.run_dir = Path(opts.out) / self.run_id
        self.run_dir.mkdir(parents=True, exist_ok=False)
        self.setup_s: dict[str, float] = {}
        self.record = self._initial_record()
        self.mllog = self._open_mllog()
        write_record(self.run_dir, self.record)

    def _initial_record(self) -> dict[str, Any]:
        wl, opts = self.workload, self.opts
        env = collect_environment(opts.device)
        config = {k: v for k, v in asdict(self.opts).items() if k not in ("group", "progress")}
        config["recipe_values"] = self.recipe.to_dict()
        config["threshold"] = self.threshold
        rec = new_record(
            run_id=self.run_id,
            task={
                "name": wl.task,
                "workload": wl.name,
                "metric": wl.metric,
                "threshold": self.threshold,
                "dataset": wl.dataset,
            },
            environment=env,
            config=config,
        )
        rec["group"] = opts.group
        rec["hardware"] = hardware_section(env, opts.device, opts.instance_type)
        rec["model"] = wl.model_name(self.recipe)
        rec["framework"] = f"pytorch {env['frameworks']['torch']}"
        if opts.price_per_hour is not None:
            rec["cost"] = {
                "usd_per_hour": quantity(opts.price_per_hour, "USD/h", "spec", "given by --price")
            }
        if int(self.recipe.extra.get("train_limit", 0) or 0):
            rec["flags"].append(
                f"trained on a subset: train_limit={self.recipe.extra['train_limit']} examples"
            )
        return rec

    def _open_mllog(self) -> Any:
        try:
            from perfsuite.mllog import MLLogWriter
        except ImportError:
            return None
        path = self.run_dir / "mllog.txt"
        self.record["sidecars"]["mllog"] = path.name
        return MLLogWriter(path, benchmark=self.workload.task)

    # -- phases ---------------------------------------------------------------------------

    def _sync(self) -> None:
        if self.opts.device.startswith("cuda"):
            self.torch.cuda.synchronize()

    def _setup(self) -> None:
        torch, opts = self.torch, self.opts
        torch.manual_seed(opts.seed)
        self.gen = torch.Generator().manual_seed(opts.seed)
        self.data, self.setup_s["data_load_s"] = capture.timed(
            self.workload.load_data, opts.data_dir, opts.device
        )
        self.record["task"]["dataset"] = self.data.description or self.workload.dataset
        self.model = self.workload.build_model(self.recipe).to(opts.device)
        self.steps_per_epoch = self.workload.steps_per_epoch(self.data, self.recipe)
        self.opt, self.sched = self.workload.make_optimizer(
            self.model, self.recipe, self.steps_per_epoch
        )
        params = sum(p.numel() for p in self.model.parameters())
        self.record["extra"] = {"parameters": params, "steps_per_epoch": self.steps_per_epoch}
        if opts.capture:
            self._capture_work()
            self._capture_timeline()
            dtype = (self.record.get("work") or {}).get("dtype") or "float32"
            ceil, why = capture.resolve_ceilings(opts.device, dtype, opts.measure_peaks)
            self.record["ceilings"] = ceil
            if why:
                self.record["flags"].append(why)
        if self.mllog:
            self.mllog.start(
                {
                    "global_batch_size": self.recipe.batch_size,
                    "seed": opts.seed,
                    "opt_base_learning_rate": self.recipe.lr,
                    "submission_platform": self.record["hardware"]["name"],
                }
            )

    def _capture_work(self) -> None:
        g = self.torch.Generator().manual_seed(self.opts.seed + 10_007)
        batch = next(iter(self.workload.train_batches(self.data, self.recipe, g)))
        try:
            work, self.setup_s["flop_count_s"] = capture.timed(
                capture.count_step_work, self.workload, self.model, self.recipe, batch
            )
            self.record["work"] = work
        except ImportError as exc:
            self.record["flags"].append(f"FLOP counting unavailable: {exc}")

    def _window(self, name: str, experimental: Any = None) -> dict[str, Any] | None:
        """Profile a few training steps on copies (see capture.profile_window_on_copy)."""
        window = ProfileWindow(
            self.run_dir,
            self.opts.device,
            wait=2,
            warmup=1,
            active=self.opts.profile_steps,
            experimental_config=experimental,
            trace_name=name,
        )
        g = self.torch.Generator().manual_seed(self.opts.seed + 20_011)

        def batches() -> Any:
            while True:
                yield from self.workload.train_batches(self.data, self.recipe, g)

        return capture.profile_window_on_copy(
            self.workload, self.model, self.recipe, batches(), window
        )

    def _capture_timeline(self) -> None:
        opts, rec = self.opts, self.record
        if opts.profile_steps <= 0:
            return
        rec["timeline"], self.setup_s["profile_window_s"] = capture.timed(
            self._window, "trace.json.gz"
        )
        if rec["timeline"]:
            rec["sidecars"]["trace"] = rec["timeline"]["trace"]
        if opts.counters == "cupti":
            # Counter collection replays kernels and records no kernel timings, so it gets a
            # window of its own; the timeline above keeps real timings.
            from perfsuite.counters import counters_from_trace, profiler_experimental_config

            name = "counters-trace.json.gz"
            _, self.setup_s["counters_window_s"] = capture.timed(
                self._window, name, profiler_experimental_config()
            )
            rec["sidecars"]["counters_trace"] = name
            rec["counters"] = counters_from_trace(
                self.run_dir / name, window_steps=opts.profile_steps
            )

    def _train_epoch(self) -> tuple[float, float, int]:
        """One epoch; returns (seconds, mean loss, steps). The clock includes data prep."""
        torch, wl, recipe = self.torch, self.workload, self.recipe
        cpu = not self.opts.device.startswith("cuda")
        self._sync()
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=self.opts.device)
        steps = 0
        for x, y in wl.train_batches(self.data, recipe, self.gen):
            loss = wl.loss(self.model(x), y, recipe)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            self.sched.step()
            loss_sum += loss.detach()
            steps += 1
            if (cpu or steps % 50 == 0) and not math.isfinite(float(loss_sum)):
                raise Diverged(f"non-finite training loss at step {steps} of the epoch")
        self._sync()
        seconds = time.perf_counter() - t0
        mean_loss = float(loss_sum) / max(1, steps)
        if not math.isfinite(mean_loss):
            raise Diverged("non-finite training loss in the epoch")
        return seconds, mean_loss, steps

    def _epochs(self, telemetry: TelemetrySampler) -> None:
        from tqdm import tqdm

        rec, opts, metric = self.record, self.opts, self.workload.metric
        train_time = 0.0
        samples = 0
        epoch_times: list[float] = []
        bar = tqdm(
            range(1, self.recipe.epochs + 1),
            desc=f"{self.workload.name} {self.run_id}",
            unit="epoch",
            disable=not opts.progress,
            leave=False,
        )
        for epoch in bar:
            if self.mllog:
                self.mllog.epoch_start(epoch)
            seconds, loss, steps = self._train_epoch()
            train_time += seconds
            samples += min(len(self.data.train_y), steps * self.recipe.batch_size)
            epoch_times.append(seconds)
            if self.mllog:
                self.mllog.epoch_stop(epoch)
            if self.mllog:
                self.mllog.eval_start(epoch)
            metrics, eval_s = capture.timed(self.workload.evaluate, self.model, self.data)
            if self.mllog:
                self.mllog.eval_stop(epoch)
            rec["evaluations"].append(
                {
                    "epoch": epoch,
                    "train_time_s": train_time,
                    "metrics": metrics,
                    "train_loss": loss,
                    "eval_time_s": eval_s,
                    "samples": samples,
                }
            )
            crossing = first_crossing(rec["evaluations"], metric, self.threshold)
            rec["time_to_accuracy"] = crossing_dict(crossing, "measured")
            rec["throughput"] = self._throughput(epoch_times)
            rec["telemetry"] = telemetry.summary()
            if self.mllog:
                self.mllog.eval(epoch, metrics[metric], samples)
            write_record(self.run_dir, rec)
            bar.set_postfix({metric: f"{metrics[metric]:.4f}", "loss": f"{loss:.3f}"})
            if crossing.reached and not opts.keep_going:
                break
        bar.close()

    def _throughput(self, epoch_times: list[float]) -> dict[str, Any]:
        import statistics

        # The first epoch carries one-off warm-up costs; leave it out once there are others.
        clean = epoch_times[1:] if len(epoch_times) > 1 else epoch_times
        per_step = statistics.median(clean) / self.steps_per_epoch
        source = (
            f"median over {len(clean)} epoch(s) of epoch training wall time / "
            f"{self.steps_per_epoch} steps (data preparation included"
            + ("; first epoch excluded)" if len(epoch_times) > 1 else ")")
        )
        return {
            "step_time": quantity(per_step, "s", "measured", source),
            "samples_per_s": quantity(
                self.recipe.batch_size / per_step, "sample/s", "derived", "batch_size / step_time"
            ),
            "epoch_times_s": list(epoch_times),
        }

    def _finish(self) -> None:
        rec, opts = self.record, self.opts
        if opts.capture and opts.inference_repeats > 0:
            inf, self.setup_s["inference_latency_s"] = capture.timed(
                capture.measure_inference_latency,
                self.workload,
                self.model,
                self.data.test_x,
                opts.device,
                opts.inference_repeats,
            )
            inf["metrics"] = dict(rec["evaluations"][-1]["metrics"]) if rec["evaluations"] else {}
            rec["inference"] = inf
        rec["status"] = "reached" if rec["time_to_accuracy"]["reached"] else "not_reached"

    def execute(self) -> Path:
        rec = self.record
        previous = signal.getsignal(signal.SIGTERM)

        def on_term(signum: int, frame: Any) -> None:
            raise Terminated("terminated by SIGTERM")

        try:
            signal.signal(signal.SIGTERM, on_term)
        except ValueError:  # not in the main thread
            previous = None
        telemetry = None
        try:
            self._setup()
            gpu_index = None
            if self.opts.device.startswith("cuda"):
                gpu_index = int(self.opts.device.split(":")[1]) if ":" in self.opts.device else 0
            if self.opts.capture:
                telemetry = TelemetrySampler(
                    self.run_dir / "telemetry.csv", self.opts.telemetry_interval_s, gpu_index
                )
                rec["sidecars"]["telemetry"] = "telemetry.csv"
            with telemetry or _NullTelemetry():
                self._epochs(telemetry or _NullTelemetry())
            self._finish()
        except Diverged as exc:
            rec["status"], rec["error"] = "diverged", f"did not converge: {exc}"
        except (Exception, KeyboardInterrupt) as exc:
            exc.perfsuite_run_dir = self.run_dir  # type: ignore[attr-defined]  # for the CLI
            rec["status"] = "crashed"
            rec["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            self._close(telemetry)
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        self._close(telemetry)
        return self.run_dir

    def _close(self, telemetry: TelemetrySampler | None) -> None:
        rec = self.record
        if telemetry is not None:
            rec["telemetry"] = telemetry.summary()
        rec.setdefault("extra", {})["setup_s"] = self.setup_s
        if self.mllog:
            self.mllog.stop(success=rec["status"] == "reached")
        write_record(self.run_dir, rec)


class _NullTelemetry:
    """Stands in for the sampler when capture is off."""

    def __enter__(self) -> _NullTelemetry:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def summary(self) -> None:
        return None


def run_workload(opts: RunOptions) -> Path:
    """Run one workload under instrumentation; returns the run folder (with run.json)."""
    return _Run(opts).execute()
