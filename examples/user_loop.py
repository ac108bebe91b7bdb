"""Measure your own PyTorch training loop with `perfsuite.track`.

Run: `python examples/user_loop.py [OUT_DIR]`; prints the run folder. The record it writes is
the same kind `perfsuite run` writes (time to accuracy, FLOPs per step, a profile window,
telemetry), so `perfsuite roofline`, `perfsuite report` and the other analyses read it.
Here the model is a small MLP on scikit-learn's 8x8 digits; replace it with yours.
"""

from __future__ import annotations

import sys

import torch
from sklearn.datasets import load_digits

import perfsuite


def main(out: str = "runs") -> str:
    torch.manual_seed(0)
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target)
    train_x, train_y, test_x, test_y = x[:1400], y[:1400], x[1400:], y[1400:]
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def train_step(xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def accuracy() -> float:
        with torch.no_grad():
            return float((model(test_x).argmax(1) == test_y).float().mean())

    def batches(epoch: int):
        perm = torch.randperm(len(train_y), generator=torch.Generator().manual_seed(epoch))
        for i in range(0, len(perm), 64):
            idx = perm[i : i + 64]
            yield train_x[idx], train_y[idx]

    with perfsuite.track(
        "digits-mlp",
        metric="top1",
        threshold=0.93,
        model=model,
        optimizer=opt,
        epochs=10,
        batch_size=64,
        out=out,
        dataset="sklearn digits, 1400/397 split",
    ) as run:
        for epoch in range(10):
            for xb, yb in run.epoch(batches(epoch)):
                run.step(train_step, xb, yb)
            if run.evaluate(top1=accuracy()):
                break
    return str(run.run_dir)


if __name__ == "__main__":
    print(main(*sys.argv[1:]))
