"""Hardware counters for a finished run, collected after training so the timed run is never
slowed, and never able to lose the run: every failure becomes a flag with its reason.

`ncu` profiles a child process that replays the same workload, recipe, switches and seed
(`perfsuite run ... --replay-window N`) with the window inside one process-wide NVTX start/end
range. `cupti` uses torch.profiler's range profiler where the installed PyTorch has one; where
it does not, the collector chooser says so and falls back to ncu if present.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfsuite.counters import counters_from_trace, profiler_experimental_config
from perfsuite.counters.collect import choose_collector, collect_ncu
from perfsuite.runner.engine import capture
from perfsuite.runner.engine.profile_window import ProfileWindow
from perfsuite.runner.options import RunOptions
from perfsuite.runner.record.recorder import Recorder
from perfsuite.runner.routes.prepare import Prepared

COUNTER_TRACE = "counters-trace.json.gz"


def replay_argv(opts: RunOptions, steps: int) -> list[str]:
    """The `perfsuite` arguments that replay this run's window in a child process."""
    argv = ["run", opts.workload, "--device", opts.device, "--seed", str(opts.seed)]
    for flag, value in (
        ("--data-dir", opts.data_dir),
        ("--recipe", opts.recipe),
        ("--epochs", opts.epochs),
        ("--batch-size", opts.batch_size),
        ("--threads", opts.threads),
    ):
        if value is not None:
            argv += [flag, str(value)]
    for item in opts.overrides:
        argv += ["--set", item]
    for item in opts.switches:
        argv += ["--switch", item]
    if opts.synthetic:
        argv.append("--synthetic")
    return [*argv, "--quiet", "--replay-window", str(steps)]


def collect_counters(prepared: Prepared, rec: Recorder) -> None:
    """Fill the record's `counters` (or leave it empty with a flag saying why), for the run
    `prepared` describes, after its training."""
    record, opts, run_dir = rec.record, prepared.plan.options, rec.run_dir
    kind, why = choose_collector(opts.counters, prepared.plan.backend.device.is_gpu)
    if kind != opts.counters:  # none, or a fallback: say why where every reader looks
        rec.flag(f"counters: {why}")
    if kind is None:
        record["counters"] = None
        return
    steps = max(1, opts.profile_steps)
    if kind == "ncu":
        section, reason = collect_ncu(replay_argv(opts, steps), run_dir)
        record["counters"] = section
        if section is None:
            rec.flag(f"counters: ncu collected nothing: {reason}")
        else:
            section["collector_note"] = why
            record["sidecars"]["counters_ncu"] = section.get("file", "counters-ncu.csv")
        return
    try:
        record["counters"] = _cupti_window(prepared, run_dir, steps)
        record["sidecars"]["counters_trace"] = COUNTER_TRACE
    except Exception as exc:  # a counters failure never loses the run
        record["counters"] = None
        rec.flag(f"counters: CUPTI collection failed: {type(exc).__name__}: {exc}")


def _cupti_window(prepared: Prepared, run_dir: Path, steps: int) -> dict[str, Any]:
    """CUPTI counters over `steps` replayed steps, on the window's batches (`seeds.window`)."""
    window = ProfileWindow(
        run_dir,
        prepared.plan.backend,
        wait=1,
        warmup=1,
        active=steps,
        experimental_config=profiler_experimental_config(),
        trace_name=COUNTER_TRACE,
    )
    batches = prepared.batches(prepared.plan.seeds.window)
    capture.profile_window(prepared.plan.workload, prepared.state, batches, window)
    return counters_from_trace(run_dir / COUNTER_TRACE, window_steps=steps)
