"""Measured hardware counters on NVIDIA GPUs: CUPTI (through torch.profiler) and Nsight Compute.

Capture side: `profiler_experimental_config()` for torch.profiler, `ncu_command()` for ncu.
Analysis side (no torch needed): `counters_from_trace()` / `counters_from_ncu()` turn the
tool output into the run record's `counters` section; `load_counters()` picks by file content.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from perfsuite.counters.cupti_trace import counters_from_trace
from perfsuite.counters.ncu import counters_from_ncu, ncu_command
from perfsuite.counters.section import CountersError
from perfsuite.devices.counter_metrics import default_metrics
from perfsuite.safeio import HEAD_BYTES, binary_detail, empty_detail, open_regular

__all__ = [
    "CountersError",
    "counters_from_ncu",
    "counters_from_trace",
    "default_metrics",
    "load_counters",
    "ncu_command",
    "profiler_experimental_config",
]


def profiler_experimental_config(metrics: list[str] | None = None) -> Any:
    """A `torch.profiler._ExperimentalConfig` that makes Kineto collect CUPTI metrics per kernel.

    Pass it as `torch.profiler.profile(experimental_config=...)`. Without `metrics`, the set
    for the current CUDA device's compute capability (see `metrics.default_metrics`), or the
    portable set when no CUDA device is visible. In this mode Kineto records no kernel timings
    and replays kernels, so profile a window separate from the timeline window.
    """
    import torch  # lazy: the analysis side must not need torch

    if metrics is None:
        cc = None
        if torch.cuda.is_available():
            cc = tuple(torch.cuda.get_device_capability())
        metrics = default_metrics(cc)  # type: ignore[arg-type]
    return torch.profiler._ExperimentalConfig(
        profiler_metrics=list(metrics), profiler_measure_per_kernel=True
    )


def _looks_like_csv(path: Path) -> bool:
    """True for an ncu CSV or report, False for a JSON trace; empty or binary files (other
    than a .ncu-rep, which is binary) are refused here, before a reader misnames them."""
    import gzip

    with open_regular(path, CountersError) as fh:
        head = fh.read(HEAD_BYTES)
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(HEAD_BYTES)
        except (OSError, EOFError) as e:
            raise CountersError(f"{path}: cannot read: {e}") from None
    empty = empty_detail(head)
    if empty:
        raise CountersError(f"{path}: {empty}")
    if path.suffix == ".ncu-rep":
        return True
    binary = binary_detail(head)
    if binary:
        raise CountersError(
            f"{path}: not an ncu CSV, CUPTI trace or .ncu-rep ({binary}; an ncu report "
            "must be named *.ncu-rep)"
        )
    text = head.decode("utf-8", errors="replace").lstrip()
    return not text.startswith("{") and not text.startswith("[")


def load_counters(path: str | os.PathLike[str], window_steps: int | None = None) -> dict[str, Any]:
    """The `counters` section from a Kineto trace with CUPTI metrics, an ncu CSV or .ncu-rep."""
    p = Path(path)
    if _looks_like_csv(p):
        return counters_from_ncu(p, window_steps=window_steps)
    return counters_from_trace(p, window_steps=window_steps)
