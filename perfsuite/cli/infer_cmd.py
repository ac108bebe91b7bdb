"""`perfsuite infer RUN`: (re)measure batch-1 inference by the DAWNBench rule on a run's
threshold model, in eager, compiled or CUDA-graph mode, at the run's precision (or another,
said in the entry's notes).

The model is rebuilt as the run built it (data first, then the model, with the run's switches),
so the figure that may replace the run's own is of the same configuration, or says how it is
not. The rule and its timer are in perfsuite/runner/measure/inference.py; see docs/inference.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from perfsuite.cli.common import (
    CLIError,
    add_json_flag,
    positive_int,
    print_json,
    resolve_run,
    status,
)


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
            "first N examples only, recorded as partial and never used as the DAWNBench figure. "
            "The model is rebuilt with the run's switches (precision, channels_last, layout); "
            "what differs from the run (precision, hardware, threads) is in the entry's notes."
        ),
    )
    p.add_argument(
        "run", metavar="RUN", help="a run folder, a run.json, or a group folder holding one run"
    )
    p.add_argument(
        "--mode",
        default="eager",
        help="eager (default), compile (PyTorch: torch.compile; TensorFlow: a tf.function "
        "graph), cudagraphs (PyTorch on a GPU: the eager predict replayed from one CUDA graph) "
        "or compile-cudagraphs (both: the compiled predict in a CUDA graph)",
    )
    p.add_argument(
        "--precision",
        help="fp32, bf16 or fp16 (default: the run's own precision; another one is measured "
        "and stored with a note that it differs from the run's)",
    )
    p.add_argument("--limit", type=int, metavar="N", help="only the first N examples (partial)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    p.add_argument(
        "--data-dir", metavar="DIR", help="where the run's dataset is now (default: the run's)"
    )
    p.add_argument(
        "--threads",
        type=positive_int,
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
    from perfsuite.fmt import si, usd
    from perfsuite.task_metrics import value_text

    lat = entry["latency"]
    threads = entry.get("threads")
    lines = [
        f"latency (mean, batch 1): {si(lat['value'], 's')}  "
        f"p50 {si(entry['latency_p50_s'], 's')}  p90 {si(entry['latency_p90_s'], 's')}  "
        f"p99 {si(entry['latency_p99_s'], 's')}",
        f"examples: {entry['examples']} of {entry['eval_size']}"
        + ("  (PARTIAL: not the DAWNBench figure)" if entry["partial"] else "  (whole set)")
        + f", {entry['warmup_examples']} warm-up predictions excluded",
        f"mode {entry['mode']}, precision {entry['precision']}, device {entry['device']}",
        f"measured on {entry['hardware']['name']} (host {entry['host']}, threads "
        f"{threads if threads is not None else 'framework default'})",
        "accuracy of these predictions: "
        + ", ".join(f"{k} {value_text(k, v)}" for k, v in entry["metrics"].items()),
    ]
    gen = entry.get("generation")
    if gen:  # language models: KV-cache generation at batch 1
        lines.append(
            f"generation (batch 1, KV cache, {gen['prompt_tokens']}-token prompts): time to "
            f"first token {si(gen['time_to_first_token']['value'], 's')}, decode "
            f"{si((gen.get('decode_per_token') or {}).get('value'), 's')} per token "
            f"({gen['prompts']} prompts x {gen['new_tokens']} tokens)"
        )
    model = entry.get("model") or {}
    if model.get("value") is not None:
        lines.append(
            f"model: threshold checkpoint of epoch {model.get('epoch')} "
            f"({model.get('metric')} {value_text(str(model.get('metric')), model['value'])} "
            "at the run's evaluation)"
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
    lines.extend(f"note: {n}" for n in entry.get("notes") or [])
    if cost is not None:  # as `perfsuite cost` prints them
        lines.extend(f"note: {cost.run_id}: {n}" for n in cost.notes)
    return "\n".join(lines)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _rebuild(record: dict[str, Any], backend: Any, data_dir: str | None) -> tuple[Any, Any]:
    """The run's threshold model and evaluation data, in the run's order (runner/routes/run.py):
    seed, data (the synthetic source for a --synthetic run), then the model, because a
    model may depend on its data (squad's vocabulary). Data and workload problems are
    one-line errors."""
    from perfsuite.generalization.threshold_model import rebuild
    from perfsuite.runner.frameworks.parts import run_parts

    config = record.get("config") or {}
    seed = int(config.get("seed") or 0)
    where = data_dir or config.get("data_dir")
    loaded: list[Any] = []

    def load(wl: Any, switches: Any) -> None:
        backend.seed_all(seed)
        if config.get("synthetic"):  # as the run made it: same shapes, same seed
            loaded.append(wl.synthetic_data(backend.torch_device, seed))
        else:
            loaded.append(run_parts(backend.framework).load_data(wl, where, backend, switches))

    try:
        tm = rebuild(record, str(backend.device), before_model=load)
    except (ValueError, NotImplementedError) as exc:  # DataError, SquadFileError, RecordError
        for data in loaded:
            data.close()
        raise CLIError(_first_line(exc)) from None
    return tm, loaded[0]


def run(args: argparse.Namespace) -> int:
    from perfsuite.analyzers.results.cost import cost_of
    from perfsuite.backends import parse_device
    from perfsuite.cli.cost_cmd import check_instance_type, load_price_table
    from perfsuite.record import load_record, write_record
    from perfsuite.runner.frameworks.parts import framework_backend, run_parts
    from perfsuite.runner.measure import inference
    from perfsuite.runner.measure.energy import EnergyClock

    try:
        inference.check_mode(args.mode, args.precision or "fp32", parse_device(args.device))
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    if args.limit is not None and args.limit < 1:
        raise CLIError(f"--limit must be >= 1, got {args.limit}")
    prices = load_price_table(None)
    check_instance_type(prices, args.instance_type)
    record = load_record(resolve_run(args.run))
    framework = str((record.get("config") or {}).get("framework") or "pytorch")
    try:  # the run's framework measures its model (TensorFlow: only eager; see inference.py)
        backend = framework_backend(framework, args.device)
        inference.check_mode(args.mode, args.precision or "fp32", backend.device, framework)
        backend.check_available()
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    backend.set_threads(args.threads)
    tm, data = _rebuild(record, backend, args.data_dir)
    run_precision = tm.switches.precision or "fp32"
    precision = args.precision or run_precision
    if not args.json:
        n = min(args.limit or data.num_eval, data.num_eval)
        status(f"predicting {n} examples one at a time ({args.mode}, {precision})")
    restore = run_parts(framework).apply_process_switches(tm.switches)  # tf32, as in the run
    try:
        entry = inference.measure(
            tm.workload,
            tm.model,
            data,
            backend,
            mode=args.mode,
            precision=precision,
            limit=args.limit,
            energy=EnergyClock.for_device(backend.device.gpu_index),
            by="perfsuite infer",
        )
    except (ValueError, RuntimeError) as exc:  # refused rule; compiler or CUDA failures
        raise CLIError(f"infer --mode {args.mode}: {_first_line(exc)}") from None
    finally:
        data.close()
        restore()
    entry["model"] = inference.model_of(record)
    entry["notes"] = inference.differences(record, entry, run_precision)
    if not args.no_store:
        inference.store(record, entry)
        write_record(record["_dir"], record)
    cost = cost_of({**record, "inference": entry}, prices, args.instance_type)
    if args.json:
        print_json({"run_id": record["run_id"], "inference": entry, "cost": cost})
    else:
        print(render(entry, cost))
    return 0
