"""`perfsuite validate RUN...`: check records against the schema (one line per problem)."""

from __future__ import annotations

import argparse

from perfsuite.cli.common import CLIError, add_json_flag, print_json
from perfsuite.fmt import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check run records against the run-record schema",
        description="Load every run.json under the given files/folders and report problems; "
        "check that its claims follow from its evaluations (time to accuracy, status, by "
        "perfsuite/record/tta.py) and its figures are within physical bounds (an error naming the "
        "field and both values); warn about sidecars (trace, telemetry, log) that are "
        "missing, truncated or disagree.",
    )
    p.add_argument("paths", nargs="+", metavar="RUN_OR_DIR")
    add_json_flag(p)
    p.set_defaults(func=_validate)


def _validate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from perfsuite.cli.common import status
    from perfsuite.record import RecordError, load_record
    from perfsuite.record.consistency import problems
    from perfsuite.record.io import clean_stale_staging, find_records
    from perfsuite.record.mllog_check import mllog_problems
    from perfsuite.record.sidecar_check import sidecar_problems

    results = []
    for arg in args.paths:  # hidden staging folders of runs killed before their folder appeared
        for gone in clean_stale_staging(arg) if Path(arg).is_dir() else []:
            status(f"removed {gone}: the staging folder of a run killed before its first record")
    for arg in args.paths:  # every bad file and path is reported, not just the first
        try:
            paths = list(find_records([arg]))
        except RecordError as exc:
            results.append({"path": arg, "ok": False, "error": str(exc)})
            continue
        for path in paths:
            try:
                rec = load_record(path)
                found = problems(rec)
                if found:  # claims that do not follow from the evidence, figures out of bounds
                    results.append(
                        {
                            "path": str(path),
                            "ok": False,
                            "error": f"{path}: {found[0]}",
                            "problems": [f"{path}: {p}" for p in found],
                        }
                    )
                    continue
                results.append(
                    {
                        "path": str(path),
                        "ok": True,
                        "status": rec["status"],
                        # the sidecar log read back, and every sidecar read to its end
                        "warnings": mllog_problems(rec) + sidecar_problems(rec),
                    }
                )
            except RecordError as exc:
                results.append({"path": str(path), "ok": False, "error": str(exc)})
    if not results:
        raise CLIError(f"no run.json found under {' '.join(args.paths)}")
    if args.json:
        print_json(results)
    else:
        for r in results:
            if r["ok"]:
                print(printable(f"ok     {r['path']} ({r['status']})"))
            for e in r.get("problems") or ([r["error"]] if not r["ok"] else []):
                print(printable(f"error  {e}"))
            for w in r.get("warnings") or []:
                print(printable(f"  warning: {w}"))
    return 0 if all(r["ok"] for r in results) else 1
