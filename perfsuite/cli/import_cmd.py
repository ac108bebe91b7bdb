"""`perfsuite import`: DAWNBench entries and MLPerf training logs -> run records."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, print_json, status
from perfsuite.fmt import printable


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default="runs",
        metavar="DIR",
        help="where records go, one folder per run: DIR/<run_id>/run.json (default: runs/); "
        "run ids are derived from the file names; re-importing the same file replaces its "
        "record, and a different result with the same name gets a content-hash suffix",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="import what can be imported and list the files that failed (exit status 1) "
        "instead of stopping, with nothing written, at the first malformed file",
    )
    add_json_flag(p)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "import",
        help="import DAWNBench entries or MLPerf training logs as run records",
        description="Turn other benchmarks' published results into perfsuite run records, "
        "flagging whatever looks suspicious. See docs/importers.md.",
    )
    kinds = p.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True

    d = kinds.add_parser(
        "dawnbench",
        help="DAWNBench v1 entries (JSON + TSV)",
        description="Import DAWNBench v1 entries: a JSON file per entry and, for training "
        "entries, the TSV with the same name (epoch, hours, accuracy). Task and entry type "
        "come from the <CIFAR10|ImageNet|SQuAD>/<train|inference>/ folders holding the entry; "
        "where those say nothing or the accuracy fields contradict them, the fields decide. "
        "Time to accuracy = hours of the first row at or above the threshold (CIFAR10 top-1 "
        "94%, ImageNet top-5 93%, SQuAD F1 0.75). Inference entries need latency or cost.",
    )
    d.add_argument("paths", nargs="+", metavar="PATH", help="entry JSON files or folders")
    _common(d)
    d.set_defaults(func=run_dawnbench)

    m = kinds.add_parser(
        "mlperf",
        help="MLPerf training result logs (:::MLLOG lines)",
        description="Import MLPerf training logs. Time to train = run_stop - run_start "
        "(includes evaluation). Converged = run_stop status success and an eval_accuracy at "
        "the benchmark's target (MLPerf Training v4.0 targets) before run_stop. Each folder "
        "of result_*.txt gets the MLPerf score: the runs' minutes sorted, a failed run "
        "counting as the slowest, one dropped at each end (four for unet3d), the rest "
        "averaged. A perfsuite run folder's mllog.txt is read with the target of its run.json.",
    )
    m.add_argument("paths", nargs="+", metavar="PATH", help="log files or folders")
    m.add_argument(
        "--benchmark", metavar="B", help="benchmark name when the log lacks submission_benchmark"
    )
    m.add_argument(
        "--target",
        type=float,
        metavar="T",
        help="quality target replacing the built-in one (eval_accuracy >= T); refused for "
        "maskrcnn and stable_diffusion, judged on two conditions",
    )
    m.add_argument(
        "--lower-is-better",
        action="store_true",
        help="with --target: converged when eval_accuracy <= T (loss, WER, perplexity)",
    )
    _common(m)
    m.set_defaults(func=run_mlperf)


def _import(importer: Any, args: argparse.Namespace) -> Any:
    """The shared pipeline (perfsuite.importers.base) with a progress bar; one-line errors."""
    from tqdm import tqdm

    from perfsuite.importers import ImportFailure
    from perfsuite.importers.base import run_import
    from perfsuite.record import RecordError

    def bar(files: list[Path]) -> Any:
        return tqdm(files, desc=f"import {args.kind}", unit="file", disable=None, leave=False)

    try:
        result = run_import(importer, args.paths, args.out, args.keep_going, bar)
    except (ImportFailure, RecordError) as exc:
        raise CLIError(str(exc)) from None
    for note in result.notes:
        status(f"note: {note}")
    return result


def _report_failures(failed: list[dict[str, str]]) -> int:
    for f in failed:
        status(f"failed: {f['error']}")
    return 1 if failed else 0


def _flags_text(items: list[Any], skip: tuple[str, ...] = ()) -> list[str]:
    lines = []
    for it in items:
        for flag in it.summary["flags"]:
            if flag not in skip:
                lines.append(f"  {it.summary['run_id']}: {flag}")
    return ["flags:", *lines] if lines else []


def _seconds(x: float | None) -> str:
    from perfsuite.fmt import duration

    return "-" if x is None else duration(float(round(x)))


def run_dawnbench(args: argparse.Namespace) -> int:
    from perfsuite.fmt import pct, si, table
    from perfsuite.importers import dawnbench

    result = _import(dawnbench.DawnBenchImporter(), args)
    items, failed = result.items, result.failed
    if args.json:
        print_json(
            {"imported": [it.summary for it in items], "failed": failed, "notes": result.notes}
        )
        return 1 if failed else 0
    rows = []
    for it in items:
        s = it.summary
        if s["entry_type"] == "training":
            tta = s["time_to_accuracy_s"]
            figure = "not reached" if tta is None else f"TTA {_seconds(tta)}"
            extra = "-" if s["cost_usd"] is None else f"{s['cost_usd']:.2f} USD"
        else:
            figure = f"latency {si(s['latency_s'], 's')}"
            extra = "-" if s["cost_per_item_usd"] is None else si(s["cost_per_item_usd"], "USD")
        acc = s.get("final", s.get("accuracy"))
        rows.append([s["run_id"], s["status"], figure, f"{s['metric']} {pct(acc, 2)}", extra])
    print(table(rows, ["run", "status", "time to accuracy / latency", "final", "cost"]))
    for line in _flags_text(items):
        print(printable(line))
    status(f"{result.written} record(s) written under {args.out}/")
    return _report_failures(failed)


def run_mlperf(args: argparse.Namespace) -> int:
    from perfsuite.fmt import table
    from perfsuite.importers import mlperf

    if args.lower_is_better and args.target is None:
        raise CLIError("--lower-is-better needs --target")
    importer = mlperf.MLPerfImporter(args.benchmark, args.target, not args.lower_is_better)
    result = _import(importer, args)
    items, failed, scores = result.items, result.failed, result.extra["scores"]
    if args.json:
        print_json(
            {
                "imported": [it.summary for it in items],
                "scores": scores,
                "failed": failed,
                "notes": result.notes,
            }
        )
        return 1 if failed else 0
    rows = []
    for it in items:
        s = it.summary
        final = "-" if s["final"] is None else f"{s['final']:.4g}"
        rows.append(
            [
                s["run_id"],
                s["status"],
                s["run_stop_status"] or "-",
                _seconds(s["time_to_train_s"]),
                f"{s['metric']} {final} (target {s['target']:g})",
            ]
        )
    print(table(rows, ["run", "status", "run_stop", "time to train", "final"]))
    if scores:
        srows = []
        for sc in scores:
            score = "-" if sc["score_min"] is None else f"{sc['score_min']:.2f} min"
            note = sc["reason"] or "; ".join(sc["flags"]) or ""
            srows.append(
                [
                    sc["folder"],
                    sc["benchmark"] or "-",
                    f"{sc['converged']}/{sc['runs']}",
                    sc["required_runs"] or "-",
                    score,
                    note,
                ]
            )
        print()
        print(table(srows, ["folder", "benchmark", "converged", "required", "score", "note"]))
    for line in _flags_text(items, skip=(mlperf.TIMING_FLAG,)):
        print(printable(line))
    status(
        f"{result.written} record(s) written under {args.out}/ (MLPerf times include evaluation)"
    )
    return _report_failures(failed)
