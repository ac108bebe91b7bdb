"""CIFAR-10 loading: canonical python-pickle batches (safely), image folders, or torchvision.

The canonical `cifar-10-batches-py/` files are pickles. Unpickling runs arbitrary code, so they
are read with an allow-list unpickler that can only rebuild numpy arrays, lists, dicts, strings
and numbers; anything else is refused with an error naming the file.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from perfsuite.cachefiles import cache_dir
from perfsuite.workloads.data import DataError

CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
_PICKLE_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("_codecs", "encode"),
}
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp"}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PICKLE_ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def safe_unpickle(path: Path) -> Any:
    """Load a CIFAR batch pickle allowing only numpy-array reconstruction."""
    try:
        return _SafeUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise DataError(f"{path}: not a CIFAR-10 batch: {exc}") from None


def _batch_arrays(path: Path) -> tuple[np.ndarray, np.ndarray]:
    obj = safe_unpickle(path)
    if not isinstance(obj, dict):
        raise DataError(f"{path}: not a CIFAR-10 batch: top level is {type(obj).__name__}")
    data = obj.get(b"data", obj.get("data"))
    labels = obj.get(b"labels", obj.get("labels"))
    if data is None or labels is None:
        raise DataError(f"{path}: field data/labels: missing")
    data = np.asarray(data, dtype=np.uint8)
    if data.ndim != 2 or data.shape[1] != 3072:
        raise DataError(f"{path}: field data: expected N x 3072, got {data.shape}")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return images, np.asarray(labels, dtype=np.int64)


def load_pickle_layout(root: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`cifar-10-batches-py/`: data_batch_1..5 (train) and test_batch."""
    train = [_batch_arrays(root / f"data_batch_{i}") for i in range(1, 6)]
    test = _batch_arrays(root / "test_batch")
    return {
        "train": (np.concatenate([t[0] for t in train]), np.concatenate([t[1] for t in train])),
        "test": test,
    }


def _list_split(split_dir: Path) -> list[tuple[Path, int]]:
    classes = sorted(d.name for d in split_dir.iterdir() if d.is_dir())
    if sorted(classes) != sorted(CLASSES):
        raise DataError(f"{split_dir}: expected the 10 CIFAR-10 class folders, found {classes}")
    files = []
    for label, cls in enumerate(CLASSES):
        files.extend(
            (p, label)
            for p in sorted((split_dir / cls).iterdir())
            if p.suffix.lower() in IMAGE_SUFFIXES
        )
    return files


def _decode(files: list[tuple[Path, int]], progress: bool) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image
    from tqdm import tqdm

    images = np.empty((len(files), 32, 32, 3), dtype=np.uint8)
    labels = np.empty(len(files), dtype=np.int64)
    for i, (path, label) in enumerate(
        tqdm(files, desc="decoding images", unit="img", disable=not progress, leave=False)
    ):
        with Image.open(path) as im:
            arr = np.asarray(im.convert("RGB"))
        if arr.shape != (32, 32, 3):
            raise DataError(f"{path}: expected a 32x32 image, got {arr.shape[1]}x{arr.shape[0]}")
        images[i] = arr
        labels[i] = label
    return images, labels


def _cache_path(root: Path, listing: list[tuple[Path, int]]) -> Path:
    base = cache_dir()
    h = hashlib.sha256(str(root.resolve()).encode())
    h.update(str(len(listing)).encode())
    for p, _ in listing[:: max(1, len(listing) // 64)]:
        h.update(f"{p.name}:{p.stat().st_mtime_ns}".encode())
    return base / "datasets" / f"cifar10-folder-{h.hexdigest()[:16]}.npz"


def load_folder_layout(
    root: Path, progress: bool = True
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`train/<class>/*` and `test/<class>/*` image files, decoded once and cached as .npz."""
    listings = {split: _list_split(root / split) for split in ("train", "test")}
    cache = _cache_path(root, listings["train"] + listings["test"])
    if cache.is_file():
        with np.load(cache, allow_pickle=False) as z:
            return {s: (z[f"{s}_x"], z[f"{s}_y"]) for s in ("train", "test")}
    out = {split: _decode(files, progress) for split, files in listings.items()}
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp.npz")
    np.savez(tmp, **{f"{s}_{k}": out[s][i] for s in out for i, k in enumerate("xy")})
    os.replace(tmp, cache)
    return out


def balanced_subset(
    images: np.ndarray, labels: np.ndarray, per_class: int
) -> tuple[np.ndarray, np.ndarray]:
    """The first `per_class` examples of each of the 10 classes, in file order (0: all); the
    recipe's `train_limit` subset, the same in both frameworks."""
    if not per_class:
        return images, labels
    keep = np.sort(np.concatenate([np.flatnonzero(labels == c)[:per_class] for c in range(10)]))
    return images[keep], labels[keep]


def find_cifar10(data_dir: str | None, download: bool = False, progress: bool = True):
    """Locate and load CIFAR-10 under `data_dir` in any supported layout.

    Returns ({"train": (images NHWC uint8, labels), "test": ...}, description).
    """
    if data_dir is None:
        raise DataError("cifar10 needs --data-dir (pickle or image-folder layout)")
    root = Path(data_dir).expanduser()
    for cand in (root, root / "cifar-10-batches-py"):
        if (cand / "data_batch_1").is_file():
            return load_pickle_layout(cand), f"CIFAR-10 python batches at {cand}"
    for cand in (root, root / "cifar10", root / "CIFAR-10-images"):
        if (cand / "train").is_dir() and (cand / "test").is_dir():
            return load_folder_layout(cand, progress), f"CIFAR-10 image folders at {cand}"
    if download:
        try:
            import torchvision
        except ImportError:
            raise DataError(
                f"{root}: no CIFAR-10 found and torchvision is not installed to download it"
            ) from None
        torchvision.datasets.CIFAR10(str(root), train=True, download=True)
        return load_pickle_layout(root / "cifar-10-batches-py"), f"downloaded to {root}"
    raise DataError(
        f"{root}: no CIFAR-10 found (expected cifar-10-batches-py/ or train/<class>/ and "
        "test/<class>/; pass --download to fetch it with torchvision)"
    )
