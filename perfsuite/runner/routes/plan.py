"""A run's plan: the options of `perfsuite run` resolved once, and checked, before anything runs.

`plan_run(options)` gives a frozen `RunPlan`: the framework and its device backend, the
workload, the switches, the recipe in force, the threshold, the seeds, and what the record
says of them (its `task` and `config` sections). Every check that spans several options lives
here, so the command line, the Python API and studies refuse the same options with the same
one-line `OptionsError`, before a run folder exists.

The plan holds live objects (the workload, the recipe, the backend) that the stages use; it
never reassigns them, and a data-parallel rank that trains with another batch or workload view
makes its own plan with `dataclasses.replace`.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass
from typing import Any

from perfsuite.runner.frameworks.assemble import prepare_recipe
from perfsuite.runner.frameworks.parts import FrameworkParts, framework_backend, run_parts
from perfsuite.runner.options import RunOptions
from perfsuite.workloads import get_workload
from perfsuite.workloads.base import Recipe
from perfsuite.workloads.switches import Switches, parse_switches, resolve_preset


class OptionsError(ValueError):
    """The options of a run are wrong (an unknown workload, recipe or switch, a bad value, or
    two options that exclude each other): one line naming the option. Every run with these
    options would fail alike, so executors start no further run."""


# Each draw of batches off the clock (the warm-up, the FLOP count, the profile window and the
# counters replay) has a generator of its own, seeded `seed + salt`, so it never advances the
# generator the timed epochs shuffle with: a run's epochs see the same batches with capture on
# and off. The salts are fixed primes 10,000 apart: repeats take seeds seed, seed+1, ..., so two
# streams of a group of repeats coincide only when their seeds differ by 10,000 or more. The
# counters replay shares the window's salt on purpose: it replays the batches the window timed.
WARMUP_SALT = 30_011
FLOP_COUNT_SALT = 10_007
WINDOW_SALT = 20_011


@dataclass(frozen=True)
class Seeds:
    """The run's seed and the seeds of its off-the-clock batch streams (see the salts above)."""

    run: int

    @property
    def warmup(self) -> int:
        return self.run + WARMUP_SALT

    @property
    def flop_count(self) -> int:
        return self.run + FLOP_COUNT_SALT

    @property
    def window(self) -> int:
        return self.run + WINDOW_SALT


@dataclass(frozen=True)
class RunPlan:
    """One run, resolved: what the stages read. `options` is what was asked; the other fields
    are what it resolved to."""

    options: RunOptions
    backend: Any  # the framework's device seam (TorchBackend, TFBackend)
    parts: FrameworkParts  # what the runner asks of the framework
    workload: Any  # the configured Workload
    switches: Switches
    recipe: Recipe
    preset: dict[str, Any] | None  # the recipe's tuned precision and compile mode, if any
    threshold: float
    seeds: Seeds
    run_name: str  # the run folder's name prefix
    task: dict[str, Any]  # the record's `task` section as the run starts
    config: dict[str, Any]  # the record's `config` section

    @property
    def framework(self) -> str:
        return self.parts.framework

    @property
    def writes_files(self) -> bool:
        """False for a counters replay: it runs steps for a profiler and writes no record."""
        return self.options.replay_steps <= 0

    @property
    def measures(self) -> bool:
        """Capture is on and this is a measured run (not a counters replay)."""
        return self.options.capture and self.writes_files


def check_options(opts: RunOptions) -> None:
    """The checks that need no workload: values in range, and options that need each other."""
    if opts.profile_steps < 0:
        raise OptionsError("--profile-steps must be >= 0 (0: no profile window)")
    if opts.nproc < 1:
        raise OptionsError(f"--nproc must be >= 1, got {opts.nproc}")
    if opts.inference_limit is not None and opts.inference_limit < 1:
        raise OptionsError(f"--inference-limit must be >= 1, got {opts.inference_limit}")
    if opts.nproc > 1 and opts.framework != "pytorch":
        raise OptionsError(f"--nproc: data-parallel runs are PyTorch only, not {opts.framework}")
    if opts.profiler:
        _check_profiler(opts)
    if not opts.counters:
        return
    if not opts.device.startswith("cuda"):
        raise OptionsError(f"--counters {opts.counters} needs an NVIDIA GPU (--device cuda)")
    if not opts.capture:  # counters replay the profiled window after training
        raise OptionsError(f"--counters {opts.counters} needs capture: drop --no-capture")
    if opts.framework != "pytorch":
        raise OptionsError(
            f"--counters: PyTorch runs only (the replay re-runs the PyTorch workload), not "
            f"{opts.framework}; run ncu yourself and attach its CSV with `perfsuite counters "
            "FILE --into RUN --steps N`"
        )


def why_not(device: str, framework: str) -> str | None:
    """Why an nsys profile (`--profiler nsys`, runner/routes/nsys_profile.py) cannot be
    recorded here; None when it can."""
    if shutil.which("nsys") is None:
        return "nsys (Nsight Systems) is not on PATH"
    if not device.startswith("cuda"):
        return f"it profiles NVIDIA GPUs; this run is on {device} (--device cuda)"
    if framework != "pytorch":
        return f"the replay re-runs the PyTorch workload; not {framework}"
    return None


def _check_profiler(opts: RunOptions) -> None:
    """`--profiler nsys` replays the window of one captured single-process PyTorch run on an
    NVIDIA GPU under nsys: refused before anything runs where that cannot happen."""
    why = why_not(opts.device, opts.framework)
    if why:
        raise OptionsError(f"--profiler nsys: cannot record a profile: {why}")
    if not opts.capture or opts.nproc > 1:
        raise OptionsError(
            "--profiler nsys: one captured single-process run (no --no-capture or --nproc)"
        )


def plan_run(opts: RunOptions) -> RunPlan:
    """Resolve and check `opts`; raises OptionsError (one line) for options no run can take.
    Builds no model and loads no data; the workload is configured with the recipe."""
    check_options(opts)
    try:
        backend = framework_backend(opts.framework, opts.device)
        parts = run_parts(opts.framework)
        backend.check_available()
        wl = get_workload(opts.workload, opts.framework)
    except (KeyError, ValueError) as exc:
        raise OptionsError(str(exc).strip("'\"")) from None
    if wl.needs_data_dir and not opts.data_dir and not opts.synthetic:
        raise OptionsError(f"{opts.workload} needs --data-dir DIR (and --download to fetch it)")
    wl.download = opts.download
    try:
        switches = parse_switches(opts.switches, wl.switches, wl.name)
        parts.check_switches(switches, backend)
        recipe = prepare_recipe(
            wl, opts.device, opts.recipe, opts.overrides, opts.epochs, opts.batch_size, switches
        )
        preset = resolve_preset(switches, recipe.extra, opts.device)
        wl.configure(recipe)
    except (KeyError, ValueError) as exc:
        raise OptionsError(str(exc).strip("'\"")) from None
    threshold = opts.threshold if opts.threshold is not None else wl.default_threshold
    return RunPlan(
        options=opts,
        backend=backend,
        parts=parts,
        workload=wl,
        switches=switches,
        recipe=recipe,
        preset=preset,
        threshold=threshold,
        seeds=Seeds(opts.seed),
        run_name=wl.name or _folder_name(opts.workload),
        task=task_section(wl, threshold),
        config=config_section(opts, recipe, threshold),
    )


def task_section(wl: Any, threshold: float) -> dict[str, Any]:
    """The record's `task` as the run starts (the data may rename it: see the prepare stage)."""
    return {
        "name": wl.task,
        "workload": wl.name,
        "metric": wl.metric,
        "direction": getattr(wl, "direction", "higher"),  # the crossing honours it
        "threshold": threshold,
        "dataset": wl.dataset,
    }


def config_section(opts: RunOptions, recipe: Recipe, threshold: float) -> dict[str, Any]:
    """The record's `config`: the options (less the display-only ones) and what they resolved to."""
    config = {k: v for k, v in asdict(opts).items() if k not in ("group", "progress")}
    config["recipe_values"] = recipe.to_dict()
    config["threshold"] = threshold
    return config


def _folder_name(workload: str) -> str:
    """A run folder name from a `file.py:Class` workload without a name of its own."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", workload.rsplit("/", 1)[-1]).strip("-")
