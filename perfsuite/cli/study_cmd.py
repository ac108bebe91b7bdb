"""`perfsuite study lesion|factor|batch|run|show`: which optimizations matter end to end."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_deprecated,
    add_json_flag,
    html_pages,
    output_path,
    positive_int,
    print_json,
    status,
)
from perfsuite.cli.run_flags import add_study_run_flags
from perfsuite.study.spec import study_settings

EPILOG = """\
examples:
  perfsuite study lesion digits --opts channels_last,bf16,batch=256 --switch lr_rule=linear
  perfsuite study factor digits --opts channels_last,bf16 --repeats 3 --out runs/f1
  perfsuite study batch digits --sizes 32,64,128,256 --lr-rule linear --repeats 2
  perfsuite study scaling digits --nproc 1,2 --repeats 2   # data-parallel processes
  perfsuite study run study.toml            # a study file (docs/studies.md)
  perfsuite study run runs/f1               # resume: finished runs are not repeated
  perfsuite study show runs/f1 -o reports/f1.html
"""


def register(sub: Any) -> None:
    p = sub.add_parser(
        "study",
        help="lesion, factor, batch-size and scaling studies",
        description=(
            "Compose a workload's optimization switches into configurations, run each as "
            "ordinary run records in one study folder (resumable), and compare time-to-"
            "accuracy speed-up with throughput speed-up, marking configurations that did not "
            "converge (DNC). Lesion: the full recipe, then minus each option. Factor: the "
            "baseline, then each option added in order. Batch: one configuration per size. "
            "Scaling: one configuration per data-parallel process count."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="study_command", metavar="KIND")
    kinds.required = True
    for kind, text in (
        ("lesion", "full recipe, then the full recipe minus each option"),
        ("factor", "baseline, then each option added cumulatively in the given order"),
        ("batch", "one configuration per batch size, learning rate scaled by --lr-rule"),
        ("scaling", "one configuration per data-parallel process count (DDP via torchrun)"),
    ):
        k = kinds.add_parser(kind, help=text, description=text)
        _run_flags(k)
        if kind == "scaling":
            k.add_argument(
                "--nproc", required=True,
                help="process counts, e.g. 1,2,4; the per-process batch is --batch-size (or "
                "the recipe's), the global batch N times it",
            )  # fmt: skip
        if kind == "batch":
            k.add_argument("--sizes", required=True, help="batch sizes, e.g. 32,64,128")
        if kind in ("batch", "scaling"):
            k.add_argument(
                "--lr-rule", default="linear", choices=["linear", "sqrt", "none"],
                help="learning-rate scaling from the recipe's batch size to the (global) "
                "batch size (default linear)",
            )  # fmt: skip
        else:
            k.add_argument(
                "--opts", required=True,
                help="options, comma-separated: switches (bf16, channels_last, "
                "label_smoothing=X, ...; see run --list-switches) and batch=N",
            )  # fmt: skip
        _exec_flags(k)
        k.set_defaults(func=_from_args, kind=kind)
    r = kinds.add_parser("run", help="run a TOML study file, or resume a study folder")
    r.add_argument("source", help="study.toml, or a study folder (with study.json) to resume")
    r.add_argument("--out", help="study folder for a study file (default runs/studies/<id>)")
    _exec_flags(r)
    r.set_defaults(func=_from_source)
    s = kinds.add_parser("show", help="analyze a study folder (table, --json, -o FILE)")
    s.add_argument("folder", help="a study folder (with study.json)")
    s.add_argument("-o", "--output", metavar="FILE", help="also write the study report (HTML)")
    add_deprecated(s, "--html", "-o/--output", "output")
    add_json_flag(s)
    s.set_defaults(func=_show)


def _run_flags(k: argparse.ArgumentParser) -> None:
    """The workload, the options every run of the study shares (runner/options.py) and the
    study's repeats, output folder and robustness checks."""
    add_study_run_flags(k)
    k.add_argument(
        "--repeats", type=positive_int, default=1, help="runs per configuration (seeds differ)"
    )
    k.add_argument("--out", help="study folder (default runs/studies/<id>); reused to resume")
    k.add_argument(
        "--corruptions",
        action="store_true",
        help="evaluate each run's threshold model on the common corruptions after it finishes "
        "(perfsuite eval shift --corruptions), so the table shows what an option costs in "
        "robustness",
    )
    k.add_argument(
        "--corruption-limit",
        type=int,
        metavar="N",
        help="with --corruptions: corrupt only the first N test images (CPU time; recorded)",
    )


def _exec_flags(k: argparse.ArgumentParser) -> None:
    k.add_argument(
        "--parallel",
        default="1",
        help="local runs at a time, cores split between them (default 1: timings "
        "undisturbed); auto: one run per GPU with --device cuda and several GPUs",
    )
    k.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="where runs go: this machine, or a Ray cluster (pip install 'perfsuite[ray]')",
    )
    k.add_argument("--ray-address", help="Ray cluster address (default: start a local one)")
    k.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray: CPUs declared per run")
    k.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray: GPUs declared per run")
    k.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_json_flag(k)


def spec_dict(args: argparse.Namespace) -> dict[str, Any]:
    """The command line as a study dict (the same fields as a TOML study file)."""
    from perfsuite.workloads.user import absolute_spec

    run = {flag.study: getattr(args, f.name) for f, flag in study_settings()}
    raw: dict[str, Any] = {
        "kind": args.kind,
        "workload": absolute_spec(args.workload),  # resumable from any directory
        "switches": [p for s in args.switches for p in s.split(",") if p.strip()],
        "repeats": args.repeats,
        "threshold": args.threshold,
        "seed": args.seed,
        "run": run,
    }
    if args.corruptions or args.corruption_limit is not None:
        if not args.corruptions:
            raise CLIError("--corruption-limit needs --corruptions")
        raw["eval"] = {"corruptions": True, "limit": args.corruption_limit}
    if args.kind == "batch":
        raw["sizes"], raw["lr_rule"] = args.sizes, args.lr_rule
    elif args.kind == "scaling":
        raw["nprocs"], raw["lr_rule"] = args.nproc, args.lr_rule
    else:
        raw["options"] = args.opts
    return raw


def _executor(args: argparse.Namespace, device: str) -> Any:
    if args.executor == "ray":
        from perfsuite.runner.launch.ray_executor import RayExecutor

        return RayExecutor(args.ray_address, args.cpus_per_run, args.gpus_per_run)
    from perfsuite.runner.launch.executor import LocalExecutor, local_devices

    if args.parallel == "auto":
        devices = local_devices(device)
        return LocalExecutor(max(1, len(devices)), devices)
    parallel = int(args.parallel) if args.parallel.isdigit() else 0
    if parallel < 1:
        raise CLIError(f"--parallel {args.parallel}: expected an integer >= 1 or auto")
    return LocalExecutor(parallel)


def _execute(spec: Any, out: str | None, args: argparse.Namespace) -> int:
    from perfsuite.runner.routes.run import Terminated
    from perfsuite.study.execute import open_study, run_study
    from perfsuite.study.spec import StudyError

    if spec.kind == "scaling" and args.parallel != "1":
        raise CLIError("a scaling study runs one run at a time (its runs use every core)")
    executor = _executor(args, spec.run.device)
    try:
        study = open_study(spec, out)
        results = run_study(
            study,
            executor,
            progress=None if args.quiet else status,
            show_run_progress=not args.quiet and args.parallel == "1",
        )
    except StudyError as exc:
        raise CLIError(str(exc)) from None
    except Terminated as exc:
        raise CLIError(
            f"study stopped ({exc}); finished runs are kept: perfsuite study run {study.path}"
        ) from None
    failed = [r for r in results if not r.ok]
    for r in failed:
        status(f"[study] {r.job.key} ({r.job.label}) failed: {r.error}")
    _print(study.path, args.json)
    return 1 if failed else 0


def _from_args(args: argparse.Namespace) -> int:
    from perfsuite.study.spec import StudyError, spec_from_dict

    try:
        spec = spec_from_dict(spec_dict(args), "command line")
    except StudyError as exc:
        raise CLIError(str(exc)) from None
    return _execute(spec, args.out, args)


def _from_source(args: argparse.Namespace) -> int:
    from perfsuite.study.folder import load_study
    from perfsuite.study.spec import StudyError, load_study_file
    from perfsuite.workloads.user import absolute_spec

    source = Path(args.source)
    try:
        if source.is_dir():
            if args.out and Path(args.out) != source:
                raise CLIError("--out does not apply when resuming a study folder")
            return _execute(load_study(source).spec, str(source), args)
        spec = load_study_file(source)  # its FILE.py workload: from the current directory
        spec = dataclasses.replace(spec, workload=absolute_spec(spec.workload))
        return _execute(spec, args.out, args)
    except StudyError as exc:
        raise CLIError(str(exc)) from None


def analysis(folder: str | Path) -> tuple[Any, dict[str, list[dict]]]:
    """(StudyResult, records by configuration) of a study folder."""
    from perfsuite.study.folder import analyze_folder
    from perfsuite.study.spec import StudyError

    try:
        return analyze_folder(folder)
    except StudyError as exc:
        raise CLIError(str(exc)) from None


def _print(folder: Path, as_json: bool) -> None:
    from perfsuite.study.render import render

    result, _ = analysis(folder)
    if as_json:
        print_json({"study": result, "folder": str(folder)})
    else:
        print(render(result))
        print(f"study folder: {folder}")


def _show(args: argparse.Namespace) -> int:
    if args.output:  # never onto a record, a sidecar or the study file
        from perfsuite.record import load_records

        folder = Path(args.folder)
        records = load_records([folder]) if folder.is_dir() else []
        output_path(args.output, records, [str(folder / "study.json"), args.folder])
        pages = html_pages(args)  # refused, like the path, before anything is printed
    _print(Path(args.folder), args.json)
    if args.output:
        from perfsuite.record.io import write_text_atomic

        result, records = analysis(args.folder)
        out = write_text_atomic(args.output, pages.study(result, records))
        status(f"report: {out}")
    return 0
