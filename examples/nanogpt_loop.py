"""A nanoGPT-style training loop under `perfsuite.track`: the shape of a real user's script.

Run: `python examples/nanogpt_loop.py [TEXT_FILE] [OUT_DIR] [ITERS]`; prints the run folder.
What is the user's own, kept as nanoGPT's `train.py` writes it: a character-level GPT with a
tied head, one long epoch of `iters` iterations, each accumulating gradients over `accum`
micro-batches, clipping the gradient norm to 1, a hand-written learning rate (linear warm-up,
cosine decay to a tenth) set into the param groups each iteration, and AdamW with two groups
(weight decay on matrices, none on biases and norms). The evaluation sits at the top of the
loop body, as in nanoGPT (`if iter_num % eval_interval == 0`), so the first one sees the
untrained model: perfsuite numbers each evaluation by the iterations taken before it.

The batch is passed into the step, never prefetched into module globals inside it:
perfsuite's detours replay the step (FLOP count, profile window) and restore the model,
optimizer and RNG state, not globals or closure cells; a step that writes them is refused the
detours, with a warning (docs/seam.md). Without a text file it trains on its own source code.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import perfsuite

LAYERS, HEADS, WIDTH, BLOCK = 2, 2, 32, 32
BATCH, ACCUM = 8, 2  # micro-batch, micro-batches per iteration
LR, MIN_LR, WARMUP, DECAY = 1e-3, 1e-4, 10, 0.1


class CausalSelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (
            z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in self.c_attn(x).split(c, 2)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = CausalSelfAttention()
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, WIDTH), nn.Embedding(BLOCK, WIDTH)
        self.h = nn.Sequential(*(Block() for _ in range(LAYERS)))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, vocab, bias=False)
        self.wte.weight = self.lm_head.weight  # tied, as in nanoGPT

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        return self.lm_head(self.ln_f(self.h(x)))

    def non_embedding_parameters(self) -> int:
        """nanoGPT's `get_num_params`: all but the position table (the tied matrix counts
        once, as the head)."""
        return sum(p.numel() for p in self.parameters()) - self.wpe.weight.numel()


def optimizer_groups(model: nn.Module) -> list[dict]:
    """nanoGPT's two AdamW groups: decay on tensors of 2 or more dimensions, none on the rest."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": DECAY},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


def learning_rate(it: int, iters: int) -> float:
    """Linear warm-up over WARMUP iterations, then cosine decay from LR to MIN_LR."""
    if it < WARMUP:
        return LR * (it + 1) / (WARMUP + 1)
    ratio = min(1.0, (it - WARMUP) / max(1, iters - WARMUP))
    return MIN_LR + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (LR - MIN_LR)


def corpus(text_file: str | None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(train ids, validation ids, vocabulary size): characters, split 90/10."""
    text = Path(text_file or __file__).read_text(encoding="utf-8")
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text])
    cut = int(0.9 * len(ids))
    return ids[:cut], ids[cut:], len(chars)


def get_batch(data: torch.Tensor, n: int, g: torch.Generator) -> tuple[torch.Tensor, ...]:
    """`n` random windows of BLOCK characters and their next characters."""
    starts = torch.randint(0, len(data) - BLOCK - 1, (n,), generator=g)
    w = data[starts[:, None] + torch.arange(BLOCK + 1)]
    return w[:, :-1], w[:, 1:]


def make_step(model: nn.Module, opt: torch.optim.Optimizer):
    """The training step: ACCUM micro-batches (xs, ys stacked), their gradients accumulated,
    the norm clipped to 1, one AdamW step at learning rate `lr`; the summed loss."""

    def train_step(xs: torch.Tensor, ys: torch.Tensor, lr: float) -> torch.Tensor:
        for group in opt.param_groups:
            group["lr"] = lr
        total = torch.zeros(())
        for x, y in zip(xs, ys, strict=True):  # gradient accumulation
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten()) / ACCUM
            loss.backward()
            total += loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total

    return train_step


def main(
    text_file: str | None = None, out: str = "runs", iters: int = 40, eval_interval: int = 10, **kw
) -> str:
    """Train `iters` iterations under perfsuite.track; the run folder."""
    iters, eval_interval = int(iters), int(eval_interval)
    torch.manual_seed(1337)
    train, val, vocab = corpus(text_file)
    model = GPT(vocab)
    opt = torch.optim.AdamW(optimizer_groups(model), lr=LR, betas=(0.9, 0.95))
    g = torch.Generator().manual_seed(0)

    class Iterations:  # each item: ACCUM micro-batches, stacked; a length, as range() has
        def __len__(self) -> int:
            return iters

        def __iter__(self):
            for _ in range(iters):
                xs, ys = zip(*(get_batch(train, BATCH, g) for _ in range(ACCUM)), strict=True)
                yield torch.stack(xs), torch.stack(ys)

    train_step = make_step(model, opt)

    @torch.no_grad()
    def val_loss() -> float:
        model.eval()
        x, y = get_batch(val, 4 * BATCH, torch.Generator().manual_seed(1))
        loss = float(F.cross_entropy(model(x).flatten(0, 1), y.flatten()))
        model.train()
        return loss

    shape = {"n_layer": LAYERS, "n_head": HEADS, "n_embd": WIDTH, "block_size": BLOCK}
    with perfsuite.track(
        "nanogpt-style-char",
        metric="val_loss",
        direction="lower",
        threshold=float(kw.pop("threshold", 0.5)),
        model=model,
        optimizer=opt,
        epochs=1,
        batch_size=BATCH * ACCUM,
        out=out,
        dataset=f"{text_file or 'this file'}, characters, 90/10 split",
        model_flops={
            **shape,
            "vocab_size": vocab,
            "batch_size": BATCH * ACCUM,
            "non_embedding_parameters": model.non_embedding_parameters(),
        },
        **kw,
    ) as run:
        for it, (xs, ys) in enumerate(run.epoch(Iterations())):
            if it % eval_interval == 0:  # at the top of the body, as in nanoGPT
                run.evaluate(val_loss=val_loss)
            run.step(train_step, xs, ys, learning_rate(it, iters), batch_size=BATCH * ACCUM)
        run.evaluate(val_loss=val_loss())
    return str(run.run_dir)


if __name__ == "__main__":
    print(main(*sys.argv[1:]))
