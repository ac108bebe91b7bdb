"""Lockstep pairs: two runs at once, one core each, every epoch started and ended together.

Why: on a shared VM a run's speed drifts 10-15% from one minute to the next (docs/seam.md,
"Capture parity"), more than the 2% the overhead bench looks for, so sequential on/off pairs
need many repeats to say anything. Two runs side by side, each pinned to a core of its own
with one torch thread, that wait for each other at a barrier before and after every epoch,
see the same host in the same seconds: the pair's ratio cancels the drift. What they share
(memory bandwidth, the last-level cache) both see alike; the cores swap every pair and the
launch order every second pair. Off/off pairs measure the instrument's own noise floor.

What it measures: whether capture adds work to a one-thread training clock (capture's
telemetry thread shares its run's core). It is not the default-thread epoch time of a user's
run; `bench/overhead.py`'s sequential pairs are that.

The barriers are outside the clock: the runner's `_Run._train_epoch` is wrapped in the child
process only (`python -m bench.lockstep ...`, as bench/capture_ablation.py patches its arms).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARRIER_TIMEOUT_S = 900.0


def cores_for_pairs() -> tuple[int, int] | None:
    """Two CPUs this process may use, or None when it has fewer."""
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1]) if len(cpus) >= 2 else None


def _barrier(folder: Path, name: str, me: str, other: str) -> None:
    """Wait until the other run reaches `name` too (a file each; polled, off the clock)."""
    (folder / f"{name}.{me}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while not (folder / f"{name}.{other}").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"lockstep: the other run never reached {name}")
        time.sleep(0.0005)


def _child(argv: list[str]) -> None:
    """One run of a pair: `ARM CPU ME OTHER FOLDER WORKLOAD KWARGS_JSON`; prints its epochs."""
    arm, cpu, me, other, folder, workload, kw_json = argv
    os.sched_setaffinity(0, {int(cpu)})  # before torch starts its thread pool

    from perfsuite.record import load_record
    from perfsuite.runner import RunOptions
    from perfsuite.runner.routes import run as loop

    train_epoch = loop._Run._train_epoch

    def in_lockstep(self: loop._Run, epoch: int) -> tuple[float, float, int, int]:
        _barrier(Path(folder), f"start{epoch}", me, other)
        result = train_epoch(self, epoch)
        _barrier(Path(folder), f"end{epoch}", me, other)  # no off-clock work beside a clock
        return result

    loop._Run._train_epoch = in_lockstep  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as out:
        opts = RunOptions(
            workload=workload,
            out=out,
            capture=arm == "on",
            progress=False,
            keep_going=True,
            seed=0,
            threads=1,
            **json.loads(kw_json),
        )
        rec = load_record(loop.run_workload(opts))
    print(json.dumps(rec["throughput"]["epoch_times_s"]))


def _wait_both(procs: list[subprocess.Popen], errs: list[Path]) -> list[str]:
    """Both children's stdout; the first that fails stops the other (it would wait in vain)."""
    while True:
        codes = [p.poll() for p in procs]  # every one, each time (any() would stop early)
        if None not in codes:
            break
        if any(code not in (None, 0) for code in codes):
            for p in procs:
                p.kill()
            break
        time.sleep(0.1)
    outs = [p.communicate()[0] for p in procs]
    # the run that failed on its own first, not the partner this loop killed
    for p, err in sorted(zip(procs, errs, strict=True), key=lambda pe: pe[0].returncode < 0):
        if p.returncode != 0:
            tail = err.read_text(errors="replace").strip().splitlines()[-1:] or ["killed"]
            raise RuntimeError(f"lockstep run failed (rc {p.returncode}): {tail[0]}")
    return outs


def lockstep_pairs(
    workload: str, arms: tuple[str, str], pairs: int, kw: dict, label: str
) -> list[tuple[list[float], list[float]]]:
    """Epoch times of `pairs` lockstep pairs, (arms[0]'s, arms[1]'s) each; cores swap per pair.

    `kw`: RunOptions fields (JSON-able). Every pair is two fresh processes."""
    cores = cores_for_pairs()
    if cores is None:
        raise RuntimeError("lockstep pairs need two CPUs")
    results = []
    for i in range(pairs):
        # cores swap every pair, the launch order every second pair: every arm runs on each
        # core, launched first and second, equally often (in 4-pair cycles)
        placed = cores if i % 2 == 0 else cores[::-1]
        with tempfile.TemporaryDirectory() as folder:
            sides = [(arms[0], placed[0], "a", "b"), (arms[1], placed[1], "b", "a")]
            launch = sides if (i // 2) % 2 == 0 else sides[::-1]
            procs, errs = {}, {}
            for arm, cpu, me, other in launch:
                argv = [arm, str(cpu), me, other, folder, workload, json.dumps(kw)]
                errs[me] = Path(folder, f"{me}.err")  # a file: a pipe could fill and block
                with errs[me].open("w") as fh:  # the child keeps its own copy of the handle
                    procs[me] = subprocess.Popen(
                        [sys.executable, "-m", "bench.lockstep", *argv],
                        stdout=subprocess.PIPE,
                        stderr=fh,
                        text=True,
                    )
            outs = _wait_both([procs["a"], procs["b"]], [errs["a"], errs["b"]])
        a, b = (json.loads(out.strip().splitlines()[-1]) for out in outs)
        results.append((a, b))
        show = " / ".join(" ".join(f"{e:.3f}" for e in x) for x in (a, b))
        where = f"{arms[0]} on cpu {placed[0]}, launched {'first' if launch is sides else 'second'}"
        print(f"{label}: pair {i + 1} ({where}): epochs {show} s", flush=True)
    return results


if __name__ == "__main__":
    _child(sys.argv[1:])
