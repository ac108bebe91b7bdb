"""Measure your own small GPT training loop with `perfsuite.track`, MFU included.

Run: `python examples/gpt_track.py [TEXT_FILE] [OUT_DIR]`; prints the run folder. The model,
data and loop below are the user's own (a character-level decoder of two blocks); perfsuite
only times the epochs, counts one step's FLOPs, profiles a few steps and, given the model's
shape in `model_flops=`, writes the model FLOPs per token (6N + 12·L·d·T), tokens/s and MFU
into the record (`perfsuite roofline RUN` shows them). Without a text file it trains on its
own source code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import perfsuite

LAYERS, HEADS, WIDTH, BLOCK, BATCH = 2, 2, 32, 32, 16


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, HEADS, c // HEADS).transpose(1, 2)
            for z in self.qkv(self.ln1(x)).split(c, 2)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, WIDTH), nn.Embedding(BLOCK, WIDTH)
        self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.ln, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def main(
    text_file: str | None = None, out: str = "runs", epochs: int = 3, steps: int = 30, **kw
) -> str:
    torch.manual_seed(0)
    text = Path(text_file or __file__).read_text(encoding="utf-8")
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text])
    cut = int(0.9 * len(ids))
    train, val = ids[:cut], ids[cut:]
    model = TinyGPT(len(chars))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    # Non-embedding parameters: all but the two lookup tables (this head is its own matrix).
    n = sum(p.numel() for p in model.parameters()) - model.tok.weight.numel()
    n -= model.pos.weight.numel()

    def windows(data: torch.Tensor, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        w = data[starts[:, None] + torch.arange(BLOCK + 1)]
        return w[:, :-1], w[:, 1:]

    def batches(epoch: int):
        g = torch.Generator().manual_seed(epoch)
        for _ in range(steps):
            yield windows(train, torch.randint(0, len(train) - BLOCK - 1, (BATCH,), generator=g))

    def train_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def val_loss() -> float:
        x, y = windows(val, torch.linspace(0, len(val) - BLOCK - 1, 8).long())
        with torch.no_grad():
            return float(F.cross_entropy(model(x).flatten(0, 1), y.flatten()))

    shape = dict(n_layer=LAYERS, n_head=HEADS, n_embd=WIDTH, block_size=BLOCK)
    with perfsuite.track(
        "tiny-gpt-char",
        metric="val_loss",
        direction="lower",
        threshold=2.5,
        model=model,
        optimizer=opt,
        epochs=epochs,
        batch_size=BATCH,
        out=out,
        dataset=f"{text_file or 'this file'}, characters, 90/10 split",
        model_flops={
            **shape,
            "vocab_size": len(chars),
            "batch_size": BATCH,
            "non_embedding_parameters": n,
        },
        **kw,
    ) as run:
        model.train()
        for epoch in range(epochs):
            for x, y in run.epoch(batches(epoch)):
                run.step(train_step, x, y)
            if run.evaluate(val_loss=val_loss):
                break
    return str(run.run_dir)


if __name__ == "__main__":
    print(main(*sys.argv[1:]))
