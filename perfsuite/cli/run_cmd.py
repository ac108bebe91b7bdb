"""`perfsuite run WORKLOAD`: train to a target accuracy under instrumentation."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfsuite.cli.common import (
    CLIError,
    add_deprecated,
    fraction,
    instance_type,
    metric_value,
    nonnegative_float,
    positive_int,
    status,
)

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
    p.add_argument(
        "workload",
        help="workload name (digits, cifar10, imagenet, squad) or your own: FILE.py:CLASS or "
        "package.module:CLASS",
    )
    p.add_argument(
        "--data-dir",
        help="dataset folder (cifar10: pickle or image-folder layout; squad: train-v1.1.json "
        "and dev-v1.1.json)",
    )
    p.add_argument("--download", action="store_true", help="download the dataset if absent")
    p.add_argument("--out", default="runs", help="parent folder for run folders (default: runs)")
    p.add_argument(
        "--threshold",
        help="target metric as a fraction, e.g. 0.94, or in percent: 94%%; for a "
        "lower-is-better metric (a loss: gpt's val_loss) its value, e.g. 1.47",
    )
    p.add_argument(
        "--epochs", type=positive_int, help="upper bound on epochs (also the schedule length)"
    )
    p.add_argument("--batch-size", type=positive_int, help="training batch size")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument(
        "--framework",
        choices=("pytorch", "tensorflow"),
        default="pytorch",
        help="framework the workload is written in (default pytorch; tensorflow: digits and "
        "cifar10, needs pip install perfsuite[tensorflow]; docs/tensorflow.md)",
    )
    p.add_argument("--recipe", help="named recipe preset of the workload (e.g. dawnbench, cpu)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe field, e.g. --set lr=0.2 --set width=0.25 (repeatable)",
    )
    p.add_argument(
        "--switch",
        dest="switches",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="optimization switch, comma-separated or repeated: bf16, fp16, tf32=on|off, "
        "channels_last, compile[=MODE], lr_rule=linear|sqrt|none, label_smoothing=X, "
        "tta=on|off, data=device|workers, layout=nhwc|nchw (tensorflow) (see --list-switches)",
    )
    p.add_argument(
        "--list-switches",
        action="store_true",
        help="print the switches WORKLOAD supports and exit",
    )
    p.add_argument(
        "--synthetic",
        action="store_true",
        help="random inputs of the workload's shape instead of its data (throughput only)",
    )
    p.add_argument(
        "--eval-from",
        type=positive_int,
        default=1,
        metavar="EPOCH",
        help="evaluate from this epoch on (default 1); skipping early evaluations saves wall "
        "time and can only make the time to accuracy later, never earlier",
    )
    p.add_argument(
        "--all-epochs",
        dest="all_epochs",
        action="store_true",
        help="train all epochs instead of stopping at the first evaluation >= threshold",
    )
    add_deprecated(p, "--keep-going", "--all-epochs", "all_epochs", flag=True)
    p.add_argument(
        "--no-capture",
        dest="capture",
        action="store_false",
        help="turn instrumentation off (no FLOP count, profiler, telemetry, ceilings)",
    )
    p.add_argument(
        "--no-peaks",
        dest="measure_peaks",
        action="store_false",
        help="do not micro-benchmark device peaks when none are cached",
    )
    p.add_argument(
        "--profile-steps",
        type=int,
        default=3,
        help="at least this many training steps in the timeline window (0: no window; default 3)",
    )
    p.add_argument(
        "--profile-seconds",
        type=nonnegative_float,
        default=1.0,
        metavar="S",
        help="raise the window's step count until it covers S seconds of the measured step "
        "time, so per-op times of short steps are reproducible (0: exactly --profile-steps; "
        "default 1.0)",
    )
    p.add_argument(
        "--counters",
        choices=["ncu", "cupti"],
        help="after training, collect GPU hardware counters for the profiled window: ncu "
        "(Nsight Compute on a replay child) or cupti (torch.profiler range profiler, falls "
        "back to ncu where the PyTorch build lacks it); NVIDIA only",
    )
    p.add_argument(
        "--inference-limit",
        type=positive_int,
        metavar="N",
        help="after training, time batch-1 inference on only the first N evaluation examples "
        "(recorded as partial, never the DAWNBench figure; default: the whole set)",
    )
    p.add_argument("--threads", type=positive_int, help="torch intra-op threads")
    p.add_argument(
        "--instance-type", type=instance_type, help="cloud instance type, for cost analysis"
    )
    p.add_argument(
        "--price",
        dest="price_per_hour",
        type=nonnegative_float,
        help="USD per hour of this machine, for cost analysis",
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
    p.add_argument(
        "--nproc",
        type=int,
        default=1,
        help="data-parallel training in N processes (DistributedDataParallel through "
        "torchrun; gloo on CPU, NCCL on GPUs); per-rank batch = --batch-size, global = N x it; "
        "see docs/studies.md (default 1: one process, no torchrun)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    # Internal: a counters collector's child replays N steps of the window, writes no record.
    p.add_argument("--replay-window", type=int, default=0, help=argparse.SUPPRESS)
    p.set_defaults(func=_run)


def _options(args: argparse.Namespace, seed: int, group: dict | None):
    from perfsuite.runner import RunOptions

    return RunOptions(
        workload=args.workload,  # RunOptions makes a FILE.py part absolute
        framework=args.framework,
        data_dir=args.data_dir,
        out=args.out,
        threshold=args.threshold,
        epochs=args.epochs,
        batch_size=args.batch_size,
        seed=seed,
        device=args.device,
        keep_going=args.all_epochs,
        capture=args.capture,
        recipe=args.recipe,
        overrides=list(args.overrides),
        switches=list(args.switches),
        synthetic=args.synthetic,
        replay_steps=args.replay_window,
        eval_from=args.eval_from,
        threads=args.threads,
        counters=args.counters,
        instance_type=args.instance_type,
        price_per_hour=args.price_per_hour,
        group=group,
        download=args.download,
        profile_steps=args.profile_steps,
        profile_seconds=args.profile_seconds,
        measure_peaks=args.measure_peaks,
        inference_limit=args.inference_limit,
        progress=not args.quiet,
        nproc=args.nproc,
    )


def _one(args: argparse.Namespace, seed: int) -> Path | None:
    from perfsuite.runner.executor import run_in_process
    from perfsuite.runner.loop import Terminated

    try:
        run_dir, error, fatal = run_in_process(_options(args, seed, None))
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
    from perfsuite.runner.executor import outcome

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
    if args.replay_window:
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
    from perfsuite.runner.executor import Job, JobResult, LocalExecutor

    gid = new_run_id(f"{args.workload}-group")
    n = args.repeats
    jobs = [
        Job(
            _options(args, args.seed + i, {"id": gid, "index": i, "size": n}),
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

    from perfsuite.runner.loop import Terminated

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
