"""Labeled image folders for `perfsuite eval`: decoded once into uint8 arrays shaped like the
workload's input, so shifted test sets and probe sets go through the model the way its own
test set does. Images are only decoded by PIL, never unpickled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsuite.workloads.data import DataError
from perfsuite.workloads.imagefolder import EVAL_SPLITS, list_split


@dataclass
class ImageSet:
    """uint8 images (N, H, W, C), int64 labels, the folder they came from, how many were
    resized to the model's input size."""

    images: np.ndarray
    labels: np.ndarray
    folder: Path
    classes: list[str]
    resized: int


def eval_split(root: Path) -> Path:
    """The test split of `root`: root/val or root/test when present, else root itself (its
    sub-folders are the classes)."""
    if not root.is_dir():
        raise DataError(f"{root}: folder not found")
    for name in EVAL_SPLITS:
        if (root / name).is_dir():
            return root / name
    return root


def probe_splits(root: Path) -> tuple[Path, Path]:
    """(train, test) of a probe set: root/train and root/test (or root/val)."""
    if not (root / "train").is_dir():
        raise DataError(f"{root}: no train/ folder (a probe set needs train/ and test/)")
    for name in EVAL_SPLITS:
        if (root / name).is_dir():
            return root / "train", root / name
    raise DataError(f"{root}: no test/ or val/ folder (a probe set needs train/ and test/)")


def load_images(
    folder: Path, shape: tuple[int, ...], classes: list[str] | None = None, exact: bool = False
) -> ImageSet:
    """Decode `folder/<class>/*` to the workload's input `shape` (C, H, W): greyscale for one
    channel, RGB for three; other sizes are resized (bilinear) and counted. With `exact`,
    every class folder must be one of `classes` (a shifted test set has the same classes)."""
    from PIL import Image

    if exact and classes is not None and folder.is_dir():
        extra = sorted(d.name for d in folder.iterdir() if d.is_dir() and d.name not in classes)
        if extra:
            raise DataError(
                f"{folder}: class folder(s) the model does not know: {', '.join(extra)}"
            )
    names, files = list_split(folder, classes)
    channels, height, width = shape
    mode = {1: "L", 3: "RGB"}.get(channels)
    if mode is None:
        raise DataError(f"{folder}: the model takes {channels}-channel input, not an image")
    out = np.empty((len(files), height, width, channels), dtype=np.uint8)
    labels = np.empty(len(files), dtype=np.int64)
    resized = 0
    for k, (path, label) in enumerate(files):
        try:
            with Image.open(path) as img:
                img = img.convert(mode)
                if img.size != (width, height):
                    img = img.resize((width, height), Image.BILINEAR)
                    resized += 1
                arr = np.asarray(img, dtype=np.uint8)
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise DataError(f"{path}: cannot decode image: {exc}") from None
        out[k] = arr[..., None] if arr.ndim == 2 else arr
        labels[k] = label
    return ImageSet(out, labels, folder, names, resized)
