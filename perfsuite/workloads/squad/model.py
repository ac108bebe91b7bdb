"""The `squad` reader: a small BiDAF-class extractive model, trained from scratch.

Word embeddings (learned, no pre-trained vectors: nothing is downloaded) plus learned positions;
a shared pre-norm transformer encoder for the context and the question; BiDAF's
context-to-question and question-to-context attention fused into one vector per context token;
a modeling encoder; start and end logits per context token. Built only from nn.Linear,
nn.Embedding, nn.LayerNorm and scaled_dot_product_attention, so every op of a step has a FLOP
formula in perfsuite/flops. Padding (token id 0) is masked everywhere.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from perfsuite.workloads.squad.tokens import PAD

MASKED = -1.0e4  # a logit no real position gets; finite in fp16/bf16 (softmax of it is 0)


class Block(nn.Module):
    """Pre-norm transformer block: self-attention over unpadded keys, then a 2-layer MLP;
    dropout on both residual branches."""

    def __init__(self, d: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, d // self.heads).unbind(2)
        att = F.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            attn_mask=keep[:, None, None, :],
        )  # no dropout on the attention weights: on CPU it cost more than the matmuls
        x = x + self.drop(self.out(att.transpose(1, 2).reshape(b, n, d)))
        return x + self.drop(self.ff(self.ln2(x)))


class Reader(nn.Module):
    """forward(context ids (B, Lc), question ids (B, Lq), context word in question (B, Lc))
    -> start/end logits (B, 2, Lc)."""

    def __init__(
        self,
        vocab: int,
        d: int = 128,
        heads: int = 4,
        layers: int = 2,
        model_layers: int = 2,
        max_len: int = 512,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        if d % heads:
            raise ValueError(f"squad reader: d_model {d} is not a multiple of heads {heads}")
        self.embed = nn.Embedding(vocab, d, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, d)
        self.asked = nn.Embedding(2, d)  # the context word is / is not in the question
        self.encoder = nn.ModuleList(Block(d, heads, dropout) for _ in range(layers))
        self.sim = nn.Linear(d, d, bias=False)  # bilinear context-question similarity
        self.fuse = nn.Linear(4 * d, d)
        self.modeling = nn.ModuleList(Block(d, heads, dropout) for _ in range(model_layers))
        self.norm = nn.LayerNorm(d)
        self.span = nn.Linear(d, 2)
        self.drop = nn.Dropout(dropout)
        self.scale = 1.0 / math.sqrt(d)

    def encode(
        self, ids: torch.Tensor, keep: torch.Tensor, asked: torch.Tensor | None = None
    ) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.pos(positions)
        if asked is not None:
            x = x + self.asked(asked)
        x = self.drop(x)
        for block in self.encoder:
            x = block(x, keep)
        return x

    def forward(
        self, context: torch.Tensor, question: torch.Tensor, in_question: torch.Tensor
    ) -> torch.Tensor:
        c_keep, q_keep = context != PAD, question != PAD
        c_pad, q_pad = context == PAD, question == PAD
        c, q = self.encode(context, c_keep, in_question), self.encode(question, q_keep)
        sim = torch.matmul(self.sim(c), q.transpose(1, 2)) * self.scale  # (B, Lc, Lq)
        sim = sim.masked_fill(q_pad[:, None, :], MASKED)
        c2q = torch.matmul(sim.softmax(-1), q)  # (B, Lc, d): question summary per context token
        best = sim.max(-1).values.masked_fill(c_pad, MASKED)  # (B, Lc)
        q2c = torch.matmul(best.softmax(-1)[:, None, :], c)  # (B, 1, d): most relevant context
        x = self.fuse(torch.cat([c, c2q, c * c2q, c * q2c], -1))
        for block in self.modeling:
            x = block(x, c_keep)
        logits = self.span(self.norm(x)).transpose(1, 2)  # (B, 2, Lc)
        return logits.masked_fill(c_pad[:, None, :], MASKED)


def best_spans(logits: torch.Tensor, max_answer: int) -> torch.Tensor:
    """(B, 2) token indices (start, end) maximising log p(start) + log p(end) over
    start <= end < start + max_answer (padding is already masked in the logits)."""
    logp = logits.float().log_softmax(-1)
    n = logits.shape[-1]
    pair = logp[:, 0, :, None] + logp[:, 1, None, :]  # (B, Lc, Lc)
    ones = torch.ones(n, n, dtype=torch.bool, device=logits.device)
    band = torch.triu(ones) & ~torch.triu(ones, diagonal=max_answer)
    flat = pair.masked_fill(~band, float("-inf")).flatten(1).argmax(1)
    return torch.stack([flat // n, flat % n], 1)


def span_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the start position plus that of the end position."""
    logits = logits.float()
    return F.cross_entropy(logits[:, 0], target[:, 0]) + F.cross_entropy(logits[:, 1], target[:, 1])
