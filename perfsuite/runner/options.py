"""What one `perfsuite run` is asked to do: the options the CLI, the Python API, studies and
benches fill in and `runner.loop.run_workload` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunOptions:
    workload: str
    framework: str = "pytorch"  # or "tensorflow" (runner/frameworks.py)
    data_dir: str | None = None
    out: str = "runs"
    threshold: float | None = None
    epochs: int | None = None
    batch_size: int | None = None
    seed: int = 0
    device: str = "cpu"
    keep_going: bool = False
    capture: bool = True
    recipe: str | None = None
    overrides: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    synthetic: bool = False
    threads: int | None = None
    counters: str | None = None
    instance_type: str | None = None
    price_per_hour: float | None = None
    group: dict[str, Any] | None = None
    download: bool = False
    telemetry_interval_s: float = 0.5
    profile_steps: int = 3  # at least this many profiled steps...
    profile_seconds: float = 1.0  # ...and at least this much of the run's clock (see below)
    measure_peaks: bool = True
    inference_repeats: int = 100  # 0: no inference measurement (else the rule's whole set)
    inference_limit: int | None = None  # measure only the first N examples (partial)
    progress: bool = True
    eval_from: int = 1  # first epoch that is evaluated (the last one always is)
    replay_steps: int = 0  # >0: replay that many steps in an NVTX range for ncu; no record
    nproc: int = 1  # >1: data-parallel training in that many processes (runner/distributed.py)

    def __post_init__(self) -> None:
        # A FILE.py workload is kept absolute, so the record's config names the same file
        # from any directory (perfsuite eval, infer), whoever filled these options in.
        from perfsuite.workloads.user import absolute_spec

        self.workload = absolute_spec(self.workload)
