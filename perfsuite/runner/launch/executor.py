"""Running many runs: one interface for `run --repeats`, studies, and any engine behind them.

An executor takes jobs (one `RunOptions` each, with a key saying which configuration it
belongs to) and returns one `JobResult` per job, calling back when a job starts and ends so
the caller can show progress per configuration. `LocalExecutor` runs each job in a fresh child
process: one after another (the default: timings are not disturbed by a neighbour), or side by
side with the cores split between them. `perfsuite.runner.launch.ray_executor` runs them on a
Ray cluster, also one process per run.

Errors by origin: a job whose options are wrong (the plan's `OptionsError`, or a `DataError`
for data the options name) is `fatal`, and no further job starts, since every other job would
fail the same way. Any other exception is that run's own failure (its workload's code, the
machine): the run is recorded as crashed, its traceback is in its `perfsuite.log`, and the
jobs after it go on. SIGTERM (`Terminated`) stops every job still to come.

A process per run, even one at a time, because repeats must be independent samples: a second
run in the same process would inherit the first one's allocator state, cuDNN's autotuning
cache, compiled kernels and warm device memory (docs/studies.md shows the effect).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Protocol

from perfsuite.hostinfo import usable_cpus
from perfsuite.record import load_record
from perfsuite.runner.engine.engine import Terminated, sigterm_raises
from perfsuite.runner.launch.start import run_workload
from perfsuite.runner.options import RunOptions
from perfsuite.runner.routes.plan import OptionsError
from perfsuite.task_metrics import metric_info, metric_text, target_text
from perfsuite.workloads.data import DataError


@dataclass(frozen=True)
class Job:
    options: RunOptions
    key: str = ""  # the configuration it belongs to (progress is shown per key)
    label: str = ""  # e.g. "seed 3"


@dataclass(frozen=True)
class JobResult:
    job: Job
    run_dir: Path | None  # the run folder (with run.json), also for a crashed run when known
    error: str | None = None  # one line; None when the run finished (reached, not, diverged)
    fatal: bool = False  # the options themselves are wrong
    terminated: bool = False  # the run was stopped by SIGTERM (so are the runs to come)

    @property
    def ok(self) -> bool:
        return self.error is None


Callback = Callable[[Job], None]
ResultCallback = Callable[[JobResult], None]


class Executor(Protocol):
    def run(
        self,
        jobs: Sequence[Job],
        on_start: Callback | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[JobResult]:
        """Run every job (until a fatal one); results in job order."""
        ...


def local_devices(device: str) -> list[str]:
    """`--parallel auto`: one run per GPU when `device` is "cuda" and there are several, else
    an empty list (one run at a time: on a CPU, runs side by side share the cores and disturb
    each other's timings)."""
    if device != "cuda":
        return []
    import torch

    n = torch.cuda.device_count()
    return [f"cuda:{k}" for k in range(n)] if n > 1 else []


# The exceptions that say the options are wrong, whatever run takes them.
OPTIONS_ERRORS: tuple[type[Exception], ...] = (OptionsError, DataError)


def outcome(run_dir: Path | None) -> str:
    """`reached top-1 >= 98% in 3.10 s (epoch 7)`, or the record's status and error."""
    if run_dir is None:
        return "no record"
    rec = load_record(run_dir)
    tta = rec["time_to_accuracy"]
    # a smoke test (e.g. squad trained on dev articles) says so wherever its outcome is shown
    smoke = any(str(f).startswith("SMOKE TEST") for f in rec.get("flags") or [])
    tail = " [SMOKE TEST: not a benchmark result]" if smoke else ""
    direction = rec["task"].get("direction") or "higher"
    goal = target_text(tta["metric"], tta["threshold"], direction)
    if tta["reached"]:
        return f"reached {goal} in {tta['time_s']:.2f} s (epoch {tta['epoch']}){tail}"
    if rec["status"] == "not_reached":
        evals = rec.get("evaluations") or []
        values = [
            e["metrics"][tta["metric"]]
            for e in evals
            if e["metrics"].get(tta["metric"]) is not None
        ]
        best = (min if direction == "lower" else max)(values, default=None)
        train_s = evals[-1].get("train_time_s") if evals else None
        times = (rec.get("throughput") or {}).get("epoch_times_s")
        epochs = len(times) if times else (evals[-1]["epoch"] if evals else 0)
        label = metric_info(tta["metric"]).label
        return (
            f"not reached: {goal} not met in {epochs} epoch{'s' * (epochs != 1)}"
            + (f" ({train_s:.2f} s of training)" if train_s is not None else "")
            + (f"; best {label} {metric_text(tta['metric'], best)}" if best is not None else "")
            + tail
        )
    return f"status {rec['status']}" + (f": {rec['error']}" if rec.get("error") else "") + tail


def run_in_process(options: RunOptions) -> tuple[Path | None, str | None, bool]:
    """One run here: (run folder, one-line error, fatal). `fatal` only for wrong options;
    a run that crashed gives its folder (its record says "crashed") and its error."""
    try:
        return run_workload(options), None, False
    except Terminated:
        raise  # SIGTERM ends every run still to come, not only this one
    except OPTIONS_ERRORS as exc:
        return None, str(exc).strip("'\""), True
    except Exception as exc:  # the record is already written with status "crashed"
        first = (str(exc).splitlines() or [""])[0]
        where = getattr(exc, "perfsuite_run_dir", None)
        return where, f"run crashed ({type(exc).__name__}: {first})", False


@dataclass
class LocalExecutor:
    """Runs on this machine, each run in a child process: `parallel` at a time, each with
    cpus / parallel threads when more than one. With `devices` (one per accelerator), each
    run side by side gets one of its own. One at a time, a run keeps its own thread choice
    and shows its progress live (the child writes to this process's stderr)."""

    parallel: int = 1
    devices: Sequence[str] = ()
    poll_s: float = 0.2

    def run(
        self,
        jobs: Sequence[Job],
        on_start: Callback | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[JobResult]:
        if self.parallel < 1:
            raise ValueError("parallel must be >= 1")
        if self.devices and len(self.devices) < self.parallel:
            raise ValueError(f"{self.parallel} runs side by side need as many devices")
        done: dict[int, JobResult] = {}
        queue = list(enumerate(jobs))
        running: list[tuple[int, Job, subprocess.Popen, int]] = []
        free = list(range(self.parallel))  # slots; slot k runs on devices[k] when given
        with sigterm_raises():
            try:
                self._loop(queue, running, free, done, on_start, on_result)
            except KeyboardInterrupt:
                # Ctrl-C reaches the children too (one process group): a SIGTERM now would cut
                # into each one's writing "interrupted by SIGINT" into its record
                for _, _, proc, _ in running:
                    _stop_child(proc, term_first=False)
                raise
            finally:  # SIGTERM, Ctrl-C or an error here: no child outlives this parent
                for _, _, proc, _ in running:
                    _stop_child(proc)
        return [done[i] for i in sorted(done)]

    def _options(self, job: Job, slot: int) -> RunOptions:
        """One at a time the run's own options; side by side the cores split, no progress."""
        if self.parallel == 1 and not self.devices:
            return job.options
        threads = job.options.threads or max(1, usable_cpus() // self.parallel)
        opts = replace(job.options, threads=threads, progress=False)
        return replace(opts, device=self.devices[slot]) if self.devices else opts

    def _loop(
        self,
        queue: list[tuple[int, Job]],
        running: list[tuple[int, Job, subprocess.Popen, int]],
        free: list[int],
        done: dict[int, JobResult],
        on_start: Callback | None,
        on_result: ResultCallback | None,
    ) -> None:
        alone = self.parallel == 1 and not self.devices
        stop = False
        while (queue and not stop) or running:
            while queue and not stop and free:
                i, job = queue.pop(0)
                slot = free.pop(0)
                if on_start:
                    on_start(job)
                running.append((i, job, _spawn(self._options(job, slot), live=alone), slot))
            time.sleep(self.poll_s)
            for entry in [e for e in running if e[2].poll() is not None]:
                running.remove(entry)
                i, job, proc, slot = entry
                free.append(slot)
                res = _child_result(job, proc)
                done[i] = res
                stop = stop or res.fatal
                if on_result:
                    on_result(res)
                if res.terminated:  # the run was stopped by SIGTERM: so is every run to come
                    raise Terminated(res.error or "terminated by SIGTERM")


def _stop_child(proc: subprocess.Popen, grace_s: float = 10.0, term_first: bool = True) -> None:
    """SIGTERM a child (its run records 'interrupted'), then SIGKILL if it lingers.
    `term_first` False: first give it `grace_s` to stop by itself (it has its own signal)."""
    if proc.poll() is not None:
        return
    steps = [proc.terminate, proc.kill] if term_first else [lambda: None, proc.terminate, proc.kill]
    for send in steps:
        send()
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the parent dies, even by SIGKILL."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's finally still stops children
        pass


def _spawn(opts: RunOptions, live: bool = False) -> subprocess.Popen:
    """A child with its options in a file and its output in files: pipes that nobody reads
    while the parent polls could fill up and block the child. `live`: its stderr (progress,
    warnings) goes straight to this process's stderr instead."""
    env = dict(os.environ)
    if opts.threads:
        env["OMP_NUM_THREADS"] = str(opts.threads)
    files = [tempfile.TemporaryFile("w+", encoding="utf-8") for _ in range(2 if live else 3)]  # noqa: SIM115
    files[0].write(json.dumps(asdict(opts)))
    files[0].seek(0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perfsuite.runner.launch.child"],
        stdin=files[0],
        stdout=files[1],
        stderr=None if live else files[2],
        text=True,
        env=env,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    proc.perfsuite_files = files  # type: ignore[attr-defined]
    return proc


def _child_result(job: Job, proc: subprocess.Popen) -> JobResult:
    files = proc.perfsuite_files  # type: ignore[attr-defined]
    for f in files:
        f.seek(0)
    out = files[1].read()
    err = files[2].read() if len(files) > 2 else ""
    for f in files:
        f.close()
    try:
        reply = json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        status = f"exit status {proc.returncode}"
        if len(files) == 2:  # its stderr went to ours
            return JobResult(job, None, f"child process failed ({status}; its output is above)")
        last = (err.strip().splitlines() or [status])[-1]
        return JobResult(job, None, f"child process failed: {last}")
    run_dir = Path(reply["run_dir"]) if reply.get("run_dir") else None
    return JobResult(
        job,
        run_dir,
        reply.get("error"),
        bool(reply.get("fatal")),
        bool(reply.get("terminated")),
    )
