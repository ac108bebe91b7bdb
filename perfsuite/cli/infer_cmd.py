"""`perfsuite infer RUN`: (re)measure batch-1 inference by the DAWNBench rule on a run's
threshold model, in eager, compiled or CUDA-graph mode, at fp32/bf16/fp16.

The rule and its timer are in perfsuite/runner/inference.py; see docs/inference.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import CLIError, add_json_flag, print_json, status


def register(sub: Any) -> None:
    p = sub.add_parser(
        "infer",
        help="batch-1 inference latency by the DAWNBench rule on a run's threshold model",
        description=(
            "Predict every example of the run's evaluation set one at a time (batch 1, with "
            "the workload's test-time augmentation) with the model that first met the "
            "threshold; report the mean latency (the DAWNBench figure), p50/p90/p99, the "
            "accuracy of those predictions, cost per 10,000 and energy where a counter exists. "
            "A whole-set result replaces the record's inference figure; --limit N measures the "
            "first N examples only, recorded as partial and never used as the DAWNBench figure."
        ),
    )
    p.add_argument("run", metavar="RUN", help="run folder or run.json")
    p.add_argument(
        "--mode",
        default="eager",
        help="eager (default), compile (PyTorch: torch.compile; TensorFlow: a tf.function "
        "graph) or cudagraphs (PyTorch on a GPU)",
    )
    p.add_argument("--precision", default="fp32", help="fp32 (default), bf16 or fp16 autocast")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N examples (partial)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument(
        "--data-dir", metavar="DIR", help="where the run's dataset is now (default: the run's)"
    )
    p.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="CPU threads (torch; TensorFlow runs: its pools too)",
    )
    p.add_argument(
        "--instance-type",
        metavar="TYPE",
        help="price table entry for the cost per 10,000 when the record names no instance",
    )
    p.add_argument("--no-store", action="store_true", help="do not write into the record")
    add_json_flag(p)
    p.set_defaults(func=run)


def render(entry: dict[str, Any], cost: Any) -> str:
    from perfsuite.fmt import pct, si, usd

    lat = entry["latency"]
    lines = [
        f"latency (mean, batch 1): {si(lat['value'], 's')}  "
        f"p50 {si(entry['latency_p50_s'], 's')}  p90 {si(entry['latency_p90_s'], 's')}  "
        f"p99 {si(entry['latency_p99_s'], 's')}",
        f"examples: {entry['examples']} of {entry['eval_size']}"
        + ("  (PARTIAL: not the DAWNBench figure)" if entry["partial"] else "  (whole set)")
        + f", {entry['warmup_examples']} warm-up predictions excluded",
        f"mode {entry['mode']}, precision {entry['precision']}, device {entry['device']}",
        "accuracy of these predictions: "
        + ", ".join(f"{k} {pct(v, 2)}" for k, v in entry["metrics"].items()),
    ]
    model = entry.get("model") or {}
    if model.get("value") is not None:
        lines.append(
            f"model: threshold checkpoint of epoch {model.get('epoch')} "
            f"({model.get('metric')} {pct(model['value'], 2)} at the run's evaluation)"
        )
    if cost is not None and cost.inference_cost_per_10k_usd is not None and not entry["partial"]:
        lines.append(
            f"inference cost per 10,000: {usd(cost.inference_cost_per_10k_usd)} "
            f"(price {cost.price.usd_per_hour:g} USD/h, {cost.price.source})"
        )
    elif cost is not None and not entry["partial"]:
        lines.append(
            "inference cost per 10,000: unknown (no price: the record has none; pass "
            "--instance-type TYPE)"
        )
    energy = entry.get("energy") or {}
    per10k = entry.get("energy_per_10k")
    if per10k:
        lines.append(f"energy per 10,000: {si(per10k['value'], 'J')} ({energy.get('source')})")
    else:
        lines.append(f"energy: not measured ({energy.get('reason')})")
    lines.append(f"latency source: {lat['source']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from analyzers.cost import cost_of
    from perfsuite.backends import parse_device
    from perfsuite.cli.cost_cmd import load_price_table
    from perfsuite.generalization.threshold_model import rebuild
    from perfsuite.record import load_record, write_record
    from perfsuite.runner import inference
    from perfsuite.runner.energy import EnergyClock
    from perfsuite.runner.frameworks import framework_backend, run_parts

    try:
        inference.check_mode(args.mode, args.precision, parse_device(args.device))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.limit is not None and args.limit < 1:
        raise CLIError(f"--limit must be >= 1, got {args.limit}")
    prices = load_price_table(None)
    if args.instance_type and args.instance_type not in prices:
        raise CLIError(f"--instance-type {args.instance_type}: not in the price table")
    record = load_record(args.run)
    framework = str((record.get("config") or {}).get("framework") or "pytorch")
    try:  # the run's framework measures its model (TensorFlow: only eager; see inference.py)
        backend = framework_backend(framework, args.device)
        inference.check_mode(args.mode, args.precision, backend.device, framework)
        backend.check_available()
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    backend.set_threads(args.threads)
    tm = rebuild(record, str(backend.device))
    data_dir = args.data_dir or (record.get("config") or {}).get("data_dir")
    data = run_parts(framework).load_data(tm.workload, data_dir, backend, tm.switches)
    if not args.json:
        n = min(args.limit or data.num_eval, data.num_eval)
        status(f"predicting {n} examples one at a time ({args.mode}, {args.precision})")
    try:
        entry = inference.measure(
            tm.workload,
            tm.model,
            data,
            backend,
            mode=args.mode,
            precision=args.precision,
            limit=args.limit,
            energy=EnergyClock.for_device(backend.device.gpu_index),
            by="perfsuite infer",
        )
    except (ValueError, RuntimeError) as exc:  # refused rule; compiler or CUDA failures
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CLIError(f"infer --mode {args.mode}: {first}") from None
    finally:
        data.close()
    entry["model"] = inference.model_of(record)
    if not args.no_store:
        inference.store(record, entry)
        write_record(record["_dir"], record)
    cost = cost_of({**record, "inference": entry}, prices, args.instance_type)
    if args.json:
        print_json({"run_id": record["run_id"], "inference": entry, "cost": cost})
    else:
        print(render(entry, cost))
    return 0
