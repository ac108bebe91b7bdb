"""Image-folder loader throughput: images per second decoded, augmented and collated.

Two trees, both made in a temp folder from the shared CIFAR-10 JPEG copy:
- cifar: the original 32x32 JPEGs (PERFSUITE_BENCH_IMAGES of the training set, default 2,000),
  CIFAR transform (reflect-pad, crop, flip, normalize);
- imagenet-size: a few hundred of the same pictures upscaled to 500x375 (the typical ImageNet
  photo size) and re-encoded as JPEG quality 90, ImageNet transform (random-resized crop 224,
  flip, normalize). Decode cost follows the pixel count, so this stands in for ImageNet's
  decode work; the content is upscaled CIFAR, not ImageNet.

For 0, 1, 2, ... workers (PERFSUITE_BENCH_WORKERS, default "0,1,2"): one warm-up epoch (starts
the persistent workers and warms the page cache), then the median and range of the rate over
five timed epochs on the host (batches stay on the CPU). Measured wall-clock, host CPU shared
with whatever else runs.
With 0 workers, collation (torch.stack) runs on torch's intra-op threads in this process; on an
oversubscribed host set OMP_NUM_THREADS=1 to see the decode rate without that contention.
`python -m bench loader`.
"""

from __future__ import annotations

import os
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

from perfsuite.fmt import table

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PERFSUITE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _extract(dest: Path, per_class: int) -> None:
    from perfsuite.workloads.cifar10.data import CLASSES

    wanted = {
        f"{s}/{c}/{i:04d}.jpg" for s in ("train", "test") for c in CLASSES for i in range(per_class)
    }
    with tarfile.open(SHARED / "cifar10-jpeg.tar.gz") as tar:
        members = [m for m in tar.getmembers() if m.name.lstrip("./") in wanted]
        tar.extractall(dest, members=members, filter="data")


def _upscale(src: Path, dest: Path, per_class: int) -> None:
    from PIL import Image

    for path in sorted(src.rglob("*.jpg")):
        rel = path.relative_to(src)
        if int(path.stem) >= per_class:
            continue
        (dest / rel.parent).mkdir(parents=True, exist_ok=True)
        with Image.open(path) as im:
            im.convert("RGB").resize((500, 375), Image.Resampling.BICUBIC).save(
                dest / rel, quality=90
            )


def rates(root: Path, transforms: tuple, workers: int, batch: int, epochs: int) -> tuple:
    """(images per epoch, [images/s of each of `epochs` timed epochs]) after one warm-up
    epoch."""
    import torch

    from perfsuite.workloads.imagefolder import ImageFolderSource

    src = ImageFolderSource(root, *transforms, device="cpu", num_workers=workers)
    g = torch.Generator().manual_seed(0)
    out = []
    try:
        for _ in src.train_batches(batch, g):
            pass
        for _ in range(epochs):
            t0 = time.perf_counter()
            for _ in src.train_batches(batch, g):
                pass
            out.append(src.num_train / (time.perf_counter() - t0))
        return src.num_train, out
    finally:
        src.close()


def main() -> None:
    from perfsuite.hostinfo import usable_cpus
    from perfsuite.workloads.cifar10.task import MEAN, STD
    from perfsuite.workloads.transforms import cifar_transforms, imagenet_transforms

    if not (SHARED / "cifar10-jpeg.tar.gz").is_file():
        print(f"[bench] loader: {SHARED / 'cifar10-jpeg.tar.gz'} not found, skipped")
        return
    n = int(os.environ.get("PERFSUITE_BENCH_IMAGES", "2000"))
    workers = [int(w) for w in os.environ.get("PERFSUITE_BENCH_WORKERS", "0,1,2").split(",")]
    per_class = max(1, n // 10)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "cifar", Path(tmp) / "big"
        _extract(small, per_class)
        _upscale(small, big, max(1, per_class // 5))
        cases = [
            ("cifar 32x32 JPEG, CIFAR transform", small, cifar_transforms(MEAN, STD), 5),
            ("500x375 JPEG, ImageNet transform", big, imagenet_transforms(), 5),
        ]
        for name, root, tfs, epochs in cases:
            for w in workers:
                count, r = rates(root, tfs, w, batch=100, epochs=epochs)
                med, lo, hi = statistics.median(r), min(r), max(r)
                rows.append([name, w, count, epochs, f"{med:,.0f}", f"{lo:,.0f}-{hi:,.0f}"])
                print(f"  {name}, {w} workers: {med:,.0f} images/s", flush=True)
    import torch

    print(
        f"host: {usable_cpus()} usable CPUs, torch intra-op threads {torch.get_num_threads()} "
        "(collation runs on them with 0 workers); measured wall-clock, batches on the CPU"
    )
    heads = ["images", "workers", "images/epoch", "epochs", "median images/s", "range"]
    print(table(rows, heads))


if __name__ == "__main__":
    main()
