"""Batch-1 inference latency as DAWNBench defines it, for any workload.

The rule: every example of the held-out set is predicted on its own (batch 1), through the
workload's own `predict` (its test-time augmentation included), by a model that meets the
threshold; the latency is the mean over the whole set, and the accuracy stated is what those
same predictions scored. The metric is computed by the workload's own `evaluate` over a
batch-1 view of its data, so top-1, top-5 and F1 workloads need nothing extra; only `predict`
is timed (the one place timing happens: `PredictTimer`), with the device synchronised before
and after each call. A few untimed warm-up predictions come first and are stated.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

from perfsuite.record import quantity
from perfsuite.runner.measure.energy import EnergyClock
from perfsuite.stats import percentile
from perfsuite.workloads.data import Batch, DataSource

MODES = ("eager", "compile", "cudagraphs", "compile-cudagraphs")
GRAPHED = ("cudagraphs", "compile-cudagraphs")  # replayed from one CUDA graph capture
PRECISIONS = ("fp32", "bf16", "fp16")
WARMUP_EXAMPLES = 10
ITEMS = 10_000  # DAWNBench states inference cost (and we state energy) per 10,000 examples
RULE = "dawnbench"


class InferenceError(ValueError):
    """A one-line reason the measurement cannot be made as asked."""


def _one(x: Any, j: int) -> Any:
    """Example `j` of a batched input as a batch of one (tensors, lists; scalars pass)."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__getitem__"):
        return x
    return x[j : j + 1]


class BatchOneView:
    """The held-out set of `data`, in its fixed order, one example per batch (at most
    `limit`). Handed to `Workload.evaluate`, which then predicts every example at batch 1."""

    kind = "batch-1 view"

    def __init__(self, data: DataSource, limit: int | None = None, chunk: int = 256) -> None:
        self.data = data
        self.description = getattr(data, "description", "")
        self.num_train = 0
        self.num_eval = data.num_eval if limit is None else min(limit, data.num_eval)
        # fewer examples than the set: evaluators that score against the whole set's answers
        # (SQuAD's golds) must score only the examples asked, or --limit would lower the score
        self.partial = self.num_eval < data.num_eval
        self.chunk = chunk

    def eval_batches(self, batch_size: int = 1) -> Iterator[Batch]:
        """Batches of one, whatever `batch_size` the evaluator asks for."""
        left = self.num_eval
        for b in self.data.eval_batches(self.chunk):
            for j in range(b.size):
                if left <= 0:
                    return
                left -= 1
                yield Batch(tuple(_one(x, j) for x in b.inputs), _one(b.target, j), 1)

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        raise InferenceError("the inference view has no training batches")

    def sample(self, n: int) -> Batch:
        return self.data.sample(min(n, self.num_eval))

    def close(self) -> None:  # the underlying source belongs to the caller
        return None

    def __getattr__(self, name: str) -> Any:
        """Anything else a workload's `evaluate` reads from its source (SQuAD's gold answers
        and examples) comes from the underlying source."""
        if name == "data":  # not set yet (during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.data, name)


class PredictTimer:
    """`predict(model, *inputs)` with the device synchronised before and after, its wall
    time (time.perf_counter) appended to `times`."""

    def __init__(self, predict: Callable[..., Any], sync: Callable[[], None]) -> None:
        self.predict = predict
        self.sync = sync
        self.times: list[float] = []

    def __call__(self, model: Any, *inputs: Any) -> Any:
        self.sync()
        t0 = time.perf_counter()
        out = self.predict(model, *inputs)
        self.sync()
        self.times.append(time.perf_counter() - t0)
        return out


@contextlib.contextmanager
def _predict_replaced(workload: Any, fn: Callable[..., Any]) -> Iterator[None]:
    """`workload.predict` is `fn` inside (an instance attribute over the class method), so
    the workload's unchanged `evaluate` calls the timed predictor."""
    had = "predict" in vars(workload)
    saved = vars(workload).get("predict")
    workload.predict = fn
    try:
        yield
    finally:
        if had:
            workload.predict = saved
        else:
            del workload.predict


def check_mode(mode: str, precision: str, device: Any, framework: str = "pytorch") -> None:
    """One-line errors for a mode or precision that cannot run on `device` in `framework`."""
    if mode not in MODES:
        raise InferenceError(f"unknown inference mode {mode!r}; expected one of {', '.join(MODES)}")
    if precision not in PRECISIONS:
        raise InferenceError(
            f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}"
        )
    if mode in GRAPHED and not device.is_gpu:
        raise InferenceError(
            f"--mode {mode} needs a CUDA device (CUDA graphs are GPU only); device is {device}"
        )
    if framework == "tensorflow" and mode not in ("eager", "compile"):
        raise InferenceError(
            f"--mode {mode}: TensorFlow runs are measured eager or compile (a tf.function "
            "graph); CUDA graphs are PyTorch's"
        )


def _graphed(workload: Any, model: Any, first: Batch, backend: Any) -> Callable[..., Any]:
    """`workload.predict` captured once in a CUDA graph on static batch-1 inputs; calls copy
    their inputs into those buffers and replay it (the copy is part of the timed call)."""
    import torch

    static = []
    for x in first.inputs:
        if not isinstance(x, torch.Tensor):
            raise InferenceError("--mode cudagraphs needs tensor inputs only")
        static.append(x.to(backend.torch_device).clone())
    stream = torch.cuda.Stream(backend.torch_device)
    stream.wait_stream(torch.cuda.current_stream(backend.torch_device))
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up on a side stream, as capture requires
            workload.predict(model, *static)
    torch.cuda.current_stream(backend.torch_device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = workload.predict(model, *static)

    def replay(_model: Any, *inputs: Any) -> Any:
        for s, x in zip(static, inputs, strict=True):
            s.copy_(x, non_blocking=True)
        graph.replay()
        return out.clone()

    return replay


def measure(
    workload: Any,
    model: Any,
    data: DataSource,
    backend: Any,
    *,
    mode: str = "eager",
    precision: str = "fp32",
    limit: int | None = None,
    warmup: int = WARMUP_EXAMPLES,
    energy: EnergyClock | None = None,
    by: str = "perfsuite",
) -> dict[str, Any]:
    """The record's `inference` entry for `model` (the caller says which model it is). The
    framework's parts (eval mode, compilation, no-grad, autocast, sync) are the backend's."""
    check_mode(mode, precision, backend.device, backend.framework)
    if limit is not None and limit < 1:
        raise InferenceError(f"--limit must be >= 1, got {limit}")
    view = BatchOneView(data, limit)
    if view.num_eval < 1:
        raise InferenceError(f"data source {view.description!r} has no evaluation examples")
    runnable = backend.inference_model(model, mode, precision)
    predict = workload.predict
    warm = list(BatchOneView(data, warmup).eval_batches())
    with backend.autocast(precision), backend.no_grad():
        for b in warm:  # compilation, allocator and caches: untimed, not counted
            predict(runnable, *b.inputs)
        if mode in GRAPHED:  # the compiled predict is captured as it is: one graph replay
            predict = _graphed(workload, runnable, warm[0], backend)
        backend.sync()
    timer = PredictTimer(predict, backend.sync)
    clock = energy if energy is not None else EnergyClock(None, "energy not requested")
    # no_grad here too: a workload's evaluate need not disable autograd itself, and the
    # timed calls must run as the warm-up ones did (no graph recorded, no saved tensors)
    with _predict_replaced(workload, timer), backend.autocast(precision), backend.no_grad():
        clock.start()
        metrics = workload.evaluate(runnable, view)
        joules = clock.stop()
    backend.inference_model(model, "eager", precision)  # evaluate may leave training mode on
    n = len(timer.times)
    if n != view.num_eval:
        raise InferenceError(
            f"{workload.name}.evaluate called predict {n} times for {view.num_eval} examples: "
            "the batch-1 rule needs one call per example"
        )
    entry = section(
        timer.times,
        view,
        data.num_eval,
        metrics,
        mode,
        precision,
        len(warm),
        backend,
        clock,
        joules,
        by,
        predict_text(workload),
    )
    generate = getattr(workload, "generation_latency", None)
    if callable(generate):  # language models: time to first token and per-token decode
        with backend.autocast(precision), backend.no_grad():
            entry["generation"] = generate(runnable, data, backend)
        backend.inference_model(model, "eager", precision)
    return entry


def predict_text(workload: Any) -> str:
    """What each timed `predict` call includes, as the workload's recipe says (`tta_flip`,
    `tta_level`) or, for a workload's own `predict` (several views averaged, say), its `tta`
    attribute, so the source never claims test-time augmentation that the run did not do,
    and never denies one a recipe cannot describe."""
    extra = getattr(getattr(workload, "recipe", None), "extra", None) or {}
    declared = getattr(workload, "tta", None)
    if isinstance(declared, str) and declared.strip():
        return f"workload.predict, test-time augmentation as the workload declares it: {declared}"
    if "tta_flip" not in extra:
        return (
            "workload.predict as written: whatever it does is timed, any test-time "
            "augmentation too; neither its recipe (no tta_flip) nor a `tta` attribute says"
        )
    level = extra.get("tta_level")
    if not extra["tta_flip"] or (level is not None and int(level) == 0):
        return "workload.predict, test-time augmentation off (tta)"
    how = f"tta_flip, level {level}" if level is not None else "tta_flip"
    return f"workload.predict, test-time augmentation included ({how})"


def measured_on(backend: Any) -> dict[str, Any]:
    """Where and with how many threads an entry was measured: `perfsuite infer` may run on
    another machine, or with other threads, than the run it measures."""
    return {
        "host": socket.gethostname(),
        "hardware": backend.hardware(),
        "threads": backend.thread_count(),
    }


def section(
    times: list[float],
    view: BatchOneView,
    eval_size: int,
    metrics: dict[str, float],
    mode: str,
    precision: str,
    warmup: int,
    backend: Any,
    clock: EnergyClock,
    joules: float | None,
    by: str,
    predicted: str = "workload.predict",
) -> dict[str, Any]:
    """Assemble the entry: mean (the DAWNBench figure), percentiles, what was measured how
    and where."""
    n = len(times)
    partial = n < eval_size
    mean = sum(times) / n
    what = f"first {n} of {eval_size}" if partial else f"all {n}"
    where = measured_on(backend)
    threads = where["threads"]
    source = (
        f"mean of {what} evaluation examples predicted one at a time (batch 1) by "
        f"{predicted}; {warmup} untimed warm-up "
        f"predictions before; device synchronised before and after each; time.perf_counter "
        f"on {backend.device} ({where['hardware']['name']}, threads "
        f"{threads if threads is not None else 'the framework default'}); mode {mode}, "
        f"precision {precision}"
        + ("; partial (--limit): not the DAWNBench figure" if partial else "")
    )
    energy = clock.describe()
    per_10k = None
    if joules is not None:
        energy["pass_j"] = joules
        per_10k = quantity(
            joules / n * ITEMS,
            "J",
            "measured",
            f"{energy['source']}: read before and after the pass over {n} examples (includes "
            "the evaluator's host work between predictions), scaled to 10,000",
        )
    return {
        "rule": RULE,
        "latency": quantity(mean, "s", "measured", source),
        "latency_p50_s": percentile(times, 50),
        "latency_p90_s": percentile(times, 90),
        "latency_p99_s": percentile(times, 99),
        "examples": n,
        "eval_size": eval_size,
        "partial": partial,
        "warmup_examples": warmup,
        "mode": mode,
        "precision": precision,
        "batch_size": 1,
        "metrics": dict(metrics),
        "device": str(backend.device),
        **where,
        "notes": [],
        "energy_per_10k": per_10k,
        "energy": energy,
        "by": by,
        "measured_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def run_threads(record: dict[str, Any]) -> int | None:
    """The threads the run itself computed with: its --threads, else (PyTorch) the torch
    count its environment recorded; None where TensorFlow chose its own pools."""
    config = record.get("config") or {}
    if config.get("threads"):
        return int(config["threads"])
    if (config.get("framework") or "pytorch") == "pytorch":
        return (record.get("environment") or {}).get("torch_threads")
    return None


def differences(record: dict[str, Any], entry: dict[str, Any], run_precision: str) -> list[str]:
    """How a re-measurement differs from the run it measures (precision, hardware, threads),
    said in the entry's `notes`: the figure may replace the run's own, so it must say so."""
    notes = []
    if entry["precision"] != run_precision:
        notes.append(
            f"precision {entry['precision']} given by --precision; the run trained in "
            f"{run_precision}"
        )
    trained = (record.get("hardware") or {}).get("name")
    here = (entry.get("hardware") or {}).get("name")
    if trained and here and trained != here:
        notes.append(
            f"measured on {here}, not on the run's training hardware {trained}; a cost per "
            "10,000 from the run's price is the training hardware's price, not this one's"
        )
    threads, mine = run_threads(record), entry.get("threads")
    if threads is not None and mine != threads:
        used = mine if mine is not None else "the framework's default"
        notes.append(f"measured with {used} threads; the run used {threads}")
    return notes


def not_measured(reason: str) -> dict[str, Any]:
    """The `inference` entry of a run with no threshold model: no DAWNBench latency."""
    return {"rule": RULE, "not_measured": reason, "batch_size": 1}


def model_of(record: dict[str, Any]) -> dict[str, Any]:
    """Which model was measured: the run's threshold checkpoint, as the record describes it."""
    ck = record.get("checkpoint") or {}
    return {
        "source": "threshold checkpoint (runner/record/checkpoint.py)",
        "file": ck.get("file"),
        "sha256": ck.get("sha256"),
        "epoch": ck.get("epoch"),
        "metric": ck.get("metric"),
        "value": ck.get("value"),
    }


def store(record: dict[str, Any], entry: dict[str, Any]) -> None:
    """Keep every measurement in `inference_measurements`; a whole-set one becomes the
    record's `inference` (the DAWNBench figure), a partial one never does."""
    record.setdefault("inference_measurements", [])
    if record["inference_measurements"] is None:
        record["inference_measurements"] = []
    record["inference_measurements"].append(entry)
    if not entry.get("partial"):
        record["inference"] = entry
