"""`perfsuite.track`'s overhead on two real script shapes: does capture leave the process as it
found it?

Three arms of one training script, each a fresh process with one torch thread, run as
interleaved triples (order rotated each round, so a shared machine's drift hits all alike):
- `none`: the loop without perfsuite imported;
- `off`: under `perfsuite.track(capture=False)`;
- `on`: under `perfsuite.track()` with its detours (FLOP count, ceilings, profile window,
  machine check), the ceilings cache warmed once before the rounds.
Shapes: `mlp`, the repro of a large-matmul loop (128-512-128 MLP, AdamW, 1,536 rows a step,
3 epochs of 60 steps), and `transformer`, examples/nanogpt_loop.py's model and step (gradient
accumulation over 2 micro-batches, clipping, its learning-rate rule, two AdamW groups).

Each user step is read alone (main-thread CPU time, wall time, the process's minor page faults
around the user's own call, not the detours' replays), so the figures are the user's steps,
step for step. Reported per shape: page faults per step in each stretch between detours (the
`on` arm's detours fall on the same steps in every round) and the steady-step ratios on/off and
on/none, CPU time and wall, from the paired rounds. Goals (docs/seam.md): on/off within
0.98-1.02 and page faults per step unchanged by any detour. PERFSUITE_BENCH_TRACK_ROUNDS sets
the rounds (default 5; 6 or more give the paired ratios a 95% CI), PERFSUITE_BENCH_TRACK_SHAPES
the shapes (comma-separated; default both).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ARMS = ("none", "off", "on")
SHAPES = {"mlp": (3, 60), "transformer": (3, 30)}  # (epochs, steps per epoch)
ROOT = Path(__file__).resolve().parent.parent


class StepLog:
    """Wraps a step function: each call's main-thread CPU seconds, wall seconds and the
    process's minor page faults, in call order."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, []

    def __call__(self, *args: Any) -> Any:
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        c0, w0 = time.thread_time(), time.perf_counter()
        out = self.fn(*args)
        w1, c1 = time.perf_counter(), time.thread_time()
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        self.calls.append((c1 - c0, w1 - w0, f1 - f0))
        return out


def _mlp() -> tuple[Any, Any, Any, int]:
    """(model, optimizer, step(x, y), rows): the repro's two-layer MLP."""
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 128))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x: Any, y: Any) -> Any:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return model, opt, step, 1536


def _transformer() -> tuple[Any, Any, Any, int]:
    """(model, optimizer, step(xs, ys), samples): examples/nanogpt_loop.py's, at its peak
    learning rate."""
    import torch

    sys.path.insert(0, str(ROOT / "examples"))
    import nanogpt_loop as ex

    model = ex.GPT(65)
    opt = torch.optim.AdamW(ex.optimizer_groups(model), lr=ex.LR, betas=(0.9, 0.95))
    train_step = ex.make_step(model, opt)

    def step(xs: Any, ys: Any) -> Any:
        return train_step(xs, ys, ex.LR)

    return model, opt, step, ex.BATCH * ex.ACCUM


def _batches(shape: str, n: int) -> list[Any]:
    import torch

    g = torch.Generator().manual_seed(0)
    if shape == "mlp":
        return [(torch.randn(1536, 128, generator=g), torch.randn(1536, 128, generator=g))] * n
    ids = torch.randint(0, 65, (n, 2, 8, 33), generator=g)
    return [(w[..., :-1].contiguous(), w[..., 1:].contiguous()) for w in ids]


def child(shape: str, arm: str, out: str) -> dict[str, Any]:
    """One arm's run in this process: the user's steps, and which steps had detours."""
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, opt, step, size = (_mlp if shape == "mlp" else _transformer)()
    epochs, per_epoch = SHAPES[shape]
    log = StepLog(step)
    data = _batches(shape, per_epoch)
    user_steps: list[int] = []  # index into log.calls of each loop step's own call
    if arm == "none":
        for _ in range(epochs):
            for x, y in data:
                log(x, y)
                user_steps.append(len(log.calls) - 1)
    else:
        import perfsuite

        with perfsuite.track(
            f"bench-{shape}", threshold=0.0, metric="loss", direction="lower", model=model,
            optimizer=opt, epochs=epochs, batch_size=size, out=out, capture=arm == "on",
        ) as run:  # fmt: skip
            for _ in range(epochs):
                for x, y in run.epoch(data):
                    run.step(log, x, y, batch_size=size)
                    user_steps.append(len(log.calls) - 1)
    detoured = [i for i, k in enumerate(user_steps) if k > (user_steps[i - 1] + 1 if i else 0)]
    return {"steps": [log.calls[k] for k in user_steps], "detoured": detoured}


def _run_child(shape: str, arm: str, out: str) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "bench.track_overhead", "--child", shape, arm, out]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{shape}/{arm}: {res.stderr.strip().splitlines()[-1:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def stretches(per_epoch: int, epochs: int) -> list[tuple[int, int]]:
    """[start, end) step ranges: step 1, step 2, the rest of epoch 1, the first step of epoch
    2, and the rest: where a track whose detours ran inside the loop took them (the FLOP count
    before step 2, the window at the middle epoch's start), so each stretch is before or after
    one of them in either placement."""
    e = per_epoch
    return [(0, 1), (1, 2), (2, e), (e, e + 1), (e + 1, epochs * e)]


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def paired(on: list[float], base: list[float]) -> str:
    """The median of the per-round ratios on/base with its distribution-free 95% CI."""
    from perfsuite.stats import median_ci

    ratios = [x / y for x, y in zip(on, base, strict=True) if y > 0]
    if not ratios:
        return "n/a"
    ci = median_ci(ratios)
    ci_txt = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[n/a: < 6 rounds]"
    return f"{statistics.median(ratios):.3f} {ci_txt}"


def shape_rows(shape: str, rounds: int) -> list[list[str]]:
    """The rows of one shape: faults per step per stretch between detours, and the steady
    step's CPU time and wall time, each arm's median and the paired ratios."""
    runs: dict[str, list[dict]] = {a: [] for a in ARMS}
    with tempfile.TemporaryDirectory() as out:
        _run_child(shape, "on", out)  # the ceilings cache filled once, for every `on` run
        for r in range(rounds):
            for arm in ARMS[r % 3 :] + ARMS[: r % 3]:
                runs[arm].append(_run_child(shape, arm, out))
            print(f"track {shape}: round {r + 1} of {rounds}", flush=True)
    detoured = runs["on"][0]["detoured"]
    where = ", ".join(str(d + 1) for d in detoured) or "none"
    print(f"track {shape}: the `on` arm's detours ran before step(s) {where}")
    rows = []
    for k, what, digits in [(2, "page faults / step", 0), (0, "step CPU time, s", 5),
                            (1, "step wall, s", 5)]:  # fmt: skip
        parts = stretches(SHAPES[shape][1], SHAPES[shape][0])
        for a, b in parts if k == 2 else parts[-1:]:
            per = {arm: [_median([s[k] for s in run["steps"][a:b]]) for run in runs[arm]]
                   for arm in ARMS}  # fmt: skip
            rows.append(
                [f"track {shape}", f"{what}, steps {a + 1}-{b}"]
                + [f"{_median(per[arm]):.{digits}f}" for arm in ARMS]
                + [paired(per["on"], per["off"]), paired(per["on"], per["none"])]
            )
    return rows


def main() -> None:
    from perfsuite.fmt import table

    rounds = int(os.environ.get("PERFSUITE_BENCH_TRACK_ROUNDS", "5"))
    shapes = os.environ.get("PERFSUITE_BENCH_TRACK_SHAPES", ",".join(SHAPES)).split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        raise SystemExit(f"PERFSUITE_BENCH_TRACK_SHAPES: unknown shape(s) {', '.join(unknown)}")
    rows = [r for shape in shapes for r in shape_rows(shape, rounds)]
    heads = ["run", "what", "none", "off", "on", "on/off paired [95% CI]", "on/none paired"]
    print(table(rows, heads, align="llrrrll"))
    print(
        "per arm: the median over rounds of each run's median over the steps named; paired: "
        "the median of the per-round ratios. Goals: steady on/off within 0.98-1.02; page "
        "faults per step alike in every stretch (detours change no allocator state)."
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(*sys.argv[2:5])))
    else:
        main()
