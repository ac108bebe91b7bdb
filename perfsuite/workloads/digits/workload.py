"""`digits`: the embedded default workload. No download: scikit-learn ships the data.

scikit-learn's 8x8 handwritten digits (1,797 real images, 10 classes). A fixed stratified split
(seed 0, independent of the run seed) holds out 359 images (20% of each class), so every run
is judged on the same test set. Default target: 98% held-out top-1.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.data import InMemorySource
from perfsuite.workloads.switches import COMMON

TEST_FRACTION = 0.2
SPLIT_SEED = 0


def split_indices(labels: Any, test_fraction: float = TEST_FRACTION, seed: int = SPLIT_SEED):
    """Stratified split: the same fraction of every class goes to the test set."""
    import numpy as np

    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        rng.shuffle(idx)
        k = round(len(idx) * test_fraction)
        test.extend(idx[:k])
        train.extend(idx[k:])
    return np.sort(np.array(train)), np.sort(np.array(test))


def build_digits_cnn(width: int = 32, num_classes: int = 10) -> Any:
    """Three 3x3 conv blocks (BN + ReLU), one 2x2 max-pool, global average pool, linear."""
    from torch import nn

    def block(cin: int, cout: int) -> list[Any]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(
        *block(1, width),
        *block(width, 2 * width),
        nn.MaxPool2d(2),
        *block(2 * width, 4 * width),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4 * width, num_classes),
    )


class DigitsWorkload(Workload):
    name = "digits"
    task = "digits"
    metric = "top1"
    default_threshold = 0.98
    input_shape = (1, 8, 8)
    num_classes = 10
    dataset = "scikit-learn load_digits (1,797 8x8 images; 1,438 train / 359 test, stratified)"
    train_size, eval_size = 1438, 359
    switches = COMMON | {"label_smoothing"}

    def default_recipe(self, device: str = "cpu") -> Recipe:
        return Recipe(
            epochs=20,
            batch_size=64,
            lr=0.1,
            weight_decay=5e-4,
            label_smoothing=0.1,
            warmup_fraction=0.2,
            extra={"width": 32, "shift": 1},
        )

    def build_model(self, recipe: Recipe | None = None) -> Any:
        width = int((recipe or self.default_recipe()).extra.get("width", 32))
        return build_digits_cnn(width, self.num_classes)

    def model_name(self, recipe: Recipe) -> str:
        return f"digits CNN, width {recipe.extra.get('width', 32)}"

    def load_data(self, data_dir: str | None, device: Any) -> InMemorySource:
        import torch
        import torch.nn.functional as F

        images, labels, train, test, mean, std = digits_split()
        x = torch.from_numpy((images - mean) / std).unsqueeze(1)
        y = torch.from_numpy(labels)
        shift = int((self.recipe or self.default_recipe()).extra.get("shift", 1))

        def augment(batch: Any, generator: Any) -> Any:
            return random_translate(F.pad(batch, (shift,) * 4), shift, 8, generator)

        return InMemorySource(
            x[train].to(device),
            y[train].to(device),
            x[test].to(device),
            y[test].to(device),
            description=self.dataset,
            augment=augment if shift else None,
        )

    def to_images(self, x: Any) -> Any:
        """Inputs back to the 8x8 images in [0, 1] (pixel value / 16)."""
        *_, mean, std = digits_split()
        return x * std + mean

    def from_images(self, images: Any) -> Any:
        *_, mean, std = digits_split()
        return (images - mean) / std


def load_digits_table() -> tuple[Any, Any]:
    """(pixels as 1,797 x 8 x 8 float64 in 0..16, labels as int64): what scikit-learn's
    `load_digits()` gives, read from the file it ships (`datasets/data/digits.csv.gz`, one image
    per line, the label last) without importing scikit-learn, whose import (scipy with it) costs
    a run more than a second of start-up. The package is found, not imported."""
    import gzip
    import importlib.util

    import numpy as np

    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'sklearn'", name="sklearn")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        table = np.loadtxt(f, delimiter=",")
    return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)


@functools.cache
def digits_split() -> tuple[Any, ...]:
    """(images in [0, 1], labels, train indices, test indices, train mean, train std)."""
    import numpy as np

    pixels, labels = load_digits_table()
    images = pixels.astype(np.float32) / 16.0
    train, test = split_indices(labels)
    return images, labels, train, test, float(images[train].mean()), float(images[train].std())


def random_translate(padded: Any, shift: int, size: int, generator: Any) -> Any:
    """One random crop of `size` from a batch padded by `shift` (same offset for the batch)."""
    import torch

    dy, dx = torch.randint(0, 2 * shift + 1, (2,), generator=generator).tolist()
    return padded[..., dy : dy + size, dx : dx + size]
