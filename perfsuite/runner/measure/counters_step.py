"""Hardware counters for a finished run, collected after training so the timed run is never
slowed, and never able to lose the run: every failure becomes a flag with its reason.

`ncu` profiles a child process that replays the same workload, recipe, switches and seed
(`perfsuite run ... --replay-window N`) with the window inside one process-wide NVTX start/end
range. `cupti` uses torch.profiler's range profiler where the installed PyTorch has one; where
it does not, the collector chooser says so and falls back to ncu if present.
"""

from __future__ import annotations

from typing import Any

from perfsuite.counters import counters_from_trace, profiler_experimental_config
from perfsuite.counters.collect import choose_collector, collect_ncu
from perfsuite.runner.engine import capture
from perfsuite.runner.engine.profile_window import ProfileWindow

COUNTER_TRACE = "counters-trace.json.gz"


def replay_argv(opts: Any, steps: int) -> list[str]:
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


def collect_counters(run: Any) -> None:
    """Fill `run.record["counters"]` (or leave it empty with a flag saying why)."""
    rec, opts = run.record, run.opts
    kind, why = choose_collector(opts.counters, run.backend.device.is_gpu)
    if kind != opts.counters:  # none, or a fallback: say why where every reader looks
        run.rec.flag(f"counters: {why}")
    if kind is None:
        rec["counters"] = None
        return
    steps = max(1, opts.profile_steps)
    if kind == "ncu":
        section, reason = collect_ncu(replay_argv(opts, steps), run.run_dir)
        rec["counters"] = section
        if section is None:
            run.rec.flag(f"counters: ncu collected nothing: {reason}")
        else:
            section["collector_note"] = why
            rec["sidecars"]["counters_ncu"] = section.get("file", "counters-ncu.csv")
        return
    try:
        rec["counters"] = _cupti_window(run, steps)
        rec["sidecars"]["counters_trace"] = COUNTER_TRACE
    except Exception as exc:  # a counters failure never loses the run
        rec["counters"] = None
        run.rec.flag(f"counters: CUPTI collection failed: {type(exc).__name__}: {exc}")


def _cupti_window(run: Any, steps: int) -> dict[str, Any]:
    window = ProfileWindow(
        run.run_dir,
        run.backend,
        wait=1,
        warmup=1,
        active=steps,
        experimental_config=profiler_experimental_config(),
        trace_name=COUNTER_TRACE,
    )
    capture.profile_window(run.workload, run.state, run._batches(20_011), window)
    return counters_from_trace(run.run_dir / COUNTER_TRACE, window_steps=steps)
