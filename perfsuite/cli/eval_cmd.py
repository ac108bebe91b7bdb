"""`perfsuite eval shift|probe RUN`: does the model that met the threshold generalize?
(`perfsuite eval squad DEV PRED`, the official SQuAD v1.1 scorer, is in eval_squad.py.)

Both evaluate the run's threshold checkpoint (never the last epoch's weights), print a table
(or --json) and store the result in the record's `generalization` section with provenance.
See docs/generalization.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, int64, print_json, resolve_run, status


def register(sub: Any) -> None:
    p = sub.add_parser(
        "eval",
        help="generalization of the threshold model (shift, probe); the SQuAD v1.1 scorer (squad)",
        description=(
            "Evaluate the model that first met the run's threshold (its checkpoint in the run "
            "folder) beyond its own test set; results go into the record's generalization "
            "section."
        ),
    )
    what = p.add_subparsers(dest="what", metavar="shift|probe|squad")
    what.required = True

    s = what.add_parser(
        "shift",
        help="accuracy on another test set with the same classes, and on common corruptions",
        description=(
            "Top-1 (and top-5 with more than 5 classes) of the threshold model on DIR (class "
            "folders, or DIR/test or DIR/val), the drop against the run's own test set "
            "(re-measured) with a bootstrap 95% interval; --corruptions: the CIFAR-10-C "
            "style corruption families at 5 severities, generated from the own test set."
        ),
    )
    _common(s)
    s.add_argument("--data-dir", metavar="DIR", help="the shifted test set (image folders)")
    s.add_argument("--corruptions", action="store_true", help="evaluate the common corruptions too")
    s.add_argument("--families", help="comma-separated corruption families (default: all)")
    s.add_argument(
        "--limit",
        type=int64,
        metavar="N",
        help="corrupt only the first N own test images (CPU time; recorded)",
    )
    s.set_defaults(func=run_shift)

    q = what.add_parser(
        "probe",
        help="linear probe on the frozen network's penultimate features",
        description=(
            "Fit a closed-form ridge classifier on the threshold model's penultimate features "
            "of DIR/train and report its top-1 on DIR/test; --reference RUN2 probes that run's "
            "threshold model too and reports the paired difference."
        ),
    )
    _common(q)
    q.add_argument("--data-dir", metavar="DIR", required=True, help="probe set: train/, test/")
    q.add_argument("--reference", metavar="RUN2", help="another run to compare probes with")
    q.add_argument("--ridge", type=float, default=None, help="ridge penalty lambda (default 0.01)")
    q.set_defaults(func=run_probe)

    from perfsuite.cli.eval_squad import register_squad

    register_squad(what)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", metavar="RUN", help="run folder or run.json")
    p.add_argument(
        "--own-data-dir",
        metavar="DIR",
        help="where the run's own dataset is now (default: the run's --data-dir)",
    )
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument("--seed", type=int64, default=0, help="corruption and bootstrap seed")
    p.add_argument("--no-store", action="store_true", help="do not write into the record")
    add_json_flag(p)


def _load(path: str, device: str) -> Any:
    from perfsuite.generalization.threshold_model import rebuild
    from perfsuite.record import load_record

    record = load_record(resolve_run(path))
    framework = (record.get("config") or {}).get("framework") or "pytorch"
    if framework != "pytorch":
        raise CLIError(
            f"{record['_path']}: eval shift/probe read PyTorch threshold models only (the "
            f"corruptions, shifted sets and probe features feed torch tensors); this is a "
            f"{framework} run: perfsuite infer measures its threshold model"
        )
    return rebuild(record, device)


def _errors(fn: Any) -> Any:
    """Data and workload problems as one-line CLI errors."""

    def wrapped(args: argparse.Namespace) -> int:
        from perfsuite.workloads.data import DataError

        try:
            return fn(args)
        except (DataError, ValueError, NotImplementedError) as exc:
            raise CLIError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None

    return wrapped


def _own_dir(args: argparse.Namespace, tm: Any) -> str | None:
    return args.own_data_dir or (tm.record.get("config") or {}).get("data_dir")


@_errors
def run_shift(args: argparse.Namespace) -> int:
    from perfsuite.generalization.section import store
    from perfsuite.generalization.shift import evaluate_corruptions, evaluate_shift

    if not args.data_dir and not args.corruptions:
        raise CLIError("eval shift: give --data-dir DIR, --corruptions, or both")
    tm = _load(args.run, args.device)
    own = tm.own_test(_own_dir(args, tm))
    results: dict[str, Any] = {"run_id": tm.record["run_id"]}
    if args.data_dir:
        results["shift"] = evaluate_shift(tm, own, args.data_dir, args.seed, args.device)
        if not args.no_store:
            store(tm.record, "shift", results["shift"])
    if args.corruptions:
        families = [f.strip() for f in args.families.split(",")] if args.families else None
        say = None if args.json else status
        results["corruptions"] = evaluate_corruptions(
            tm,
            own,
            args.seed,
            args.device,
            _own_dir(args, tm),
            families,
            limit=args.limit,
            progress=say,
        )
        if not args.no_store:
            store(tm.record, "corruptions", results["corruptions"])
    if args.json:
        print_json(results)
    else:
        print(render_shift(results))
    return 0


@_errors
def run_probe(args: argparse.Namespace) -> int:
    from perfsuite.generalization.probe import DEFAULT_RIDGE, compare
    from perfsuite.generalization.probe import run_probe as probe
    from perfsuite.generalization.section import store

    ridge = DEFAULT_RIDGE if args.ridge is None else args.ridge
    tm = _load(args.run, args.device)
    result = probe(tm, args.data_dir, ridge, args.seed, args.device)
    if args.reference:
        ref_tm = _load(args.reference, args.device)
        ref = probe(ref_tm, args.data_dir, ridge, args.seed, args.device)
        compare(result, ref, ref_tm.record["run_id"], args.seed)
        if not args.no_store:
            store(ref_tm.record, "probe", ref.entry)
    if not args.no_store:
        store(tm.record, "probe", result.entry)
    if args.json:
        print_json({"run_id": tm.record["run_id"], "probe": result.entry})
    else:
        print(render_probe(tm.record["run_id"], result.entry))
    return 0


def pct(v: float | None) -> str:
    from perfsuite.fmt import pct as percent

    return "-" if v is None else percent(v, 2)


def _acc(a: dict[str, Any] | None) -> str:
    if not a:
        return "-"
    ci = a.get("top1_ci95")
    text = pct(a["top1"])
    return text + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "")


def _pts(v: float | None, ci: Any = None) -> str:
    if v is None:
        return "-"
    text = f"{100 * v:+.2f} pts"
    return text + (f" [{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]" if ci else "")


def render_shift(results: dict[str, Any]) -> str:
    from perfsuite.fmt import table

    lines = [f"== {results['run_id']}: threshold model"]
    s = results.get("shift")
    if s:
        own, sh, drop = s["own_test"], s["shifted"], s["drop"]
        rows = [
            ["own test (re-measured)", own["n"], _acc(own), pct(own.get("top5"))],
            [f"shifted: {s['data_dir']}", sh["n"], _acc(sh), pct(sh.get("top5"))],
            [
                "drop (own - shifted)",
                "",
                _pts(drop["top1"], drop.get("top1_ci95")),
                _pts(drop.get("top5")),
            ],
        ]
        lines.append(table(rows, ["test set", "images", "top1 [95% CI]", "top5"], "lrrr"))
        if own.get("recorded") is not None:
            lines.append(f"recorded at the threshold: {pct(own['recorded'])}")
    c = results.get("corruptions")
    if c:
        rows = [
            [f, *(pct(a) for a in v["accuracy"]), pct(v["mean"])] for f, v in c["families"].items()
        ]
        heads = ["corruption", *(f"s{s}" for s in c["severities"]), "mean"]
        lines.append(table(rows, heads, "l" + "r" * (len(heads) - 1)))
        ci = c.get("mean_ci95")
        lines.append(
            f"clean (same images): {_acc(c['clean'])}; mean corruption accuracy: "
            f"{pct(c['mean'])}" + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "")
        )
        lines.extend(f"skipped {f}: {why}" for f, why in (c.get("skipped") or {}).items())
    return "\n".join(lines)


def render_probe(run_id: str, e: dict[str, Any]) -> str:
    lines = [
        f"== {run_id}: linear probe on {e['data_dir']}",
        f"{len(e['classes'])} classes, {e['n_train']} train / {e['test']['n']} test images, "
        f"{e['feature_dim']} features, ridge lambda {e['ridge']:g}",
        f"probe top1: {_acc(e['test'])} (train {pct(e['train_top1'])})",
    ]
    ref = e.get("reference")
    if ref:
        lines.append(
            f"reference {ref['run_id']}: {pct(ref['top1'])}; difference "
            f"{_pts(ref['difference'], ref.get('difference_ci95'))}"
        )
    return "\n".join(lines)
