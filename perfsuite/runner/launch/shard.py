"""Each rank's share of every epoch, with DistributedSampler semantics.

Every rank draws the epoch's permutation from the same seed (taken from the run's generator,
which every rank seeds alike and advances by exactly one draw per epoch, so the ranks stay in
step), pads it by repeating its first indices to a multiple of the world size, and takes every
world-size-th index from its rank on: disjoint shards of equal length, so every rank runs the
same number of steps (DDP needs that) and together they cover the epoch. Augmentation draws
come from a generator of the rank's own, so ranks do not repeat each other's crops.

In-memory sources are sharded by index (a rank prepares only its batches). Other sources
(image folders, synthetic) are sharded by batch: rank r keeps batches r, r+N, ... of the
epoch's stream (the last incomplete round of N batches is dropped), which costs every rank the
preparation of the batches it skips; the run says so in its flags.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from perfsuite.workloads.data import Batch

BY_INDEX = "by index (DistributedSampler semantics: shared permutation, padded, strided)"
BY_BATCH = "by batch (rank r keeps batches r, r+N, ... of the epoch; every rank prepares all)"


def shard_size(n: int, world: int) -> int:
    """Examples per rank and epoch: n padded up to a multiple of `world`, divided."""
    return -(-n // world)


def rank_indices(perm: Any, rank: int, world: int) -> Any:
    """The rank's indices of one epoch's permutation (padded by wrapping around)."""
    import torch

    total = shard_size(len(perm), world) * world
    if total > len(perm):
        reps = -(-total // len(perm))
        perm = torch.cat([perm] * reps)[:total]
    return perm[rank:total:world]


class ShardedSource:
    """A DataSource seen by one rank: its shard of the training set, the whole eval set."""

    def __init__(self, inner: Any, rank: int, world: int, batch_size: int) -> None:
        self.inner, self.rank, self.world = inner, rank, world
        self.by_index = hasattr(inner, "batches_of")  # in-memory: index the tensors directly
        self.method = BY_INDEX if self.by_index else BY_BATCH
        # By batch, the batches that do not fill a round of `world` are dropped: every rank
        # must run the same number of steps.
        self.rounds = (-(-int(inner.num_train) // batch_size)) // world
        if self.by_index:
            self.num_train = shard_size(int(inner.num_train), world)
        else:
            self.num_train = self.rounds * batch_size
        self.num_eval = inner.num_eval

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # kind, description, num_workers, pin, ...

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import torch

        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        if not self.by_index:
            g = torch.Generator().manual_seed(seed)
            for i, batch in enumerate(self.inner.train_batches(batch_size, g)):
                if i >= self.rounds * self.world:
                    break
                if i % self.world == self.rank:
                    yield batch
            return
        src = self.inner
        perm = torch.randperm(int(src.num_train), generator=torch.Generator().manual_seed(seed))
        aug = torch.Generator().manual_seed(seed + 1 + self.rank)
        yield from src.batches_of(rank_indices(perm, self.rank, self.world), batch_size, aug)

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        return self.inner.eval_batches(batch_size)

    def sample(self, n: int) -> Batch:
        return self.inner.sample(n)

    def close(self) -> None:
        self.inner.close()
