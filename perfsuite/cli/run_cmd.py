"""`perfsuite run WORKLOAD`: train to a target accuracy under instrumentation."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from perfsuite.cli.common import CLIError, status

EPILOG = """\
examples:
  perfsuite run digits                                  # embedded data, target 98%% top-1
  perfsuite run cifar10 --data-dir ~/data/cifar10 --threshold 0.80
  perfsuite run digits --repeats 5 --out runs/digits-x5  # distinct seeds, one group
  perfsuite run cifar10 --data-dir D --recipe dawnbench --device cuda
  perfsuite run cifar10 --synthetic --switch bf16,channels_last --epochs 1
  perfsuite run my_model.py:MyWorkload --epochs 3         # your own Workload subclass
  perfsuite run cifar10 --list-switches

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
        help="workload name (digits, cifar10) or your own: FILE.py:CLASS or package.module:CLASS",
    )
    p.add_argument("--data-dir", help="dataset folder (cifar10: pickle or image-folder layout)")
    p.add_argument("--download", action="store_true", help="download the dataset if absent")
    p.add_argument("--out", default="runs", help="parent folder for run folders (default: runs)")
    p.add_argument("--threshold", type=float, help="target metric as a fraction, e.g. 0.94")
    p.add_argument("--epochs", type=int, help="upper bound on epochs (also the schedule length)")
    p.add_argument("--batch-size", type=int, help="training batch size")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
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
        "tta=on|off, data=device|workers (see --list-switches)",
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
        type=int,
        default=1,
        metavar="EPOCH",
        help="evaluate from this epoch on (default 1); skipping early evaluations saves wall "
        "time and can only make the time to accuracy later, never earlier",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="train all epochs instead of stopping at the first evaluation >= threshold",
    )
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
        type=float,
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
    p.add_argument("--threads", type=int, help="torch intra-op threads")
    p.add_argument("--instance-type", help="cloud instance type, for cost analysis")
    p.add_argument(
        "--price",
        dest="price_per_hour",
        type=float,
        help="USD per hour of this machine, for cost analysis",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="independent runs with seeds seed, seed+1, ... grouped together",
    )
    p.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="with --repeats: runs at a time, each with cores/parallel threads",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    # Internal: set by a parent `--repeats --parallel` process for its children.
    p.add_argument("--group", help=argparse.SUPPRESS)
    # Internal: a counters collector's child replays N steps of the window, writes no record.
    p.add_argument("--replay-window", type=int, default=0, help=argparse.SUPPRESS)
    p.set_defaults(func=_run)


def _options(args: argparse.Namespace, seed: int, group: dict | None):
    from perfsuite.runner import RunOptions

    return RunOptions(
        workload=args.workload,
        data_dir=args.data_dir,
        out=args.out,
        threshold=args.threshold,
        epochs=args.epochs,
        batch_size=args.batch_size,
        seed=seed,
        device=args.device,
        keep_going=args.keep_going,
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
        progress=not args.quiet,
    )


def _one(args: argparse.Namespace, seed: int, group: dict | None) -> Path | None:
    from perfsuite.record import load_record
    from perfsuite.runner import run_workload
    from perfsuite.workloads.cifar_data import DataError

    try:
        run_dir = run_workload(_options(args, seed, group))
    except (ValueError, KeyError, DataError) as exc:
        raise CLIError(str(exc).strip("'\"")) from None
    except Exception as exc:  # the record is already written with status "crashed"
        first = (str(exc).splitlines() or [""])[0]
        where = getattr(exc, "perfsuite_run_dir", "the run folder")
        raise CLIError(f"run crashed ({type(exc).__name__}: {first}); record: {where}") from None
    if run_dir is None:  # a replay child: no record
        return None
    rec = load_record(run_dir)
    tta = rec["time_to_accuracy"]
    if tta["reached"]:
        what = f"reached {tta['metric']} >= {tta['threshold']} in {tta['time_s']:.2f} s"
        what += f" (epoch {tta['epoch']})"
    else:
        what = f"status {rec['status']}" + (f": {rec['error']}" if rec.get("error") else "")
    status(f"[perfsuite] {rec['run_id']}: {what}")
    return run_dir


def _run(args: argparse.Namespace) -> int:
    from perfsuite.workloads import get_workload

    try:
        wl = get_workload(args.workload)
    except KeyError as exc:
        raise CLIError(str(exc).strip('"')) from None
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.list_switches:
        from perfsuite.workloads.switches import describe

        print(f"switches of {args.workload}:\n{describe(wl.switches)}")
        return 0
    if args.replay_window:
        _one(args, args.seed, None)
        return 0
    if wl.needs_data_dir and not args.data_dir and not args.synthetic:
        raise CLIError(f"{args.workload} needs --data-dir DIR (and --download to fetch it)")
    if args.repeats < 1 or args.parallel < 1:
        raise CLIError("--repeats and --parallel must be >= 1")
    if args.group:
        gid, index, size = args.group.split(",")
        print(_one(args, args.seed, {"id": gid, "index": int(index), "size": int(size)}))
        return 0
    if args.repeats == 1:
        print(_one(args, args.seed, None))
        return 0
    from perfsuite.record import new_run_id

    gid = new_run_id(f"{args.workload}-group")
    if args.parallel == 1:
        for i in range(args.repeats):
            status(f"[perfsuite] repeat {i + 1}/{args.repeats} (seed {args.seed + i})")
            group = {"id": gid, "index": i, "size": args.repeats}
            print(_one(args, args.seed + i, group), flush=True)
        return 0
    return _parallel(args, gid)


def _parallel(args: argparse.Namespace, gid: str) -> int:
    """Child processes, each pinned to its own share of the cores."""
    from perfsuite.hostinfo import usable_cpus

    threads = args.threads or max(1, usable_cpus() // args.parallel)
    base = [a for a in sys.argv[1:] if a not in ("--quiet",)]
    failures = 0
    pending = list(range(args.repeats))
    running: list[tuple[int, subprocess.Popen]] = []
    while pending or running:
        while pending and len(running) < args.parallel:
            i = pending.pop(0)
            cmd = [sys.executable, "-m", "perfsuite", *_child_args(base, args, i, threads, gid)]
            running.append(
                (
                    i,
                    subprocess.Popen(
                        cmd,
                        stdout=subprocess.PIPE,
                        text=True,
                        env={**os.environ, "OMP_NUM_THREADS": str(threads)},
                    ),
                )
            )
        i, proc = running.pop(0)
        out, _ = proc.communicate()
        if proc.returncode:
            failures += 1
            status(f"[perfsuite] repeat {i + 1} failed (exit {proc.returncode})")
        if out.strip():
            print(out.strip().splitlines()[-1], flush=True)
    return 1 if failures else 0


def _child_args(
    base: list[str], args: argparse.Namespace, i: int, threads: int, gid: str
) -> list[str]:
    drop_next = {"--repeats", "--parallel", "--seed", "--threads"}
    out: list[str] = []
    skip = False
    for a in base:
        if skip:
            skip = False
            continue
        key = a.split("=", 1)[0]
        if key in drop_next:
            skip = "=" not in a
            continue
        out.append(a)
    return [
        *out,
        "--seed",
        str(args.seed + i),
        "--threads",
        str(threads),
        "--quiet",
        "--group",
        f"{gid},{i},{args.repeats}",
    ]
