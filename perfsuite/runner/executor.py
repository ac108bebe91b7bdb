"""Running many runs: one interface for `run --repeats`, studies, and any engine behind them.

An executor takes jobs (one `RunOptions` each, with a key saying which configuration it
belongs to) and returns one `JobResult` per job, calling back when a job starts and ends so
the caller can show progress per configuration. `LocalExecutor` runs them in this process one
after another (the default: timings are not disturbed by a neighbour), or side by side in
child processes with the cores split between them. `perfsuite.runner.ray_executor` runs them
on a Ray cluster. A job whose options are wrong (unknown switch, missing data) is `fatal`:
no further job starts, since every other job would fail the same way.
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

from perfsuite.runner.loop import RunOptions, Terminated


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


def config_error_types() -> tuple[type[BaseException], ...]:
    """Exceptions that mean the options are wrong, not that the run crashed."""
    from perfsuite.workloads.cifar_data import DataError

    return (ValueError, KeyError, DataError)


def outcome(run_dir: Path | None) -> str:
    """`reached top-1 >= 98% in 3.10 s (epoch 7)`, or the record's status and error."""
    from analyzers.tasks import target_text
    from perfsuite.record import load_record

    if run_dir is None:
        return "no record"
    rec = load_record(run_dir)
    tta = rec["time_to_accuracy"]
    # a smoke test (e.g. squad trained on dev articles) says so wherever its outcome is shown
    smoke = any(str(f).startswith("SMOKE TEST") for f in rec.get("flags") or [])
    tail = " [SMOKE TEST: not a benchmark result]" if smoke else ""
    if tta["reached"]:
        goal = target_text(
            tta["metric"], tta["threshold"], rec["task"].get("direction") or "higher"
        )
        what = f"reached {goal} in {tta['time_s']:.2f} s"
        return what + f" (epoch {tta['epoch']}){tail}"
    return f"status {rec['status']}" + (f": {rec['error']}" if rec.get("error") else "") + tail


def run_in_process(options: RunOptions) -> tuple[Path | None, str | None, bool]:
    """One run here: (run folder, one-line error, fatal)."""
    from perfsuite.runner import run_workload

    try:
        return run_workload(options), None, False
    except Terminated:
        raise  # SIGTERM ends every run still to come, not only this one
    except config_error_types() as exc:
        return None, str(exc).strip("'\""), True
    except Exception as exc:  # the record is already written with status "crashed"
        first = (str(exc).splitlines() or [""])[0]
        where = getattr(exc, "perfsuite_run_dir", None)
        return where, f"run crashed ({type(exc).__name__}: {first})", False


@dataclass
class LocalExecutor:
    """Runs on this machine: `parallel` runs at a time, each with cpus / parallel threads.
    With `devices` (one per accelerator), each run side by side gets one of its own."""

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
        if self.parallel == 1 and not self.devices:
            return self._sequential(jobs, on_start, on_result)
        return self._side_by_side(jobs, on_start, on_result)

    def _sequential(
        self, jobs: Sequence[Job], on_start: Callback | None, on_result: ResultCallback | None
    ) -> list[JobResult]:
        results = []
        for job in jobs:
            if on_start:
                on_start(job)
            run_dir, error, fatal = run_in_process(job.options)
            res = JobResult(job, run_dir, error, fatal)
            results.append(res)
            if on_result:
                on_result(res)
            if fatal:
                break
        return results

    def _side_by_side(
        self, jobs: Sequence[Job], on_start: Callback | None, on_result: ResultCallback | None
    ) -> list[JobResult]:
        import signal

        done: dict[int, JobResult] = {}
        queue = list(enumerate(jobs))
        running: list[tuple[int, Job, subprocess.Popen, int]] = []
        free = list(range(self.parallel))  # slots; slot k runs on devices[k] when given

        def on_term(signum: int, frame: object) -> None:
            raise Terminated("terminated by SIGTERM")

        try:
            previous = signal.signal(signal.SIGTERM, on_term)
        except ValueError:  # not the main thread: the caller handles signals
            previous = None
        try:
            self._loop(queue, running, free, done, on_start, on_result)
        finally:  # SIGTERM, Ctrl-C or an error here: no child outlives this parent
            for _, _, proc, _ in running:
                _stop_child(proc)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
        return [done[i] for i in sorted(done)]

    def _loop(
        self,
        queue: list[tuple[int, Job]],
        running: list[tuple[int, Job, subprocess.Popen, int]],
        free: list[int],
        done: dict[int, JobResult],
        on_start: Callback | None,
        on_result: ResultCallback | None,
    ) -> None:
        from perfsuite.hostinfo import usable_cpus

        stop = False
        while (queue and not stop) or running:
            while queue and not stop and free:
                i, job = queue.pop(0)
                slot = free.pop(0)
                threads = job.options.threads or max(1, usable_cpus() // self.parallel)
                opts = replace(job.options, threads=threads, progress=False)
                if self.devices:
                    opts = replace(opts, device=self.devices[slot])
                if on_start:
                    on_start(job)
                running.append((i, job, _spawn(opts), slot))
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


def _stop_child(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM a child (its run records 'interrupted'), then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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


def _spawn(opts: RunOptions) -> subprocess.Popen:
    """A child with its options in a file and its output in files: pipes that nobody reads
    while the parent polls could fill up and block the child."""
    env = {**os.environ, "OMP_NUM_THREADS": str(opts.threads)}
    files = [tempfile.TemporaryFile("w+", encoding="utf-8") for _ in range(3)]  # noqa: SIM115
    files[0].write(json.dumps(asdict(opts)))
    files[0].seek(0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perfsuite.runner.child"],
        stdin=files[0],
        stdout=files[1],
        stderr=files[2],
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
    out, err = files[1].read(), files[2].read()
    for f in files:
        f.close()
    try:
        reply = json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        last = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return JobResult(job, None, f"child process failed: {last}", False)
    run_dir = Path(reply["run_dir"]) if reply.get("run_dir") else None
    return JobResult(job, run_dir, reply.get("error"), bool(reply.get("fatal")))
