"""Token streams for the GPT workload: character-level text, uint16 token shards, random tokens.

- **Text** (`--data-dir FILE.txt`, or a folder of `*.txt` files read in name order and joined):
  character-level; the vocabulary is every distinct character of the whole text, in code-point
  order, so the same text always gives the same ids. The first 90% of the characters train, the
  last 10% validate (nanoGPT's `shakespeare_char` split).
- **Token shards** (a folder with `train.bin` and `val.bin`): little-endian `uint16` token ids,
  one after another, nanoGPT's layout for tokenized corpora (GPT-2 BPE ids fit in 16 bits). They
  are memory-mapped, never read whole. The vocabulary size is `meta.json`'s `vocab_size` when
  the folder has one, else the largest id in the two files plus one.
- **Synthetic**: uniformly random ids; the validation loss then stays at ln(vocab).

Training batches are `batch_size` windows of `block_size` + 1 tokens at random offsets (inputs
and the next-token targets); an "epoch" is `iters_per_epoch` such steps, the interval between
evaluations. Evaluation uses a fixed set of `eval_batches` x `batch_size` windows spread evenly
over the validation tokens, the same at every evaluation and in every run, so its cost is known
and the curve is not noisy from resampling.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.workloads.data import Batch

TRAIN_FRACTION = 0.9
SHARD_NAMES = ("train.bin", "val.bin")


@dataclass
class Tokens:
    """Train and validation token ids (1-D int arrays: numpy memmaps or torch tensors)."""

    train: Any
    val: Any
    vocab_size: int
    kind: str  # "char", "uint16 shards", "synthetic"
    description: str
    chars: str = ""  # the character vocabulary (char-level only), id = position


def read_text(path: Path) -> tuple[str, str]:
    """(text, what was read): one file, or every *.txt of a folder in name order."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.glob("*.txt") if p.is_file())
        if not files:
            raise ValueError(f"{path}: no *.txt files and no {'/'.join(SHARD_NAMES)} shards")
    else:
        raise ValueError(f"{path}: no such file or folder")
    parts = []
    for f in files:
        try:
            parts.append(f.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{f}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    where = str(files[0]) if len(files) == 1 else f"{len(files)} text files in {path}"
    return "".join(parts), where


def char_tokens(text: str, where: str) -> Tokens:
    """Character-level ids of `text`, split 90/10 (the first 90% train)."""
    import numpy as np

    if len(text) < 4:
        raise ValueError(f"{where}: text too short for a 90/10 split ({len(text)} characters)")
    chars = "".join(sorted(set(text)))
    if len(chars) > 65535:
        raise ValueError(f"{where}: {len(chars)} distinct characters do not fit uint16 ids")
    lookup = {c: i for i, c in enumerate(chars)}
    ids = np.fromiter((lookup[c] for c in text), dtype=np.uint16, count=len(text))
    cut = int(len(ids) * TRAIN_FRACTION)
    return Tokens(
        ids[:cut],
        ids[cut:],
        len(chars),
        "char",
        f"{where}: {len(text):,} characters, character-level vocabulary of {len(chars)}; "
        f"first 90% ({cut:,}) train, last 10% ({len(ids) - cut:,}) validate",
        chars,
    )


def shard_tokens(folder: Path) -> Tokens:
    """`train.bin` / `val.bin` uint16 token shards, memory-mapped."""
    import numpy as np

    arrays = []
    for name in SHARD_NAMES:
        f = folder / name
        size = f.stat().st_size
        if size % 2 or size < 4:
            raise ValueError(f"{f}: {size} bytes is not a uint16 token array of 2 or more ids")
        arrays.append(np.memmap(f, dtype="<u2", mode="r"))
    meta = folder / "meta.json"
    if meta.is_file():
        try:
            vocab = int(json.loads(meta.read_text(encoding="utf-8"))["vocab_size"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{meta}: field vocab_size: missing or not an integer") from exc
        top = max(int(a.max()) for a in arrays)
        if top >= vocab:
            raise ValueError(f"{meta}: field vocab_size: {vocab} but the shards hold id {top}")
        how = f"vocab_size {vocab} from meta.json"
    else:
        vocab = max(int(a.max()) for a in arrays) + 1
        how = f"vocab_size {vocab} (largest id + 1; no meta.json)"
    train, val = arrays
    return Tokens(
        train,
        val,
        vocab,
        "uint16 shards",
        f"{folder}: uint16 token shards, {len(train):,} train / {len(val):,} validation tokens, "
        + how,
    )


def load_tokens(data_dir: str) -> Tokens:
    path = Path(data_dir)
    if path.is_dir() and all((path / n).is_file() for n in SHARD_NAMES):
        return shard_tokens(path)
    return char_tokens(*read_text(path))


def synthetic_tokens(vocab_size: int, n_train: int, n_val: int, seed: int) -> Tokens:
    import numpy as np

    rng = np.random.default_rng(seed)
    train = rng.integers(0, vocab_size, n_train, dtype=np.int64).astype(np.uint16)
    val = rng.integers(0, vocab_size, n_val, dtype=np.int64).astype(np.uint16)
    return Tokens(
        train,
        val,
        vocab_size,
        "synthetic",
        f"synthetic: uniformly random token ids, vocabulary {vocab_size} ({n_train:,} train / "
        f"{n_val:,} validation tokens); the validation loss stays near ln({vocab_size}) = "
        f"{math.log(vocab_size):.3f}",
    )


def eval_offsets(n_tokens: int, block_size: int, count: int) -> list[int]:
    """`count` window starts spread evenly over a stream of `n_tokens` (each window needs
    block_size + 1 tokens); windows overlap when the stream is short."""
    last = n_tokens - block_size - 1
    if last < 0:
        raise ValueError(
            f"validation split of {n_tokens} tokens is shorter than block_size + 1 = "
            f"{block_size + 1}"
        )
    if count <= 1:
        return [0]
    return [round(i * last / (count - 1)) for i in range(count)]


class WindowSource:
    """A DataSource of next-token windows over a `Tokens` pair (see the module docstring)."""

    def __init__(
        self,
        tokens: Tokens,
        block_size: int,
        batch_size: int,
        iters_per_epoch: int,
        eval_batches: int,
        device: Any,
    ) -> None:
        import torch

        self.tokens = tokens
        self.kind = "synthetic" if tokens.kind == "synthetic" else "in-memory"
        if tokens.kind == "uint16 shards":
            self.kind = "memory-mapped"
        self.block = block_size
        self.device = device
        if len(tokens.train) < block_size + 2:
            raise ValueError(
                f"training split of {len(tokens.train)} tokens is shorter than block_size + 2"
            )
        self.num_train = iters_per_epoch * batch_size
        starts = eval_offsets(len(tokens.val), block_size, eval_batches * batch_size)
        self.num_eval = len(starts)
        self._eval = self._windows(tokens.val, torch.tensor(starts))
        self._small = tokens.kind != "uint16 shards"
        if self._small:  # a few MB at most: keep the training ids as one tensor
            self._train = torch.from_numpy(tokens.train.astype("int64"))
        self.description = (
            f"{tokens.description}; training windows of {block_size} + 1 tokens at random "
            f"offsets, {iters_per_epoch} steps of {batch_size} per evaluation; evaluation on "
            f"{self.num_eval} fixed windows ({eval_batches} batches of {batch_size}) spread "
            "evenly over the validation split"
        )

    def _windows(self, stream: Any, starts: Any) -> tuple[Any, Any]:
        """(inputs, targets) [len(starts), block] int64 on the device."""
        import numpy as np
        import torch

        span = torch.arange(self.block + 1)
        if isinstance(stream, torch.Tensor):
            w = stream[starts[:, None] + span]
        else:
            rows = [np.asarray(stream[s : s + self.block + 1], dtype=np.int64) for s in starts]
            w = torch.from_numpy(np.stack(rows))
        w = w.to(self.device)
        return w[:, :-1], w[:, 1:]

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import torch

        high = len(self.tokens.train) - self.block - 1
        stream = self._train if self._small else self.tokens.train
        for i in range(0, self.num_train, batch_size):
            n = min(batch_size, self.num_train - i)
            starts = torch.randint(0, high + 1, (n,), generator=generator)
            x, y = self._windows(stream, starts if self._small else starts.tolist())
            yield Batch((x,), y, n)

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        x, y = self._eval
        for i in range(0, self.num_eval, batch_size):
            yield Batch((x[i : i + batch_size],), y[i : i + batch_size], len(y[i : i + batch_size]))

    def sample(self, n: int) -> Batch:
        x, y = self._eval
        return Batch((x[:n],), y[:n], min(n, self.num_eval))

    def close(self) -> None:
        return None
