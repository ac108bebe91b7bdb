"""Instrumentation overhead: the same run with capture on and off, side by side.

Runs alternate on/off so drift on a shared machine hits both equally; each run is a fresh
process (bench/fresh.py), as a user's runs are. The ratios:
- epoch 1 on the training clock: one-off costs (lazy init, autotuning, first allocations) must
  land there the same way in both modes (both run the same untimed warm-up first);
- steady-state epochs (median of epochs 2..N) on the training clock;
- epoch 1 and steady state again in process CPU time on the same clock edges (all threads,
  telemetry's sampler included): time other guests of a shared host take is not in it (their
  cache and memory traffic still is), so it shows whether capture adds work to the clock
  when wall-time noise hides a 2% difference (on a 2-vCPU VM it was twice the wall time,
  OpenMP threads spinning, and as noisy: docs/seam.md);
- minor page faults per step in epoch 1 and steady state (`throughput.epoch_minor_faults`):
  not timing noise but the allocator's state; arms that differ here ran different memory
  traffic (on CPU the profile window changes how often large tensors are faulted in again);
- whole command wall time (the child process, its start included): adds the one-off capture
  work done outside the clock (FLOP count, profiler window, inference latency), which
  matters for short runs.
- lockstep pairs (bench/lockstep.py): on and off at the same time, one core and one torch
  thread each, every epoch started together, so the host's drift hits both alike; digits off
  vs off beside them is the instrument's noise floor (PERFSUITE_BENCH_LOCKSTEP_PAIRS, default
  9, the fewest whose median CI leaves out the extreme pairs; 0 leaves them out).
Set PERFSUITE_BENCH_PAIRS to change the number of on/off pairs (default 3; cifar10 gets one
fewer, or PERFSUITE_BENCH_CIFAR_PAIRS), PERFSUITE_BENCH_THREADS to fix torch's threads, and
PERFSUITE_BENCH_DIGITS_ONLY=1 to leave cifar10 out. cifar10 evaluates only its last epoch:
evaluation is off the training clock and would only lengthen the bench. Where torch sees a GPU,
a third arm runs cifar10 on it (PERFSUITE_BENCH_GPU_PAIRS pairs, default max(6, pairs);
PERFSUITE_BENCH_GPU_ONLY=1 runs that arm alone). Last, `perfsuite.track`'s rows
(bench/track_overhead.py: two script shapes, no perfsuite / capture off / on, page faults per
step around the detours; PERFSUITE_BENCH_TRACK_ROUNDS rounds, 0 leaves them out).
"""

from __future__ import annotations

import functools
import os
import statistics
import tempfile
from pathlib import Path

from perfsuite.fmt import table
from perfsuite.stats import median_ci

CIFAR_DIRS = [Path("../shared/data/cifar10"), Path("/tmp/perfsuite-bench-cifar10")]
# cifar10 sized for the 2-core CPU (the benches' CPU arms): the cpu recipe at width 0.25 on
# 5,000 training images
SMALL_CIFAR = {"recipe": "cpu", "overrides": ["train_limit=5000", "width=0.25"]}


def cifar_data() -> Path | None:
    """The first folder of CIFAR_DIRS holding an extracted CIFAR-10, or None."""
    return next((d for d in CIFAR_DIRS if (d / "train").is_dir()), None)


def diagnostic_cifar(device: str, data: Path | None) -> dict:
    """RunOptions fields of the diagnostics' cifar10 run: 3 epochs, the last evaluated, no
    batch-1 latency; SMALL_CIFAR on the CPU, the recipe for cuda on a GPU; synthetic data
    when no extracted CIFAR-10 is found."""
    kw: dict = {"epochs": 3, "eval_from": 3, "inference_repeats": 0, "device": device}
    if device == "cpu":
        kw.update(SMALL_CIFAR)
    kw.update({"data_dir": str(data)} if data else {"synthetic": True})
    return kw


def _one(workload: str, capture: bool, out: str, **kw) -> tuple[float, dict]:
    from bench.fresh import run_fresh
    from perfsuite.runner import RunOptions

    threads = os.environ.get("PERFSUITE_BENCH_THREADS")
    kw.setdefault("threads", int(threads) if threads else None)
    opts = RunOptions(
        workload=workload, out=out, capture=capture, progress=False, all_epochs=True, seed=0, **kw
    )
    return run_fresh(opts)


def ratio_row(
    label: str, what: str, off: list[float], on: list[float], digits: int = 4, unit: str = " s"
) -> list[str]:
    """A table row: both arms' medians, their ratio, and the paired ratios' median with CI.

    Paired: each on run against the off run next to it (or beside it, in lockstep), so slow
    drift of a shared machine cancels. The median of the pair ratios with its order-statistic
    CI: one repeat slowed many times over by a neighbour would drag a mean (and its
    bootstrap) far from every other pair."""
    med = statistics.median
    ratios = [a / b for a, b in zip(on, off, strict=True) if b > 0]  # faults can be 0
    ci = median_ci(ratios)
    ci_txt = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[n/a: < 6 pair ratios]"
    return [
        label,
        what,
        f"{med(off):.{digits}f}{unit}",
        f"{med(on):.{digits}f}{unit}",
        f"{med(on) / med(off):.3f}" if med(off) > 0 else "n/a",
        f"{med(ratios):.3f} {ci_txt}" if ratios else "n/a",
    ]


def _compare(label: str, workload: str, pairs: int, **kw) -> list[list[str]]:
    on_wall, off_wall, setups = [], [], []
    first: dict[bool, list[float]] = {True: [], False: []}
    steady: dict[bool, list[float]] = {True: [], False: []}
    cpu_first: dict[bool, list[float]] = {True: [], False: []}
    cpu_steady: dict[bool, list[float]] = {True: [], False: []}
    faults_first: dict[bool, list[float]] = {True: [], False: []}
    faults_steady: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as out:
        _one(workload, True, out, **kw)  # warm caches (peaks, dataset decode) for both arms
        for i in range(pairs):
            for capture in (True, False) if i % 2 == 0 else (False, True):  # no order bias
                wall, rec = _one(workload, capture, out, **kw)
                epochs = rec["throughput"]["epoch_times_s"]
                # a line per run as it ends: a bench cut short still leaves its pairs
                arm = "on " if capture else "off"
                times = " ".join(f"{e:.3f}" for e in epochs)
                print(f"{label}: pair {i + 1} capture {arm} epochs {times} s", flush=True)
                first[capture].append(epochs[0])
                steady[capture].append(statistics.median(epochs[1:] or epochs))
                cpu = rec["throughput"].get("epoch_cpu_times_s")
                if cpu:
                    cpu_first[capture].append(cpu[0])
                    cpu_steady[capture].append(statistics.median(cpu[1:] or cpu))
                faults = rec["throughput"].get("epoch_minor_faults")
                if faults:
                    steps = rec["extra"]["steps_per_epoch"]
                    per_step = [f / steps for f in faults]
                    faults_first[capture].append(per_step[0])
                    faults_steady[capture].append(statistics.median(per_step[1:] or per_step))
                (on_wall if capture else off_wall).append(wall)
                if capture:
                    setups.append(rec["extra"]["setup_s"])
    med = statistics.median
    keys = sorted({k for s in setups for k in s})
    setup_txt = ", ".join(f"{k}={med(s.get(k, 0.0) for s in setups):.3f}s" for k in keys)
    print(f"{label}: capture-on setup (median): {setup_txt}")

    row = functools.partial(ratio_row, label)
    rows = [
        row("epoch 1, training clock", first[False], first[True]),
        row("steady epochs, training clock", steady[False], steady[True]),
    ]
    if len(cpu_first[True]) == len(cpu_first[False]) == pairs:
        # Process CPU time on the same clock edges: what other guests of a shared host take
        # is not in it, so it isolates work that capture adds (its telemetry thread included).
        rows += [
            row("epoch 1, process CPU time", cpu_first[False], cpu_first[True]),
            row("steady epochs, process CPU time", cpu_steady[False], cpu_steady[True]),
        ]
    if len(faults_first[True]) == len(faults_first[False]) == pairs:
        # Minor page faults per step on the same edges: fresh pages the allocator asked the
        # kernel for. Not noise: a difference means the arms' allocators were in different
        # states (on CPU the profile window changes it), a cause of different epoch times.
        rows += [
            row("epoch 1, page faults / step", faults_first[False], faults_first[True], 0, ""),
            row("steady, page faults / step", faults_steady[False], faults_steady[True], 0, ""),
        ]
    return [*rows, row("whole run (wall)", off_wall, on_wall, 3)]


def _lockstep(label: str, workload: str, arms: tuple[str, str], pairs: int, kw: dict) -> list:
    """Rows of lockstep pairs (bench/lockstep.py): arms[0] against arms[1], epoch 1 and
    steady epochs, after one uncounted capture-on run that fills the caches (decoded data, the
    ceilings) so that no pair's two runs write them at once."""
    from bench.lockstep import lockstep_pairs

    with tempfile.TemporaryDirectory() as out:
        _one(workload, True, out, threads=1, **kw)
    runs = lockstep_pairs(workload, arms, pairs, kw, label)
    # by position, not by arm name: off vs off has two arms of one name
    first = [[r[i][0] for r in runs] for i in (0, 1)]
    steady = [[statistics.median(r[i][1:] or r[i]) for r in runs] for i in (0, 1)]
    label = f"{label}, {arms[0]} vs {arms[1]}"
    return [
        ratio_row(label, "epoch 1, training clock", first[1], first[0]),
        ratio_row(label, "steady epochs, training clock", steady[1], steady[0]),
    ]


def _lockstep_rows(data: Path | None) -> list[list[str]]:
    """digits off vs off (the instrument's noise floor) and on vs off, cifar10 on vs off where
    its data is extracted; PERFSUITE_BENCH_LOCKSTEP_PAIRS pairs each (default 9, 0: none)."""
    pairs = int(os.environ.get("PERFSUITE_BENCH_LOCKSTEP_PAIRS", "9"))
    if pairs <= 0:
        print("lockstep pairs: left out (PERFSUITE_BENCH_LOCKSTEP_PAIRS=0)")
        return []
    from bench.lockstep import cores_for_pairs

    if cores_for_pairs() is None:
        print("lockstep pairs: skipped (they need two CPUs, this process may use one)")
        return []
    # only the clock is compared: a short window and no batch-1 latency keep the runs short
    quick = {"profile_seconds": 0.0, "measure_peaks": False, "inference_repeats": 0}
    digits = {"epochs": 8, **quick}  # 7 steady epochs: a steadier median of 0.3 s epochs
    label = "digits lockstep (8 epochs, 1 thread each)"
    rows = _lockstep(label, "digits", ("off", "off"), pairs, digits)
    rows += _lockstep(label, "digits", ("on", "off"), pairs, digits)
    if data is not None:
        cifar = {**diagnostic_cifar("cpu", data), **quick}
        label = "cifar10 lockstep (3 epochs, 5,000 images, width 0.25, 1 thread each)"
        rows += _lockstep(label, "cifar10", ("on", "off"), pairs, cifar)
    return rows


def gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.version.cuda is not None and torch.cuda.is_available()


def main() -> None:
    pairs = int(os.environ.get("PERFSUITE_BENCH_PAIRS", "3"))
    gpu_only = bool(os.environ.get("PERFSUITE_BENCH_GPU_ONLY"))
    data = cifar_data()
    rows: list[list[str]] = []
    if not gpu_only:
        rows += _compare("digits (5 epochs)", "digits", pairs, epochs=5, measure_peaks=True)
    if os.environ.get("PERFSUITE_BENCH_DIGITS_ONLY") or gpu_only:
        print("cifar10 on CPU: left out (PERFSUITE_BENCH_DIGITS_ONLY or _GPU_ONLY)")
    elif data is None:
        print(
            "cifar10: skipped (extract ../shared/data/cifar10-jpeg.tar.gz into "
            f"{CIFAR_DIRS[-1]} to include it)"
        )
    else:
        cifar_pairs = int(os.environ.get("PERFSUITE_BENCH_CIFAR_PAIRS", str(max(1, pairs - 1))))
        rows += _compare(
            "cifar10 (3 epochs, 5,000 images, width 0.25)",
            "cifar10",
            cifar_pairs,
            epochs=3,
            data_dir=str(data),
            **SMALL_CIFAR,
            inference_repeats=20,
            eval_from=3,
        )
    if not gpu_only:
        rows += _lockstep_rows(data)
    if gpu_visible():
        # The GPU case: cifar10's own recipe on the GPU, 3 epochs, the last evaluated,
        # real data where it is extracted (else synthetic, said in the label).
        gpu_pairs = int(os.environ.get("PERFSUITE_BENCH_GPU_PAIRS", str(max(6, pairs))))
        rows += _compare(
            f"cifar10 on cuda (3 epochs, {'real' if data else 'synthetic'} data)",
            "cifar10",
            gpu_pairs,
            device="cuda",
            epochs=3,
            data_dir=str(data) if data else None,
            synthetic=data is None,
            inference_repeats=0,  # batch-1 latency is off the clock: ~50 s a run for nothing
            eval_from=3,
        )
    else:
        print("cuda: no GPU visible to torch here, so no GPU arm")
    print(
        table(
            rows,
            ["run", "what", "capture off", "capture on", "on/off", "paired median [95% CI]"],
            align="llrrrr",
        )
    )
    print(
        "on/off = median with instrumentation / median without; paired = median of the "
        "per-pair ratios with its distribution-free 95% CI (order statistics; needs 6 pairs); "
        "target <= 1.02 on the training clock. Lockstep: the two arms at once, one core "
        "each, every epoch started together (bench/lockstep.py); off vs off is its noise."
    )
    if int(os.environ.get("PERFSUITE_BENCH_TRACK_ROUNDS", "5")) > 0 and not gpu_only:
        from bench import track_overhead

        track_overhead.main()
