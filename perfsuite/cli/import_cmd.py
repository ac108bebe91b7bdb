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
        description="Import MLPerf Training (and HPC) logs. Time to train = run_stop - "
        "run_start (includes evaluation). Converged = run_stop status success and an "
        "evaluation before the run_stop line at the target of the round's rules, read from "
        "the installed mlperf-logging package; the round, submitter and system come from the "
        "results layout (training_results_vX.Y/<submitter>/results/<system>/<benchmark>/), "
        "the hardware from <submitter>/systems/<system>.json. Each folder of result_*.txt "
        "gets MLCommons' score: the runs' minutes sorted, a failed or unreadable run counting "
        "as the slowest, one dropped at each end (four for unet3d), the rest averaged, times "
        "scaling.json. A perfsuite run folder's mllog.txt is read with the target of its "
        "run.json. See docs/importers.md.",
    )
    m.add_argument("paths", nargs="+", metavar="PATH", help="log files or folders")
    m.add_argument(
        "--benchmark", metavar="B", help="benchmark name when the log lacks submission_benchmark"
    )
    m.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="BENCH=T",
        help="quality target of one benchmark replacing its rules' one (evaluation >= T); "
        "repeat for several benchmarks; needed without mlperf-logging installed; refused for "
        "maskrcnn and stable_diffusion, judged on two conditions",
    )
    m.add_argument(
        "--lower-is-better",
        action="store_true",
        help="with --target: converged when the evaluation <= T (loss, WER, perplexity), "
        "for every --target given",
    )
    m.add_argument(
        "--round",
        metavar="X.Y",
        help="score by the rules of this MLPerf round (e.g. 5.1) instead of the round named "
        "by a *_results_vX.Y folder above the logs",
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


def _targets(given: list[str], benchmark: str | None) -> dict[str, float]:
    """`--target BENCH=T` values by benchmark; a bare T is the `--benchmark`'s."""
    out: dict[str, float] = {}
    for text in given:
        name, sep, value = text.rpartition("=")
        if not sep:
            if benchmark is None:
                raise CLIError(f"--target {text}: give it as BENCH=VALUE (one per benchmark)")
            name = benchmark
        try:
            number = float(value)
        except ValueError:
            raise CLIError(f"--target {text}: {value!r} is not a number") from None
        if not name or number != number or number in (float("inf"), float("-inf")):
            raise CLIError(f"--target {text}: expected BENCH=VALUE with a finite VALUE")
        if name in out and out[name] != number:
            raise CLIError(f"--target: two targets for {name} ({out[name]:g}, {number:g})")
        out[name] = number
    return out


def _round(text: str | None) -> str | None:
    """ "5.1" or "v5.1" or "5.1.0" -> "5.1.0"."""
    if text is None:
        return None
    parts = text.lstrip("vV").split(".")
    if not (2 <= len(parts) <= 3 and all(p.isdigit() for p in parts)):
        raise CLIError(f"--round {text}: expected a round like 5.1")
    return ".".join(str(int(p)) for p in [*parts, "0"][:3])


def run_mlperf(args: argparse.Namespace) -> int:
    from perfsuite.fmt import table
    from perfsuite.importers import mlperf

    if args.lower_is_better and not args.target:
        raise CLIError("--lower-is-better needs --target")
    options = mlperf.Options(
        benchmark=args.benchmark,
        targets=_targets(args.target, args.benchmark),
        higher_is_better=not args.lower_is_better,
        round=_round(args.round),
    )
    importer = mlperf.MLPerfImporter(options)
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
            acc = sc["accelerator_min"]
            srows.append(
                [
                    sc["folder"],
                    sc["benchmark"] or "-",
                    sc["round"] or "-",
                    f"{sc['converged']}/{sc['runs']}",
                    sc["required_runs"] or "-",
                    score,
                    "-" if acc is None else f"{acc:.0f} ({sc['accelerators']})",
                    note,
                ]
            )
        print()
        head = ["folder", "benchmark", "round", "converged", "required", "score"]
        print(table(srows, [*head, "accelerator-min (count)", "note"]))
    for line in _flags_text(items, skip=(mlperf.TIMING_FLAG,)):
        print(printable(line))
    status(
        f"{result.written} record(s) written under {args.out}/ (MLPerf times include evaluation)"
    )
    return _report_failures(failed)
