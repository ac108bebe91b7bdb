"""`perfsuite run WORKLOAD`: train to a target accuracy under instrumentation."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfsuite.cli.common import CLIError, fraction, metric_value, positive_int, status
from perfsuite.cli.run_flags import add_run_flags, options_from_args

EPILOG = """\
examples:
  perfsuite run digits                                  # embedded data, target 98% top-1
  perfsuite run cifar10 --data-dir ~/data/cifar10 --threshold 0.80   # or 80%
  perfsuite run digits --repeats 5 --out runs/digits-x5  # distinct seeds, one group
  perfsuite run cifar10 --data-dir D --recipe dawnbench --device cuda
  perfsuite run cifar10 --synthetic --switch bf16,channels_last --epochs 1
  perfsuite run my_model.py:MyWorkload --epochs 3         # your own Workload subclass
  perfsuite run cifar10 --list-switches
  perfsuite run digits --nproc 2                       # data-parallel (DDP) in 2 processes
  perfsuite run digits --framework tensorflow           # the TensorFlow version
  perfsuite run squad --data-dir D --recipe smoke       # only dev-v1.1.json: a SMOKE TEST
  perfsuite run imagenet --synthetic --device cuda --switch bf16,channels_last,compile

Prints the run folder(s) on stdout; progress goes to stderr.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="train a workload to a target accuracy under instrumentation",
        description=(
            "Train WORKLOAD until the first evaluation at or above --threshold (or --epochs), "
            "capturing time-to-accuracy, FLOPs per step, a sampled op timeline, telemetry and "
            "device ceilings into runs/<run-id>/run.json."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_flags(p)
    p.add_argument(
        "--list-switches",
        action="store_true",
        help="print the switches WORKLOAD supports and exit",
    )
    p.add_argument(
        "--repeats",
        type=positive_int,
        default=1,
        help="independent runs with seeds seed, seed+1, ... grouped together",
    )
    p.add_argument(
        "--parallel",
        type=positive_int,
        default=1,
        help="with --repeats: runs at a time, each with cores/parallel threads",
    )
    p.set_defaults(func=_run)


def _one(args: argparse.Namespace, seed: int) -> Path | None:
    from perfsuite.runner.launch.executor import run_in_process
    from perfsuite.runner.routes.run import Terminated

    try:
        run_dir, error, fatal = run_in_process(options_from_args(args, seed=seed))
    except Terminated as exc:
        where = getattr(exc, "perfsuite_run_dir", "the run folder")
        raise CLIError(f"run interrupted ({exc}); record: {where}") from None
    if fatal:
        raise CLIError(error)
    if error:
        raise CLIError(f"{error}; record: {run_dir or 'the run folder'}")
    if run_dir is None:  # a replay child: no record
        return None
    status(outcome_line(run_dir))
    return run_dir


def outcome_line(run_dir: Path) -> str:
    """`[perfsuite] RUN-ID: reached top-1 >= 98% in 3.10 s (epoch 7)`, or its status."""
    from perfsuite.runner.launch.executor import outcome

    return f"[perfsuite] {run_dir.name}: {outcome(run_dir)}"


def _threshold(text: str, direction: str) -> float:
    """--threshold: a fraction for a higher-is-better metric (a bare 98 is refused, not read
    as 98%); any finite value >= 0 for a lower-is-better one (a loss)."""
    import math

    try:
        if direction != "lower":
            return fraction(text)
        value = metric_value(text)
    except argparse.ArgumentTypeError as exc:
        raise CLIError(f"argument --threshold: {exc}") from None
    if not math.isfinite(value) or value < 0:
        raise CLIError(f"argument --threshold: {text!r} is not a finite number >= 0")
    return value


def _run(args: argparse.Namespace) -> int:
    from perfsuite.workloads import get_workload

    try:
        wl = get_workload(args.workload, args.framework)
    except KeyError as exc:
        raise CLIError(str(exc).strip('"')) from None
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.threshold is not None:  # its range depends on the workload's metric
        args.threshold = _threshold(args.threshold, getattr(wl, "direction", "higher"))
    if args.list_switches:
        from perfsuite.workloads.switches import describe

        print(f"switches of {args.workload}:\n{describe(wl.switches)}")
        return 0
    if args.replay_steps:
        _one(args, args.seed)
        return 0
    if wl.needs_data_dir and not args.data_dir and not args.synthetic:
        raise CLIError(f"{args.workload} needs --data-dir DIR (and --download to fetch it)")
    if args.profile_steps < 0:
        raise CLIError("--profile-steps must be >= 0 (0: no profile window)")
    if args.counters and not args.device.startswith("cuda"):
        raise CLIError(f"--counters {args.counters} needs an NVIDIA GPU (--device cuda)")
    if args.counters and not args.capture:
        # counters replay the profiled window after training: no capture, no window
        raise CLIError(f"--counters {args.counters} needs capture: drop --no-capture")
    if args.counters and args.framework != "pytorch":
        raise CLIError(
            f"--counters: PyTorch runs only (the replay re-runs the PyTorch workload), not "
            f"{args.framework}; run ncu yourself and attach its CSV with `perfsuite counters "
            "FILE --into RUN --steps N`"
        )
    if args.repeats < 1 or args.parallel < 1 or args.nproc < 1:
        raise CLIError("--repeats, --parallel and --nproc must be >= 1")
    if args.nproc > 1 and args.parallel > 1:
        raise CLIError("--nproc N already uses the machine's cores: --parallel must be 1")
    if args.nproc > 1 and args.framework != "pytorch":
        raise CLIError(f"--nproc: data-parallel runs are PyTorch only, not {args.framework}")
    if args.repeats == 1:
        print(_one(args, args.seed))
        return 0
    return _repeats(args)


def _repeats(args: argparse.Namespace) -> int:
    """Repeats with seeds seed, seed+1, ... as one group, through the local executor."""
    from perfsuite.record import new_run_id
    from perfsuite.runner.launch.executor import Job, JobResult, LocalExecutor

    gid = new_run_id(f"{args.workload}-group")
    n = args.repeats
    jobs = [
        Job(
            options_from_args(args, seed=args.seed + i, group={"id": gid, "index": i, "size": n}),
            key=args.workload,
            label=f"repeat {i + 1}/{n} (seed {args.seed + i})",
        )
        for i in range(n)
    ]

    def done(res: JobResult) -> None:
        if res.ok and res.run_dir is not None:
            status(outcome_line(res.run_dir))
            print(res.run_dir, flush=True)
        elif not res.fatal:
            status(f"[perfsuite] {res.job.label} failed: {res.error}")

    from perfsuite.runner.routes.run import Terminated

    try:
        results = LocalExecutor(args.parallel).run(
            jobs, on_start=lambda job: status(f"[perfsuite] {job.label}"), on_result=done
        )
    except Terminated as exc:
        raise CLIError(f"repeats stopped ({exc}); finished runs are kept") from None
    fatal = [r for r in results if r.fatal]
    if fatal:
        raise CLIError(str(fatal[0].error))
    return 1 if any(not r.ok for r in results) else 0
