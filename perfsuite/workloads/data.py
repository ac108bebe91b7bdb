"""Where training and evaluation batches come from: the data half of the workload seam.

A workload's `load_data` returns a DataSource. The runner only iterates it, so in-memory
tensors, streaming image-folder readers (worker processes, pinned memory) and synthetic inputs
are interchangeable, and models with several inputs (question answering) fit: a Batch holds a
tuple of input tensors. `kind` and `description` go into the record's `data` section.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol


class DataError(ValueError):
    """Data that cannot be found or read (any workload's); the message names the path."""


@dataclass
class Batch:
    """One batch: model inputs (a tuple, passed positionally), the target, the example count."""

    inputs: tuple[Any, ...]
    target: Any
    size: int

    def to(self, device: Any, non_blocking: bool = False) -> Batch:
        """The same batch on `device` (tensors only; other inputs pass through)."""

        def move(t: Any) -> Any:
            return t.to(device, non_blocking=non_blocking) if hasattr(t, "to") else t

        return Batch(tuple(move(x) for x in self.inputs), move(self.target), self.size)


class DataSource(Protocol):
    """What the runner needs from a dataset."""

    kind: str  # "in-memory", "image-folder", "synthetic", ...
    description: str
    num_train: int
    num_eval: int

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        """One epoch of shuffled (and augmented) training batches; preparation counts as
        training time under the DAWNBench rule, so it happens while the runner iterates."""
        ...

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        """The held-out set, in a fixed order, unaugmented."""
        ...

    def sample(self, n: int) -> Batch:
        """`n` held-out examples (inference latency, shape probes)."""
        ...

    def close(self) -> None: ...


Augment = Callable[[Any, Any], Any]  # (x batch, generator) -> augmented x


class InMemorySource:
    """Whole dataset as tensors already on the device; augmentation on the device per batch.

    Right for small sets (digits, CIFAR-10, SQuAD token ids): no loader cost, and the clock
    sees the augmentation work it must (DAWNBench counts data preparation). `train_x` and
    `test_x` are one tensor, or a tuple of tensors for a model with several inputs (each
    indexed alike; `augment` then gets and returns the tuple)."""

    kind = "in-memory"

    def __init__(
        self,
        train_x: Any,
        train_y: Any,
        test_x: Any,
        test_y: Any,
        description: str = "",
        augment: Augment | None = None,
    ) -> None:
        self.train_x, self.train_y = train_x, train_y
        self.test_x, self.test_y = test_x, test_y
        self.description = description
        self.augment = augment
        self.num_train, self.num_eval = len(train_y), len(test_y)

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import torch

        perm = torch.randperm(self.num_train, generator=generator)
        yield from self.batches_of(perm, batch_size, generator)

    def batches_of(self, indices: Any, batch_size: int, generator: Any) -> Iterator[Batch]:
        """Batches of the training examples at `indices`, in order, augmented with draws from
        `generator` (a data-parallel rank passes its shard of the epoch's permutation)."""
        indices = indices.to(self.train_y.device)
        for i in range(0, len(indices), batch_size):
            idx = indices[i : i + batch_size]
            x = _take(self.train_x, idx)
            if self.augment is not None:
                x = self.augment(x, generator)
            yield Batch(_inputs(x), self.train_y[idx], len(idx))

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        for i in range(0, self.num_eval, batch_size):
            y = self.test_y[i : i + batch_size]
            yield Batch(_inputs(_take(self.test_x, slice(i, i + batch_size))), y, len(y))

    def sample(self, n: int) -> Batch:
        x = _inputs(_take(self.test_x, slice(0, n)))
        return Batch(x, self.test_y[:n], min(n, self.num_eval))

    def close(self) -> None:
        return None


def _take(x: Any, idx: Any) -> Any:
    """Rows `idx` of one tensor or of each tensor of a tuple."""
    return tuple(t[idx] for t in x) if isinstance(x, tuple) else x[idx]


def _inputs(x: Any) -> tuple[Any, ...]:
    return x if isinstance(x, tuple) else (x,)


class SyntheticSource:
    """Random inputs of the workload's shapes and random labels: throughput without data.

    Made on the device once, so steps never wait for data; accuracy is meaningless (chance)
    and the record says so."""

    kind = "synthetic"

    def __init__(
        self,
        input_shapes: tuple[tuple[int, ...], ...],
        num_classes: int,
        device: Any,
        num_train: int,
        num_eval: int,
        seed: int = 0,
        pool: int = 4096,
    ) -> None:
        import torch

        g = torch.Generator().manual_seed(seed)
        self.num_train, self.num_eval = num_train, num_eval
        self._pool = min(pool, max(num_train, num_eval))
        self._x = tuple(torch.randn((self._pool, *s), generator=g).to(device) for s in input_shapes)
        self._y = torch.randint(0, num_classes, (self._pool,), generator=g).to(device)
        shapes = " + ".join("x".join(str(d) for d in s) for s in input_shapes)
        self.description = (
            f"synthetic: random {shapes} inputs and random labels ({num_train} train / "
            f"{num_eval} eval per epoch); accuracy is chance level"
        )

    def _batch(self, start: int, n: int) -> Batch:
        idx = [(start + i) % self._pool for i in range(n)]
        return Batch(tuple(x[idx] for x in self._x), self._y[idx], n)

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        import torch

        offset = int(torch.randint(0, self._pool, (1,), generator=generator))
        for i in range(0, self.num_train, batch_size):
            yield self._batch(offset + i, min(batch_size, self.num_train - i))

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        for i in range(0, self.num_eval, batch_size):
            yield self._batch(i, min(batch_size, self.num_eval - i))

    def sample(self, n: int) -> Batch:
        return self._batch(0, min(n, self.num_eval))

    def close(self) -> None:
        return None
