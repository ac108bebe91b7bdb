"""Sizing the fast CIFAR-10 recipe for a CPU, and a quick check that its pieces learn.

`python -m bench.cifar_fast_steps` (or `python -m bench cifar_fast_steps`): for candidate
conv-group widths, one training step (forward, summed label-smoothed loss, backward, SGD) at the
CPU preset's batch size, timed in NCHW and in channels_last (fp32), with the FLOP per step from
perfsuite's counter; prints s/step, achieved GFLOP/s, estimated s/epoch (50,000 images) and
epochs that fit in 45 minutes. Steps are short on purpose: the machine may be shared, so report
the figures as measured on a possibly busy CPU.
Env: PERFSUITE_FAST_WIDTHS="64,256,256;48,192,192", PERFSUITE_FAST_BATCH=512,
PERFSUITE_FAST_STEPS=3 (timed steps after one warm-up step).

`python -m bench.cifar_fast_steps --sanity DATA_DIR`: one epoch of the CPU preset's network
and optimizer on a balanced 5,000-image subset of the training set, then top-1 on the first
2,000 test images at TTA levels 0 and 2.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch

from perfsuite.fmt import table
from perfsuite.workloads.cifar10.airbench.net import build_fast_net, init_whitening, parse_widths
from perfsuite.workloads.cifar10.airbench.optim import fast_loss, make_fast_optimizer
from perfsuite.workloads.cifar10.airbench.presets import PRESETS
from perfsuite.workloads.cifar10.airbench.views import random_translate, tta_logits

EPOCH_IMAGES = 50_000
BUDGET_S = 45 * 60


def _step_times(widths, batch: int, steps: int) -> dict[str, dict[str, float]]:
    """Per memory format: min and median wall seconds and process CPU seconds of one training
    step. The two formats alternate step by step so that load from other jobs hits both alike;
    one warm-up step each first (oneDNN picks its kernels on the first call). On a shared CPU
    the minimum is the better estimate of the uncontended time."""
    torch.manual_seed(0)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))
    arms = {}
    for name, fmt in (("nchw", torch.contiguous_format), ("cl", torch.channels_last)):
        net = build_fast_net(widths)
        init_whitening(net.whiten, x[:256])
        net = net.to(memory_format=fmt)
        opt, sched = make_fast_optimizer(net, 1, 100, batch_size=batch)
        arms[name] = (net, opt, sched, x.contiguous(memory_format=fmt), [], [])
    for i in range(steps + 1):
        for net, opt, sched, xf, walls, cpus in arms.values():
            w0, c0 = time.perf_counter(), time.process_time()
            loss = fast_loss(net(xf), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            if i:
                walls.append(time.perf_counter() - w0)
                cpus.append(time.process_time() - c0)
    return {
        k: {"min": min(a[4]), "median": statistics.median(a[4]), "cpu": statistics.median(a[5])}
        for k, a in arms.items()
    }


def _flops_per_step(widths, batch: int) -> float:
    from perfsuite.flops import count_model

    net = build_fast_net(widths)
    opt, _ = make_fast_optimizer(net, 1, 100, batch_size=batch)
    return count_model(net, (batch, 3, 32, 32), train=True, optimizer=opt).total_flops


def measure() -> None:
    spec = os.environ.get("PERFSUITE_FAST_WIDTHS", "64,256,256;48,192,192;32,128,128")
    batch = int(os.environ.get("PERFSUITE_FAST_BATCH", "512"))
    steps = int(os.environ.get("PERFSUITE_FAST_STEPS", "3"))
    rows = []
    threads = torch.get_num_threads()
    for text in spec.split(";"):
        widths = parse_widths(text)
        flops = _flops_per_step(widths, batch)
        t = _step_times(widths, batch, steps)
        best = min(t["nchw"]["min"], t["cl"]["min"])
        epoch_s = best * EPOCH_IMAGES / batch
        epoch_cpu = t["cl"]["cpu"] / threads * EPOCH_IMAGES / batch
        rows.append(
            [
                text,
                f"{flops / 1e9:.1f}",
                f"{t['nchw']['min']:.2f} / {t['nchw']['median']:.2f}",
                f"{t['cl']['min']:.2f} / {t['cl']['median']:.2f}",
                f"{t['cl']['cpu'] / threads:.2f}",
                f"{t['nchw']['min'] / t['cl']['min']:.2f}",
                f"{flops / best / 1e9:.0f}",
                f"{epoch_s:.0f} / {epoch_cpu:.0f}",
                f"{BUDGET_S / epoch_s:.1f} / {BUDGET_S / epoch_cpu:.1f}",
            ]
        )
        print(rows[-1], flush=True)
    print(
        table(
            rows,
            [
                "widths",
                f"GFLOP/step (b={batch})",
                "s/step NCHW min/med",
                "s/step CL min/med",
                "CL CPU-s/thread",
                "NCHW/CL",
                "GFLOP/s",
                "est. s/epoch wall / CPU",
                "epochs in 45 min wall / CPU",
            ],
        )
    )
    print(
        f"torch {torch.__version__}, {threads} threads, fp32; {steps} steps per format after 1 "
        "warm-up, formats alternating; GFLOP/s and wall s/epoch from the faster format's "
        "minimum; CPU s/epoch from channels_last CPU seconds / threads (modeled uncontended "
        "time, assumes perfect thread scaling); CPU shared with other jobs while measured"
    )


def _subset(x, y, per_class: int):
    keep = torch.cat([torch.nonzero(y == c).flatten()[:per_class] for c in range(10)])
    return x[keep.sort().values], y[keep.sort().values]


def sanity(data_dir: str) -> None:
    from perfsuite.workloads.cifar10.data import find_cifar10
    from perfsuite.workloads.cifar10.task import MEAN, STD

    recipe = PRESETS["cpu-fast"]
    arrays, where = find_cifar10(data_dir, progress=False)
    mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)

    def prep(split: str):
        images, labels = arrays[split]
        x = (torch.from_numpy(images).permute(0, 3, 1, 2).float() - mean) / std
        return x.contiguous(memory_format=torch.channels_last), torch.from_numpy(labels)

    train_x, train_y = _subset(*prep("train"), 500)
    test_x, test_y = prep("test")
    test_x, test_y = test_x[::5], test_y[::5]  # 2,000 images, 200 per class
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    batch = int(os.environ.get("PERFSUITE_FAST_BATCH", "256"))
    net = build_fast_net(parse_widths(recipe.extra["widths"]))
    t0 = time.perf_counter()
    init_whitening(net.whiten, train_x, recipe.extra["whiten_eps"])
    net = net.to(memory_format=torch.channels_last)
    steps = (len(train_y) + batch - 1) // batch
    opt, sched = make_fast_optimizer(net, 1, steps, batch_size=batch)
    flip = torch.rand(len(train_y), generator=gen) < 0.5
    xs = torch.where(flip.view(-1, 1, 1, 1), train_x.flip(-1), train_x)  # epoch 0 of the flip
    perm = torch.randperm(len(train_y), generator=gen)
    net.train()
    for i in range(steps):
        idx = perm[i * batch : (i + 1) * batch]
        xb = random_translate(xs[idx], recipe.extra["translate"], gen)
        loss = fast_loss(net(xb.contiguous(memory_format=torch.channels_last)), train_y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
    train_s = time.perf_counter() - t0
    net.eval()
    accs = {}
    with torch.no_grad():
        for level in (0, 2):
            logits = torch.cat([tta_logits(net, xb, level) for xb in test_x.split(500)])
            accs[level] = float((logits.argmax(1) == test_y).float().mean())
    print(
        f"{where}: 1 epoch on {len(train_y)} training images (batch {batch}, {steps} steps, "
        f"widths {recipe.extra['widths']}) in {train_s:.1f} s; top-1 on {len(test_y)} test "
        f"images: {accs[0]:.4f} (no TTA), {accs[2]:.4f} (TTA level 2); "
        f"total {time.perf_counter() - t0:.1f} s"
    )


def main() -> None:
    measure()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--sanity":
        sanity(sys.argv[2])
    elif len(sys.argv) == 1:
        measure()
    else:
        raise SystemExit("usage: python -m bench.cifar_fast_steps [--sanity DATA_DIR]")
