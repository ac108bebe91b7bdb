"""Streaming image-folder source: decode and augment in DataLoader worker processes.

For sets that do not fit on the device (ImageNet-size): `root/train/<class>/*.{jpg,jpeg,png}`
and `root/val/<class>/...` (or `root/test/...`) are listed once, then each batch is decoded,
augmented and collated by worker processes while the device trains on the previous ones.

Determinism: every training epoch draws one seed from the run's torch generator, and sample `i`
takes its random draws from `numpy.random.default_rng([epoch_seed, i])`. The (index, seed)
pairs come from the sampler in the main process, so a sample's augmentation does not depend on
how many workers there are or which one decodes it. Images are only decoded (PIL), never
unpickled.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfsuite.hostinfo import usable_cpus
from perfsuite.workloads.data import Batch, DataError
from perfsuite.workloads.transforms import Transform

SUFFIXES = (".jpg", ".jpeg", ".png")
EVAL_SPLITS = ("val", "test")


def list_split(split_dir: Path, classes: Sequence[str] | None = None) -> tuple[list[str], list]:
    """(class names, [(file path, label)]) of one split; labels index the class names, which
    default to the sorted sub-folder names. One-line DataError naming the folder when the
    split, a class, or any image is missing."""
    if not split_dir.is_dir():
        raise DataError(f"{split_dir}: split folder not found")
    found = sorted(d.name for d in split_dir.iterdir() if d.is_dir())
    names = list(classes) if classes is not None else found
    if not names:
        raise DataError(f"{split_dir}: no class folders")
    missing = [c for c in names if c not in found]
    if missing:
        raise DataError(f"{split_dir}: class folder(s) missing: {', '.join(missing)}")
    files: list[tuple[str, int]] = []
    for label, name in enumerate(names):
        images = sorted(
            p for p in (split_dir / name).iterdir() if p.suffix.lower() in SUFFIXES and p.is_file()
        )
        if not images:
            raise DataError(f"{split_dir / name}: no .jpg/.jpeg/.png images")
        files.extend((str(p), label) for p in images)
    return names, files


def balanced_limit(files: list[tuple[str, int]], limit: int, num_classes: int) -> list:
    """The first images of each class, `limit` in all, as evenly spread as the classes allow
    (the first `limit % num_classes` classes get one more)."""
    if limit <= 0:
        raise DataError(f"train_limit: must be positive, got {limit}")
    quota = [
        limit // num_classes + (1 if c < limit % num_classes else 0) for c in range(num_classes)
    ]
    taken = [0] * num_classes
    out = []
    for path, label in files:
        if taken[label] < quota[label]:
            taken[label] += 1
            out.append((path, label))
    return out


class _Files:
    """Map-style dataset over image files; items are keyed by (index, epoch seed or None) or
    (index, epoch seed, image size) when progressive resizing sets this epoch's size.

    Paths and labels are held in numpy arrays, not a list of Python strings: forked workers
    share them copy-on-write, and reading a Python object would touch its reference count and
    copy its page into every worker (a per-worker copy of the listing at ImageNet scale)."""

    def __init__(self, files: list[tuple[str, int]], transform: Transform) -> None:
        self.paths = np.array([os.fsencode(p) for p, _ in files], dtype=np.bytes_)
        self.labels = np.array([lab for _, lab in files], dtype=np.int64)
        self.transform = transform
        self._sized: dict[int, Transform] = {}

    def __len__(self) -> int:
        return len(self.labels)

    def path(self, index: int) -> str:
        return os.fsdecode(self.paths[index])

    def transform_at(self, size: int | None) -> Transform:
        """The transform, or its copy cropping to `size` (cached per worker process)."""
        if size is None:
            return self.transform
        if size not in self._sized:
            at_size = getattr(self.transform, "at_size", None)
            if at_size is None:
                raise DataError(f"{self.transform.describe()}: cannot change its image size")
            self._sized[size] = at_size(size)
        return self._sized[size]

    def __getitem__(self, key: tuple[Any, ...]) -> tuple[Any, int]:
        import torch
        from PIL import Image

        index, seed = key[0], key[1]
        transform = self.transform_at(key[2] if len(key) > 2 else None)
        path = self.path(index)
        rng = None if seed is None else np.random.default_rng([seed, index])
        try:
            data = Path(path).read_bytes()  # one read; no file handle outlives a failed decode
        except OSError as exc:
            raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
        try:
            image = Image.open(io.BytesIO(data))
            image.load()
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
            raise DataError(f"{path}: cannot decode image: {exc}") from None
        try:
            x = transform(image, rng)
        except ValueError as exc:
            raise DataError(f"{path}: {exc}") from None
        return torch.from_numpy(x), int(self.labels[index])


class _Order:
    """Sampler yielding (index, seed) keys, or (index, seed, size) when an image size is set,
    in an order set before each epoch. It runs in the main process, so persistent workers see
    each new epoch's order, seed and size."""

    def __init__(self, n: int) -> None:
        self.order: list[int] = list(range(n))
        self.seed: int | None = None
        self.size: int | None = None

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        order, seed, size = self.order, self.seed, self.size  # a pass keeps what it started with
        if size is None:
            return ((i, seed) for i in order)
        return ((i, seed, size) for i in order)

    def __len__(self) -> int:
        return len(self.order)


def _worker_message(exc: BaseException) -> str:
    """The one-line DataError text out of a worker's re-raised traceback."""
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    last = lines[-1] if lines else str(exc)
    prefix = "DataError: "
    return last.split(prefix, 1)[1] if prefix in last else last


class ImageFolderSource:
    """DataSource over a class-per-sub-folder image tree, streamed by DataLoader workers.

    `device`: where batches go (CUDA: pinned host memory and non-blocking copies).
    `num_workers`: decoding processes (0 decodes in the calling process); default
    min(4, usable CPUs). Workers persist across epochs, one pool for training and one for
    evaluation per batch size; `close()` stops them.
    """

    kind = "image-folder"

    def __init__(
        self,
        root: str | Path,
        train_transform: Transform,
        eval_transform: Transform,
        device: Any = "cpu",
        num_workers: int | None = None,
        train_limit: int | None = None,
        eval_split: str | None = None,
        eval_limit: int | None = None,
        classes: Sequence[str] | None = None,
        prefetch_factor: int = 2,
    ) -> None:
        self.root = Path(root).expanduser()
        if not self.root.is_dir():
            raise DataError(f"{self.root}: image folder not found")
        if eval_split is None:
            present = [s for s in EVAL_SPLITS if (self.root / s).is_dir()]
            if not present:
                raise DataError(f"{self.root}: no val/ or test/ split folder")
            eval_split = present[0]
        self.eval_split = eval_split
        self.classes, train = list_split(self.root / "train", classes)
        _, held_out = list_split(self.root / eval_split, self.classes)
        if train_limit is not None:
            train = balanced_limit(train, train_limit, len(self.classes))
        if eval_limit is not None:
            held_out = balanced_limit(held_out, eval_limit, len(self.classes))
        self._train, self._eval = _Files(train, train_transform), _Files(held_out, eval_transform)
        self.num_train, self.num_eval = len(train), len(held_out)
        self.device = str(device)
        self.num_workers = min(4, usable_cpus()) if num_workers is None else num_workers
        if self.num_workers < 0:
            raise DataError(f"num_workers: must be >= 0, got {self.num_workers}")
        self.pin = self.device.startswith("cuda")
        self.prefetch_factor = prefetch_factor
        self.train_size: int | None = None  # progressive resizing: this epoch's crop size
        self._loaders: dict[tuple[str, int], tuple[Any, _Order]] = {}
        self._tokens: dict[tuple[str, int], int] = {}
        limit = f" (train_limit {train_limit}, balanced)" if train_limit is not None else ""
        elimit = f" (eval_limit {eval_limit}, balanced)" if eval_limit is not None else ""
        self.description = (
            f"image folder {self.root}: {self.num_train} train{limit} / {self.num_eval} "
            f"{eval_split}{elimit} images, {len(self.classes)} classes; {self.num_workers} loader "
            f"workers, pinned memory {'on' if self.pin else 'off'}; train: "
            f"{train_transform.describe()}; eval: {eval_transform.describe()}"
        )

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def _loader(self, split: str, batch_size: int) -> tuple[Any, _Order]:
        key = (split, batch_size)
        if key not in self._loaders:
            import torch
            from torch.utils.data import DataLoader

            files = self._train if split == "train" else self._eval
            order = _Order(len(files))
            workers = self.num_workers
            loader = DataLoader(
                files,
                batch_size=batch_size,
                sampler=order,
                num_workers=workers,
                pin_memory=self.pin,
                persistent_workers=workers > 0,
                prefetch_factor=self.prefetch_factor if workers > 0 else None,
                # Its own generator: without one, every new iterator draws its base seed from
                # torch's global RNG, which 0 workers do every pass and persistent workers only
                # once, so model init and dropout streams would depend on the worker count.
                generator=torch.Generator().manual_seed(0),
            )
            self._loaders[key] = (loader, order)
        return self._loaders[key]

    def set_train_size(self, size: int | None) -> None:
        """Crop training images to `size` from the next pass on (None: the transform's own);
        progressive resizing calls it before each epoch."""
        if size is not None and size < 1:
            raise DataError(f"train image size: must be positive, got {size}")
        if size is not None:
            self._train.transform_at(size)  # fails here, in this process, if it cannot resize
        self.train_size = size

    def _stream(
        self, key: tuple[str, int], order: list[int], seed: int | None, size: int | None = None
    ) -> Iterator[Batch]:
        """Batches of one pass. Each call takes a new token for its loader, so an older pass
        over the same loader (sharing its persistent workers) fails loudly if resumed."""
        loader, sampler = self._loader(*key)
        token = self._tokens[key] = self._tokens.get(key, 0) + 1
        return self._run(loader, sampler, key, token, (order, seed, size))

    def _run(
        self, loader: Any, sampler: _Order, key: Any, token: int, plan: tuple[list[int], Any, Any]
    ) -> Iterator[Batch]:
        it = None
        while True:
            if self._tokens.get(key) != token:
                raise RuntimeError(
                    f"{self.root}: a newer {key[0]} pass with batch size {key[1]} started "
                    "while this one was unfinished; it cannot resume"
                )
            if it is None:  # at the first next(): a pass made and dropped unused costs nothing
                sampler.order, sampler.seed, sampler.size = plan
                it = iter(loader)
            try:
                x, y = next(it)
            except StopIteration:
                return
            except DataError as exc:
                raise DataError(_worker_message(exc)) from None
            yield Batch((x,), y, len(y)).to(self.device, non_blocking=self.pin)

    def train_batches(self, batch_size: int, generator: Any) -> Iterator[Batch]:
        """One epoch in a random order with fresh augmentation draws, both from `generator`.

        The order and the epoch seed are drawn at this call, not when iteration starts, so the
        generator advances the same way whether or not the epoch is consumed."""
        import torch

        perm = torch.randperm(self.num_train, generator=generator).tolist()
        seed = int(torch.randint(0, 2**62, (1,), generator=generator))
        return self._stream(("train", batch_size), perm, seed, self.train_size)

    def eval_batches(self, batch_size: int) -> Iterator[Batch]:
        """The held-out split in listing order (class, then file name), unaugmented."""
        return self._stream(("eval", batch_size), list(range(self.num_eval)), None)

    def sample(self, n: int) -> Batch:
        """The first `n` held-out images (listing order), decoded in this process."""
        import torch

        if n < 1:
            raise ValueError(f"sample: n must be at least 1, got {n}")
        n = min(n, self.num_eval)
        items = [self._eval[(i, None)] for i in range(n)]
        x = torch.stack([t for t, _ in items])
        y = torch.tensor([lab for _, lab in items], dtype=torch.int64)
        return Batch((x,), y, n).to(self.device)

    def close(self) -> None:
        """Stop the persistent worker processes (they would otherwise live until exit)."""
        for loader, _ in self._loaders.values():
            it = getattr(loader, "_iterator", None)
            if it is not None and hasattr(it, "_shutdown_workers"):
                it._shutdown_workers()
            loader._iterator = None
        self._loaders.clear()
