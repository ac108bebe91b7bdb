"""A GPT-style decoder-only transformer, written for this project.

Token embedding plus a learned position embedding (or rotary position embedding on queries and
keys), `n_layer` pre-norm blocks (LayerNorm -> causal self-attention -> residual; LayerNorm ->
MLP -> residual), a final LayerNorm and a linear head onto the vocabulary, tied to the token
embedding or untied. Attention goes through `torch.nn.functional.scaled_dot_product_attention`
with `is_causal=True`, so PyTorch picks its fused kernel (flash, memory-efficient or math) and
the FLOP counter sees that one op, forward and backward.

The speedrun techniques are options of the same model (each off by default): rotary
embeddings, RMS normalization of queries and keys (QK-norm), ReLU² in the MLP, an untied head
initialized to zero, and tanh soft-capping of the logits. A `KVCache` lets batch-1 generation
reuse the keys and values of earlier positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 65
    block_size: int = 256
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.0
    bias: bool = False  # biases in Linear and LayerNorm (nanoGPT's shakespeare_char: none)
    rotary: bool = False  # rotary position embedding instead of a learned table
    qk_norm: bool = False  # RMS-normalize queries and keys per head before the dot product
    relu2: bool = False  # ReLU(x)^2 instead of GELU in the MLP
    untied_head: bool = False  # a head of its own (zero-initialized) instead of wte's weights
    softcap: float = 0.0  # logits -> c * tanh(logits / c); 0: off

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if int(getattr(self, name)) < 1:
                raise ValueError(
                    f"GPT config field {name!r} must be >= 1, got {getattr(self, name)}"
                )
        if self.n_embd % self.n_head:
            raise ValueError(
                f"GPT config: n_embd {self.n_embd} is not divisible by n_head {self.n_head}"
            )
        if self.rotary and (self.n_embd // self.n_head) % 2:
            raise ValueError("GPT config: rotary embeddings need an even head width")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPT config field 'dropout' must be in [0, 1), got {self.dropout}")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


class KVCache:
    """Keys and values of every layer for positions already seen, preallocated to the block
    size: [n_layer, batch, n_head, block_size, head_dim] each, filled up to `length`."""

    def __init__(self, cfg: GPTConfig, batch: int, device: torch.device, dtype: torch.dtype):
        shape = (cfg.n_layer, batch, cfg.n_head, cfg.block_size, cfg.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.length = 0

    def append(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Store `k`, `v` (new positions) for `layer`; return all keys and values so far."""
        start, end = self.length, self.length + k.shape[2]
        self.k[layer, :, :, start:end] = k
        self.v[layer, :, :, start:end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]


def rotary_tables(
    block_size: int, head_dim: int, base: float = 10000.0
) -> tuple[torch.Tensor, ...]:
    """cos and sin of position x frequency, [block_size, head_dim / 2] (RoFormer, Su et al.
    2021): frequency i is base^(-2i / head_dim)."""
    freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angle = torch.outer(torch.arange(block_size, dtype=torch.float32), freq)
    return angle.cos(), angle.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the pairs (x[..., i], x[..., i + d/2]) of x [B, H, T, d] by each position's
    angle; cos, sin are [T, d/2]. A relative-position property follows: q·k depends on the
    positions' difference only."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(
        self,
        x: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor] | None,
        cache: KVCache | None = None,
        layer: int = 0,
    ) -> torch.Tensor:
        cfg = self.cfg
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, cfg.n_head, cfg.head_dim).transpose(1, 2) for z in (q, k, v))
        if cfg.qk_norm:
            q = F.rms_norm(q, (cfg.head_dim,))
            k = F.rms_norm(k, (cfg.head_dim,))
        if rope is not None:
            q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        causal = True
        if cache is not None:
            causal = cache.length == 0  # prefill: causal; one new token: sees every position
            if not causal and t != 1:
                raise ValueError("KV-cache decoding takes one new token at a time")
            k, v = cache.append(layer, k, v)
        drop = cfg.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=drop, is_causal=causal)
        return self.resid_drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.drop = nn.Dropout(cfg.dropout)
        self.relu2 = cfg.relu2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        h = F.relu(h).square() if self.relu2 else F.gelu(h)
        return self.drop(self.proj(h))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, rope=None, cache=None, layer: int = 0) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), rope, cache, layer)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = None if cfg.rotary else nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        if cfg.rotary:
            cos, sin = rotary_tables(cfg.block_size, cfg.head_dim)
            # derived from the config, not trained: left out of checkpoints
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)
        self._init_weights()

    def _init_weights(self) -> None:
        """GPT-2's scheme: normal(0, 0.02) for matrices and embeddings, zero biases, and the
        residual output projections scaled by 1/sqrt(2 n_layer) so the residual stream's
        variance does not grow with depth. An untied head starts at zero (the speedrun's
        choice: every token starts equally likely)."""
        std = 0.02
        for name, p in self.named_parameters():
            if p.ndim < 2:
                nn.init.zeros_(p) if name.endswith("bias") else nn.init.ones_(p)
            elif name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * self.cfg.n_layer))
            else:
                nn.init.normal_(p, 0.0, std)
        if self.cfg.untied_head:
            nn.init.zeros_(self.head.weight)
        else:
            self.head.weight = self.wte.weight  # tied: one matrix, embedding and head

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Logits [B, T, vocab] for token ids [B, T]; with `cache`, the positions continue
        after the `cache.length` already stored."""
        cfg = self.cfg
        t = idx.shape[1]
        start = cache.length if cache is not None else 0
        if start + t > cfg.block_size:
            raise ValueError(
                f"sequence of {start + t} tokens is longer than block_size {cfg.block_size}"
            )
        x = self.wte(idx)
        rope = None
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(start, start + t, device=idx.device))
        else:
            rope = (self.rope_cos[start : start + t], self.rope_sin[start : start + t])
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, rope, cache, i)
        if cache is not None:
            cache.length += t
        logits = self.head(self.ln_f(x))
        if cfg.softcap > 0:
            logits = cfg.softcap * torch.tanh(logits / cfg.softcap)
        return logits


def count_parameters(model: GPT) -> dict[str, int]:
    """`total` (each tensor once), `embedding` (the tables looked up, not multiplied: the
    position table, and the token table when the head is untied) and `non_embedding`
    (`total - embedding`: every parameter that multiplies activations, a tied head's shared
    matrix included once, as the head). nanoGPT's `get_num_params` counts the same way."""
    total = sum(p.numel() for p in model.parameters())
    table = model.wpe.weight.numel() if model.wpe is not None else 0
    if model.cfg.untied_head:
        table += model.wte.weight.numel()
    return {"total": total, "embedding": table, "non_embedding": total - table}
