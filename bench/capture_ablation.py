"""Which part of the untimed work before the clock moves the training clock?

`python -m bench capture_ablation` (not in the default `make bench` set: a diagnostic for
docs/seam.md's capture-parity tables). Both modes run the same untimed warm-up (a few steps,
then one at the size of the epoch's last, partial batch); capture on starts the NVML energy
and telemetry readers before the first epoch, and takes the FLOP-count detour (two steps of
the eager module, one under the op counter) after the last timed epoch. The
arms, each run a fresh process (`python -m bench.capture_ablation ARM DEVICE [DATA_DIR]`) in a
rotating order, after one uncounted run that fills the caches:
- `off`, `on`: the two modes as a user runs them;
- `off+count`: capture off, with the FLOP-count detour before the clock: whether the count's
  allocations change the clocked epochs (on the 2-core CPU they did: 4-7% slower, 2-3x the
  page faults per epoch, which is why capture counts after the last timed epoch);
- `off-notail`: the warm-up without its tail-size step.
cifar10 (3 epochs, the last evaluated), the cpu recipe at width 0.25 on 5,000 images here, the
cuda recipe where torch sees a GPU (PERFSUITE_BENCH_GPU_ONLY=1: that alone). Rounds:
PERFSUITE_BENCH_ROUNDS (default 3); PERFSUITE_BENCH_ARMS (comma-separated) picks arms.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.overhead import cifar_data, diagnostic_cifar, gpu_visible
from perfsuite.fmt import table

ARMS = ("off", "on", "off+count", "off-notail")


def _child(arm: str, device: str, data: str | None) -> None:
    """One run in this process with the arm's pre-clock work; prints its epochs as JSON."""
    from perfsuite.record import load_record
    from perfsuite.runner import RunOptions
    from perfsuite.runner.engine import capture
    from perfsuite.runner.routes import run as loop

    run_cls = loop._Run  # the runner's phases, patched for this process only
    if arm == "off+count":
        setup = run_cls._setup

        def _setup_and_count(self: loop._Run) -> None:
            setup(self)
            self._capture_work()

        run_cls._setup = _setup_and_count  # type: ignore[method-assign]
    elif arm == "off-notail":
        warm = capture.warm_up
        capture.warm_up = lambda wl, st, batches, steps, tail=0: warm(wl, st, batches, steps)
    kw = diagnostic_cifar(device, Path(data) if data else None)
    # the window follows the last timed epoch (no clock after it): 3 steps keep runs short
    kw["profile_seconds"] = 0.0
    with tempfile.TemporaryDirectory() as out:
        opts = RunOptions(
            workload="cifar10",
            out=out,
            capture=arm.startswith("on"),
            progress=False,
            keep_going=True,
            seed=0,
            **kw,
        )
        rec = load_record(loop.run_workload(opts))
    t = rec["throughput"]
    print(json.dumps({k: t.get(k) for k in ("epoch_times_s", "epoch_minor_faults")}))


def _arms(device: str, data: str | None, rounds: int, arms: list[str]) -> list[list[str]]:
    times: dict[str, list[list[float]]] = {a: [] for a in arms}
    # round 0, not counted: fills the peaks cache and the OS file cache (libraries, decoded
    # data) so no arm's epoch 1 pays for being first on the machine
    for r in range(rounds + 1):
        order = arms[r % len(arms) :] + arms[: r % len(arms)] if r else ["on"]
        for arm in order:
            argv = [sys.executable, "-m", "bench.capture_ablation", arm, device]
            done = subprocess.run(
                [*argv, *([data] if data else [])], capture_output=True, text=True, check=False
            )
            if done.returncode:
                tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
                raise RuntimeError(f"{arm} on {device} failed: {tail[0]}")
            got = json.loads(done.stdout.strip().splitlines()[-1])
            epochs = got["epoch_times_s"]
            if r:
                times[arm].append(epochs)
            shown = " ".join(f"{e:.3f}" for e in epochs)
            faults = got.get("epoch_minor_faults") or []
            print(f"{device} round {r} {arm}: epochs {shown} s, minor faults {faults}", flush=True)
    med = statistics.median
    base = times[arms[0]]
    rows = []
    for arm in arms:
        first = med(e[0] for e in times[arm])
        steady = med(med(e[1:]) for e in times[arm])
        rows.append(
            [
                device,
                arm,
                f"{first:.3f}",
                f"{first / med(e[0] for e in base):.3f}",
                f"{steady:.3f}",
                f"{steady / med(med(e[1:]) for e in base):.3f}",
            ]
        )
    return rows


def main() -> None:
    rounds = int(os.environ.get("PERFSUITE_BENCH_ROUNDS", "3"))
    data = cifar_data()
    devices = ["cuda"] if os.environ.get("PERFSUITE_BENCH_GPU_ONLY") else ["cpu"]
    if gpu_visible() and "cuda" not in devices:
        devices.append("cuda")
    arms = [a for a in os.environ.get("PERFSUITE_BENCH_ARMS", ",".join(ARMS)).split(",") if a]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        raise SystemExit(f"PERFSUITE_BENCH_ARMS: unknown arm(s) {unknown}; known: {ARMS}")
    rows: list[list[str]] = []
    for device in devices:
        if device == "cpu" and data is None:
            print("cpu: skipped (no extracted CIFAR-10 folder; see bench/overhead.py)")
            continue
        rows += _arms(device, str(data) if data else None, rounds, arms)
    vs = f"vs {arms[0]}"
    heads = ["device", "arm", "epoch 1 (s)", vs, "steady (s)", vs]
    print(table(rows, heads, align="llrrrr"))
    print(f"medians over {rounds} rounds; each run a fresh process, arms in a rotating order")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        _child(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        main()
