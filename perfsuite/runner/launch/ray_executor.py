"""Runs on a Ray cluster: one run per Ray task (and per worker process), with the CPUs and
GPUs it needs declared.

A worker node need not share a file system with the driver, so each task runs into a
temporary folder of its own, packs the finished run folder (record, trace, telemetry, MLPerf
log) into a tar archive and returns it; the driver unpacks it into the run's `out` folder, so
the records land in the same study folder as with the local executor. `ray` is an optional
extra: `pip install 'perfsuite[ray]'`.
"""

from __future__ import annotations

import io
import math
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from perfsuite.runner.launch.executor import (
    Callback,
    Job,
    JobResult,
    ResultCallback,
    run_in_process,
)
from perfsuite.runner.options import RunOptions


def _remote_run(options: dict[str, Any]) -> dict[str, Any]:
    """Body of a Ray task: the run in a temporary folder, returned as a tar archive."""
    with tempfile.TemporaryDirectory(prefix="perfsuite-ray-") as tmp:
        run_dir, error, fatal = run_in_process(RunOptions(**{**options, "out": tmp}))
        archive = None
        if run_dir is not None and Path(run_dir).is_dir():
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w:gz") as tar:
                tar.add(run_dir, arcname=Path(run_dir).name)
            archive = buf.getvalue()
        name = Path(run_dir).name if run_dir else None
        return {"name": name, "archive": archive, "error": error, "fatal": fatal}


def unpack(archive: bytes, out: Path) -> None:
    """Unpack a run folder; members may not leave `out` (tarfile's "data" filter)."""
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(out, filter="data")


@dataclass
class RayExecutor:
    """`address` None: join the Ray instance this process already started, else start a local
    one for the duration of `run`."""

    address: str | None = None
    cpus_per_run: float = 1.0
    gpus_per_run: float = 0.0

    def run(
        self,
        jobs: Sequence[Job],
        on_start: Callback | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[JobResult]:
        try:
            import ray
        except ImportError:
            raise ValueError("the Ray executor needs ray: pip install 'perfsuite[ray]'") from None
        started_here = not ray.is_initialized()
        if started_here:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        try:
            return self._run(ray, jobs, on_start, on_result)
        finally:
            if started_here:
                ray.shutdown()

    def _run(
        self,
        ray: Any,
        jobs: Sequence[Job],
        on_start: Callback | None,
        on_result: ResultCallback | None,
    ) -> list[JobResult]:
        # max_calls=1: a worker process serves one run and exits, so no run inherits another's
        # allocator, autotuning or GPU memory state (see perfsuite/runner/launch/executor.py)
        task = ray.remote(num_cpus=self.cpus_per_run, num_gpus=self.gpus_per_run, max_calls=1)(
            _remote_run
        )
        threads = max(1, math.floor(self.cpus_per_run))
        refs = {}
        for i, job in enumerate(jobs):
            opts = replace(job.options, progress=False, threads=job.options.threads or threads)
            if on_start:
                on_start(job)
            n = max(1, opts.nproc)  # a data-parallel run: its resources for every process
            sized = task.options(num_cpus=self.cpus_per_run * n, num_gpus=self.gpus_per_run * n)
            refs[sized.remote(asdict(opts))] = i
        done: dict[int, JobResult] = {}
        waiting = list(refs)
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            i = refs[ready[0]]
            job = jobs[i]
            try:
                reply = ray.get(ready[0])
            except Exception as exc:  # the task itself failed (worker died, ...)
                res = JobResult(job, None, f"Ray task failed: {type(exc).__name__}: {exc}")
            else:
                run_dir = None
                if reply["archive"]:
                    unpack(reply["archive"], Path(job.options.out))
                    run_dir = Path(job.options.out) / reply["name"]
                res = JobResult(job, run_dir, reply["error"], bool(reply["fatal"]))
            done[i] = res
            if on_result:
                on_result(res)
            if res.fatal:
                for ref in waiting:
                    ray.cancel(ref)
                break
        return [done[i] for i in sorted(done)]
