"""One-off measurements around the training loop: FLOP count, ceilings, inference latency.

These run outside the timed training region (time-to-accuracy measures training only); the
seconds they take are recorded under `extra.setup_s` so nothing is hidden.
"""

from __future__ import annotations

import copy
import statistics
import time
from typing import Any

from perfsuite.record import quantity


def count_step_work(workload: Any, model: Any, recipe: Any, batch: tuple[Any, Any]) -> dict:
    """Count FLOPs (and model bytes) of one full training step on deep copies.

    The copies see a real batch, the real model and a real optimizer, so the count is that of a
    training step, while the run's own model and optimizer state stay untouched.
    """
    from perfsuite.flops import OpCounter

    m = copy.deepcopy(model)
    opt, _ = workload.make_optimizer(m, recipe, steps_per_epoch=1)
    # Warm the optimizer state once uncounted: step 1 of momentum SGD/Adam takes a different
    # (cheaper) path than every later step.
    x, y = batch
    workload.loss(m(x), y, recipe).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    counter = OpCounter()
    with counter:
        with counter.phase("forward"):
            loss = workload.loss(m(x), y, recipe)
        with counter.phase("backward"):
            loss.backward()
        with counter.phase("optimizer"):
            opt.step()
    work = counter.result().to_work_section()
    work["batch_size"] = len(y)
    work["dtype"] = str(x.dtype).replace("torch.", "")
    return work


def profile_window_on_copy(
    workload: Any, model: Any, recipe: Any, batches: Any, window: Any
) -> dict[str, Any] | None:
    """Run `window.total_steps` real training steps on copies under the profiler.

    Same network, optimizer and real augmented batches as the run, but outside its clock, so
    profiling never inflates the time to accuracy.
    """
    m = copy.deepcopy(model)
    opt, _ = workload.make_optimizer(m, recipe, steps_per_epoch=1)
    for _ in range(window.total_steps):
        x, y = next(batches)
        loss = workload.loss(m(x), y, recipe)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        window.step()
    window.close()
    return window.result()


def measure_inference_latency(
    workload: Any, model: Any, sample_x: Any, device: str, repeats: int = 100
) -> dict[str, Any]:
    """Median batch-1 latency of `workload.predict` (with its test-time augmentation)."""
    import torch

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    model.eval()
    times = []
    with torch.no_grad():
        for i in range(repeats + 10):
            x = sample_x[i % len(sample_x)].unsqueeze(0)
            sync()
            t0 = time.perf_counter()
            workload.predict(model, x)
            sync()
            if i >= 10:
                times.append(time.perf_counter() - t0)
    model.train()
    times.sort()
    return {
        "latency": quantity(
            statistics.median(times),
            "s",
            "measured",
            f"median of {repeats} batch-1 predictions after 10 warm-up, on {device}, "
            "time.perf_counter",
        ),
        "latency_p90_s": times[int(0.9 * (len(times) - 1))],
        "batch_size": 1,
    }


def resolve_ceilings(device: str, dtype: str, measure: bool) -> tuple[dict | None, str]:
    """The record's `ceilings` section from perfsuite.ceilings, or None with the reason."""
    try:
        from perfsuite.ceilings import ceilings_for
    except ImportError as exc:
        return None, f"device ceilings unavailable: {exc}"
    try:
        return ceilings_for(device, dtype, measure=measure, quick=True), ""
    except Exception as exc:  # a failed micro-benchmark must not lose the run
        return None, f"device ceilings could not be determined: {exc}"


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0
