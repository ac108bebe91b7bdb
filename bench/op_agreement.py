"""Do repeated runs agree on per-op roof fractions, and do per-op times add up to the step?

`python -m bench op_agreement`: the same run (capture on, seeds differ) repeated, each in a
fresh process as `perfsuite run --repeats` does (bench/fresh.py), then for every
op the FLOP model and the profile window both know: its fraction of its roof in each run and the
spread max/min - 1. Ops that take a small share of the step are listed but judged separately:
their profiled times are a few microseconds, where the profiler's own cost per call is of the
same size. Also per run: profiled op time + the "other" row against the measured step time.

The roof comes from the ceilings cache, so it is the same number in every run and the spread
is the spread of the profiled op times. Each run's machine check (the roofs' own benchmarks
next to its window, docs/roofline.md) is printed with it, and a second spread divides every
fraction by its window's speed: how much of the spread a drifting machine explains.
Env: PERFSUITE_BENCH_REPEATS (default 3),
PERFSUITE_BENCH_SHARE (share of the step above which an op is judged, default 0.05),
PERFSUITE_BENCH_PROFILE_SECONDS (the run's --profile-seconds; 0 gives the old 3-step window),
PERFSUITE_BENCH_THREADS (torch threads; default: torch's own choice).
Where torch sees a GPU, digits and cifar10 (its cuda recipe, real data where extracted) run on
it as well (PERFSUITE_BENCH_GPU_ONLY=1: those alone); per-op times there are kernel times.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from bench.overhead import SMALL_CIFAR, cifar_data, gpu_visible
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.fmt import table

HEADERS = [
    "run",
    "op",
    "share",
    "fraction of roof per run",
    "spread",
    "over check",
    "step CV",
    "judged",
]


def _runs(workload: str, repeats: int, out: str, **kw) -> list[dict]:
    from bench.fresh import run_fresh
    from perfsuite.runner import RunOptions

    records = []
    kw.setdefault(
        "profile_seconds", float(os.environ.get("PERFSUITE_BENCH_PROFILE_SECONDS", "1.0"))
    )
    threads = os.environ.get("PERFSUITE_BENCH_THREADS")
    for seed in range(repeats):
        opts = RunOptions(
            workload=workload,
            out=out,
            progress=False,
            all_epochs=True,
            seed=seed,
            threads=int(threads) if threads else None,
            **kw,
        )
        records.append(run_fresh(opts)[1])
        steps = records[-1]["throughput"]["epoch_times_s"]
        print(f"{workload} seed {seed}: epochs {' '.join(f'{e:.3f}' for e in steps)} s", flush=True)
    return records


def _report(label: str, records: list[dict], min_share: float) -> None:
    fracs: dict[str, list[float]] = {}
    adjusted: dict[str, list[float | None]] = {}
    shares: dict[str, list[float]] = {}
    cvs: dict[str, list[float]] = {}
    sums, checks = [], []
    for rec in records:
        rl = roofline(rec)
        speed = {s.kind: s.ratio for s in rl.machine_check}
        checks.append(
            " ".join(f"{k} {v:.0%}" for k, v in sorted(speed.items())) or "no machine check"
        )
        for op in rl.ops:
            if op.status != "joined":
                continue
            # None: above its roof, flagged as a model/ceiling error (not a fraction)
            f = op.placement.frac_of_roof
            fracs.setdefault(op.op, []).append(f)
            ratio = speed.get("matmul" if op.placement.bound == "compute" else "copy")
            adjusted.setdefault(op.op, []).append(f / ratio if f is not None and ratio else None)
            shares.setdefault(op.op, []).append(op.time_share or 0.0)
            if op.step_cv is not None:
                cvs.setdefault(op.op, []).append(op.step_cv)
        if rl.time_rows is not None:
            total = sum(r.time_s for r in rl.time_rows.rows)
            tr = rl.time_rows
            sums.append(
                f"{tr.attributed_s * 1e3:.3f} ms profiled + other = {total * 1e3:.3f} ms vs "
                f"measured {tr.measured_step_s * 1e3:.3f} ms "
                f"(profiled/measured {tr.attributed_s / tr.measured_step_s:.3f})"
            )
    rows, judged, judged_adj = [], [], []
    for op, fs in sorted(fracs.items(), key=lambda kv: -statistics.median(shares[kv[0]])):
        share = statistics.median(shares[op])
        spread, adj = _spread(fs, len(records)), _spread(adjusted[op], len(records))
        big = share >= min_share
        if big:
            judged.append(spread if spread is not None else float("inf"))
            judged_adj.append(adj if adj is not None else float("inf"))
        rows.append(
            [
                label,
                op,
                f"{share:.1%}",
                " ".join("flagged" if f is None else f"{f:.1%}" for f in fs),
                "n/a" if spread is None else f"{spread:.1%}",
                "n/a" if adj is None else f"{adj:.1%}",
                f"{statistics.median(cvs[op]):.0%}" if cvs.get(op) else "n/a",
                "yes" if big else "no",
            ]
        )
    print(f"\n{label}: per-op times against the measured step")
    for line, check in zip(sums, checks, strict=False):
        print(f"  {line}; machine check: {check}")
    worst = f"{max(judged):.1%}" if judged else "n/a"
    worst_adj = f"{max(judged_adj):.1%}" if judged_adj else "n/a"
    print(
        f"  ops with >= {min_share:.0%} of the step: {len(judged)}, largest spread {worst} "
        f"(over the machine check's speed: {worst_adj})"
    )
    print(table(rows, HEADERS, align="llrlrrrl"), flush=True)  # each group as it ends


def _spread(values: list[float | None], runs: int) -> float | None:
    """max/min - 1 when every run has a value, else None."""
    ok = [v for v in values if v is not None]
    return max(ok) / min(ok) - 1 if len(ok) == runs and min(ok) > 0 else None


def _gpu_groups(repeats: int, out: str, data: Path | None, min_share: float) -> None:
    """The same question on the GPU: digits, and cifar10 with its own cuda recipe. A 0.1 s
    window is already tens of steps there (a 1 s one would be a trace of hundreds of MB)."""
    try:  # digits needs scikit-learn, which a GPU box may lack: cifar10 still runs
        digits = _runs("digits", repeats, out, epochs=5, device="cuda", profile_seconds=0.1)
        _report("digits on cuda", digits, min_share)
    except (ImportError, RuntimeError) as exc:
        print(f"digits on cuda: not run ({type(exc).__name__}: {exc})", flush=True)
    src = {"data_dir": str(data)} if data else {"synthetic": True}
    recs = _runs(
        "cifar10",
        repeats,
        out,
        epochs=2,
        eval_from=2,
        device="cuda",
        inference_repeats=0,
        profile_seconds=0.1,
        **src,
    )
    label = f"cifar10 on cuda ({'real' if data else 'synthetic'} data)"
    _report(label, recs, min_share)


def main() -> None:
    repeats = int(os.environ.get("PERFSUITE_BENCH_REPEATS", "3"))
    min_share = float(os.environ.get("PERFSUITE_BENCH_SHARE", "0.05"))
    gpu_only = bool(os.environ.get("PERFSUITE_BENCH_GPU_ONLY"))
    with tempfile.TemporaryDirectory() as out:
        if not gpu_only:
            _report("digits", _runs("digits", repeats, out, epochs=5), min_share)
        data = cifar_data()
        if gpu_only or os.environ.get("PERFSUITE_BENCH_DIGITS_ONLY"):
            pass  # no cifar10 on the CPU
        elif data is None:
            print("cifar10: skipped (no extracted CIFAR-10 folder; see bench/overhead.py)")
        else:
            recs = _runs(
                "cifar10",
                repeats,
                out,
                epochs=3,
                data_dir=str(data),
                **SMALL_CIFAR,
                inference_repeats=20,
                eval_from=3,
            )
            _report("cifar10 (cpu recipe, width 0.25)", recs, min_share)
        if gpu_visible():
            _gpu_groups(repeats, out, data, min_share)
    print(
        "spread = max/min - 1 over the runs; goal: <= 10% for judged ops. flagged: above its "
        "roof in that run (a roof/model error, shown as no fraction); n/a: not in every run. "
        "over check: the spread of fraction / the machine check's speed in each window "
        "(matmul for compute-bound ops, copy for memory-bound; a modeled correction for a "
        "contended machine, not a result). step CV: median over the runs of the op's time "
        "spread across its window's steps."
    )
