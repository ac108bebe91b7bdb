"""Overhead of counting FLOPs on one training step (OpCounter) vs the same step uncounted.

Small CNN (CIFAR ResNet-20, batch 32, CPU, SGD). Both variants run interleaved in one process
and the median of each is compared, so the printed ratio is not hostage to machine noise.
"""

from __future__ import annotations

import statistics
import time


def _step(model, opt, x, y, counter=None) -> None:
    import torch.nn.functional as F

    if counter is None:
        F.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return
    with counter:
        with counter.phase("forward"):
            loss = F.cross_entropy(model(x), y)
        with counter.phase("backward"):
            loss.backward()
        with counter.phase("optimizer"):
            opt.step()
    opt.zero_grad(set_to_none=True)


def main() -> None:
    import torch

    from perfsuite.flops import OpCounter
    from perfsuite.fmt import si, table
    from perfsuite.models.cifar_resnet import resnet20

    torch.manual_seed(0)
    model = resnet20()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    for _ in range(2):  # warm-up: allocator, optimizer state
        _step(model, opt, x, y)
    plain, counted, flops = [], [], 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        _step(model, opt, x, y)
        plain.append(time.perf_counter() - t0)
        counter = OpCounter()
        t0 = time.perf_counter()
        _step(model, opt, x, y, counter)
        counted.append(time.perf_counter() - t0)
        flops = counter.result().total_flops
    p, c = statistics.median(plain), statistics.median(counted)
    print(
        table(
            [
                ["uncounted step", si(p, "s"), "1.00x"],
                ["counted step (OpCounter)", si(c, "s"), f"{c / p:.2f}x"],
            ],
            ["ResNet-20, batch 32, CPU, SGD", "median of 5", "ratio"],
            "lrr",
        )
    )
    print(f"counted work: {si(flops, 'FLOP')} per step; overhead {si(c - p, 's')} per count")


if __name__ == "__main__":
    main()
