"""What both cifar10 workloads share: the task (CIFAR-10 to 94% top-1 on the 10,000 test
images), its normalization and the way its data is loaded.

`Cifar10Task.load_data` finds CIFAR-10 (pickle batches or image folders, cifar10/data.py),
takes the balanced `train_limit` subset and normalizes it on the device, then hands the
arrays to the family's `in_memory_source`; `--switch data=workers` streams image folders
through DataLoader workers instead.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import Recipe, Workload
from perfsuite.workloads.cifar10.data import CLASSES, balanced_subset, find_cifar10
from perfsuite.workloads.data import DataSource
from perfsuite.workloads.imagefolder import ImageFolderSource
from perfsuite.workloads.switches import COMMON
from perfsuite.workloads.transforms import cifar_transforms

# Per-channel statistics of the CIFAR-10 training set (0-255 scale).
MEAN = (125.31, 122.95, 113.87)
STD = (62.99, 62.09, 66.70)


class Cifar10Task(Workload):
    """The cifar10 task's fields and data; a family adds the model, recipe and step."""

    name = "cifar10"
    task = "cifar10"
    metric = "top1"
    default_threshold = 0.94
    input_shape = (3, 32, 32)
    num_classes = 10
    dataset = "CIFAR-10 (50,000 train / 10,000 test, 32x32 RGB)"
    needs_data_dir = True
    train_size, eval_size = 50_000, 10_000
    switches = COMMON | {"label_smoothing", "tta", "data", "muon", "activation"}
    scheduler_interval = "step"  # both families' LambdaLR factors are per optimizer step
    image_stats = (MEAN, STD)  # to_images / from_images undo and apply this normalization
    class_names = CLASSES  # the canonical label order

    def __init__(self) -> None:
        self.download = False

    def in_memory_source(
        self, train_x: Any, train_y: Any, test_x: Any, test_y: Any, description: str
    ) -> DataSource:
        """The family's source over normalized NCHW tensors on the device."""
        raise NotImplementedError

    def _streaming(self, data_dir: str | None, device: Any, limit: int) -> Any:
        """`--switch data=workers`: JPEG/PNG folders decoded by DataLoader worker processes
        each epoch (pinned memory on CUDA), with the loader's CIFAR augmentation (reflect-pad 4,
        random crop, flip) instead of the recipe's on-device augmentation."""
        from pathlib import Path

        root = Path(data_dir or "")
        if not data_dir or not (root / "train").is_dir():
            raise ValueError(
                f"--switch data=workers needs CIFAR-10 in image-folder layout under --data-dir "
                f"({root / 'train'}/<class>/*.jpg|png): not found"
            )
        source = ImageFolderSource(
            root,
            *cifar_transforms(MEAN, STD),
            device=device,
            classes=list(CLASSES),
            train_limit=limit or None,
        )
        source.description += "; loader augmentation: reflect-pad 4, random crop 32, flip"
        return source

    def load_data(self, data_dir: str | None, device: Any) -> DataSource:
        """All of CIFAR-10, or with recipe `train_limit` N the first N/10 training images of
        each class (a balanced subset for quick checks; the record flags it)."""
        import numpy as np
        import torch

        limit = int((self.recipe.extra if self.recipe else {}).get("train_limit", 0) or 0)
        if (self.recipe.extra if self.recipe else {}).get("data") == "workers":
            return self._streaming(data_dir, device, limit)
        arrays, where = find_cifar10(data_dir, download=self.download)

        def prep(images: np.ndarray, labels: np.ndarray, per_class: int) -> tuple[Any, Any]:
            images, labels = balanced_subset(images, labels, per_class)
            x = torch.from_numpy(images).permute(0, 3, 1, 2).float()
            x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
            return x.contiguous().to(device), torch.from_numpy(labels).to(device)

        train_x, train_y = prep(*arrays["train"], max(1, limit // 10) if limit else 0)
        test_x, test_y = prep(*arrays["test"], 0)
        if limit:
            where += f" (training subset: {len(train_y)} images)"
        return self.in_memory_source(train_x, train_y, test_x, test_y, where)


def check_muon_flag(recipe: Recipe) -> None:
    """`muon` is a switch of the airbench family; any recipe may carry it, as a bool."""
    if not isinstance(recipe.extra.get("muon", False), bool):
        raise ValueError(
            f"recipe field 'muon': expected true or false, got {recipe.extra['muon']!r}"
        )
