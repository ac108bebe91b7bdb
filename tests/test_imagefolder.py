"""The streaming image-folder source and its transforms, on a tiny generated PNG tree and on a
subset of the shared CIFAR-10 JPEG copy."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from perfsuite.workloads.cifar10.data import CLASSES
from perfsuite.workloads.cifar10.task import MEAN, STD
from perfsuite.workloads.data import DataError
from perfsuite.workloads.imagefolder import ImageFolderSource, balanced_limit
from perfsuite.workloads.transforms import (
    CifarEval,
    CifarTrain,
    ImageNetEval,
    ImageNetTrain,
    random_resized_box,
)
from tests.conftest import shared_path

# Written in this order on purpose: labels must follow the sorted names (ant, bee, cat).
TRAIN_COUNTS = {"cat": 5, "ant": 4, "bee": 4}
EVAL_COUNT = 2
IDENTITY = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))  # normalization that keeps raw pixel values


def _image(label: int, k: int, split: str) -> Image.Image:
    """Red channel constant and unique per file (label*40 + k, +20 for eval), green/blue noise,
    so any crop or flip still tells which file and class it came from."""
    rng = np.random.default_rng([label, k, len(split)])
    arr = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    arr[..., 0] = label * 40 + k + (20 if split != "train" else 0)
    return Image.fromarray(arr)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for name, n in TRAIN_COUNTS.items():
        label = sorted(TRAIN_COUNTS).index(name)
        for split, count in (("train", n), ("test", EVAL_COUNT)):
            d = root / split / name
            d.mkdir(parents=True)
            for k in range(count):
                _image(label, k, split).save(d / f"{k:03d}.png")
    return root


def _source(root: Path, workers: int = 0, **kw) -> ImageFolderSource:
    return ImageFolderSource(
        root, CifarTrain(*IDENTITY), CifarEval(*IDENTITY), num_workers=workers, **kw
    )


def _epochs(src: ImageFolderSource, seed: int, epochs: int, batch: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [[(b.inputs[0], b.target) for b in src.train_batches(batch, g)] for _ in range(epochs)]


def test_counts_labels_and_description(tree):
    src = _source(tree, workers=0)
    assert src.kind == "image-folder"
    assert src.classes == ["ant", "bee", "cat"] and src.num_classes == 3
    assert (src.num_train, src.num_eval) == (13, 6)
    assert src.eval_split == "test"
    assert str(tree) in src.description and "13 train" in src.description
    assert "6 test" in src.description and "0 loader workers" in src.description
    assert "reflect-pad 4" in src.description and "pinned memory off" in src.description


def test_train_epoch_shapes_labels_and_last_partial_batch(tree):
    src = _source(tree, workers=0)
    batches = list(src.train_batches(5, torch.Generator().manual_seed(0)))
    assert [b.size for b in batches] == [5, 5, 3]
    x = torch.cat([b.inputs[0] for b in batches])
    y = torch.cat([b.target for b in batches])
    assert x.shape == (13, 3, 32, 32) and x.dtype == torch.float32 and y.dtype == torch.int64
    red = x[:, 0]
    # reflect padding and flips keep the constant red channel: it names the file and class
    assert (red == red[:, :1, :1]).all()
    ids = red[:, 0, 0].to(torch.int64)
    assert torch.equal(ids // 40, y)
    expected = sorted(lab * 40 + k for lab, n in enumerate((4, 4, 5)) for k in range(n))
    assert sorted(ids.tolist()) == expected  # every image exactly once
    assert ids.tolist() != expected  # shuffled
    src.close()


def test_augmentation_identical_with_0_and_2_workers(tree):
    serial = _epochs(_source(tree, workers=0), seed=7, epochs=2, batch=4)
    src = _source(tree, workers=2)
    parallel = _epochs(src, seed=7, epochs=2, batch=4)
    src.close()
    for e in range(2):
        assert len(serial[e]) == len(parallel[e]) == 4
        for (xs, ys), (xp, yp) in zip(serial[e], parallel[e], strict=True):
            assert torch.equal(xs, xp) and torch.equal(ys, yp)
    # a new epoch redraws each sample's crop and flip (compared per file, not per position)
    by_file = [{int(img[0, 0, 0]): img for x, _ in serial[e] for img in x} for e in range(2)]
    assert by_file[0].keys() == by_file[1].keys()
    redrawn = sum(not torch.equal(by_file[0][k], by_file[1][k]) for k in by_file[0])
    assert redrawn >= 10, redrawn


@pytest.mark.parametrize("workers", [0, 2])
def test_passes_leave_torch_global_rng_alone(tree, workers):
    """Model init and dropout draw from the global RNG; the loader must not consume it."""
    src = _source(tree, workers=workers)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    for _ in range(2):
        list(src.train_batches(4, torch.Generator().manual_seed(0)))
        list(src.eval_batches(4))
    src.sample(2)
    src.close()
    assert torch.equal(torch.get_rng_state(), before)


def test_same_sample_gets_same_augmentation_in_any_order(tree):
    """A sample's draws depend on (epoch seed, index) only, not on its position in the order."""
    src = _source(tree)
    x, _ = src._train[(3, 12345)]
    again, _ = src._train[(3, 12345)]
    other, _ = src._train[(3, 54321)]
    assert torch.equal(x, again)
    assert x.shape == other.shape == (3, 32, 32)


def test_eval_order_fixed_and_unaugmented(tree):
    src = _source(tree, workers=2)
    runs = [list(src.eval_batches(4)) for _ in range(2)]
    assert [b.size for b in runs[0]] == [4, 2]
    y = torch.cat([b.target for b in runs[0]])
    assert y.tolist() == [0, 0, 1, 1, 2, 2]
    x = torch.cat([b.inputs[0] for b in runs[0]])
    assert torch.equal(x, torch.cat([b.inputs[0] for b in runs[1]]))
    raw = np.asarray(Image.open(tree / "test/bee/001.png"), dtype=np.float32).transpose(2, 0, 1)
    assert torch.equal(x[3], torch.from_numpy(raw))
    s = src.sample(3)
    assert s.size == 3 and torch.equal(s.inputs[0], x[:3]) and s.target.tolist() == [0, 0, 1]
    src.close()


def test_val_split_preferred_and_fixed_class_order(tree):
    (tree / "test").rename(tree / "val")
    src = _source(tree, classes=["cat", "bee", "ant"])
    assert src.eval_split == "val"
    assert [b.target.tolist() for b in src.eval_batches(6)] == [[0, 0, 1, 1, 2, 2]]
    red = next(iter(src.eval_batches(6))).inputs[0][:, 0, 0, 0]
    assert red.tolist() == [100.0, 101.0, 60.0, 61.0, 20.0, 21.0]  # cat first


def test_train_limit_is_balanced_first_n(tree):
    src = _source(tree, train_limit=7)
    assert src.num_train == 7 and "train_limit 7" in src.description
    y = torch.cat([b.target for b in src.train_batches(7, torch.Generator().manual_seed(0))])
    assert np.bincount(y.numpy()).tolist() == [3, 2, 2]
    files = [(f"f{i}", lab) for lab in range(2) for i in range(3)]
    assert balanced_limit(files, 4, 2) == [("f0", 0), ("f1", 0), ("f0", 1), ("f1", 1)]
    with pytest.raises(DataError, match="train_limit: must be positive"):
        _source(tree, train_limit=0)


def test_missing_split_or_class_errors_name_the_folder(tree, tmp_path):
    with pytest.raises(DataError, match=f"^{tmp_path / 'nope'}: image folder not found$"):
        _source(tmp_path / "nope")
    (tree / "test/bee/000.png").unlink()
    (tree / "test/bee/001.png").unlink()
    with pytest.raises(DataError, match=f"^{tree / 'test/bee'}: no .jpg/.jpeg/.png images$"):
        _source(tree)
    (tree / "test/bee").rmdir()
    with pytest.raises(DataError, match=f"^{tree / 'test'}: class folder\\(s\\) missing: bee$"):
        _source(tree)
    with pytest.raises(DataError, match=f"^{tree / 'train'}: class folder\\(s\\) missing: emu$"):
        _source(tree, classes=["ant", "emu"], eval_split="test")
    (tree / "test").rename(tree / "other")
    with pytest.raises(DataError, match=f"^{tree}: no val/ or test/ split folder$"):
        _source(tree)
    with pytest.raises(DataError, match=f"^{tree / 'train2'}: split folder not found$"):
        _source(tree.parent / "tree", eval_split="train2")


@pytest.mark.parametrize("workers", [0, 2])
def test_undecodable_image_one_line_error(tree, workers):
    bad = tree / "train/bee/002.png"
    bad.write_bytes(b"not a png")
    src = _source(tree, workers=workers)
    with pytest.raises(DataError) as info:
        list(src.train_batches(13, torch.Generator().manual_seed(0)))
    src.close()
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{bad}: cannot decode image")


def test_file_gone_after_listing_one_line_error(tree):
    src = _source(tree, workers=2)
    gone = tree / "test/ant/000.png"
    gone.unlink()
    with pytest.raises(DataError, match=f"^{gone}: cannot read: No such file or directory$"):
        list(src.eval_batches(6))
    src.close()


def test_wrong_image_size_error_names_the_file(tree):
    odd = tree / "test/cat/001.png"
    Image.new("RGB", (40, 32)).save(odd)
    src = _source(tree)
    with pytest.raises(DataError, match=f"^{odd}: expected a 32x32 image, got 40x32$"):
        list(src.eval_batches(6))


def test_stale_pass_refuses_to_resume(tree):
    src = _source(tree)
    g = torch.Generator().manual_seed(0)
    old = src.train_batches(4, g)
    next(old)
    assert next(src.train_batches(4, g)).size == 4
    with pytest.raises(RuntimeError, match="newer train pass with batch size 4"):
        next(old)


def test_cifar_train_is_a_window_of_the_padded_image():
    arr = np.arange(32 * 32 * 3, dtype=np.int64).reshape(32, 32, 3) % 251
    image = Image.fromarray(arr.astype(np.uint8))
    padded = np.pad(arr, ((4, 4), (4, 4), (0, 0)), mode="reflect").astype(np.float32)
    mean, std = (10.0, 20.0, 30.0), (2.0, 4.0, 5.0)
    out = CifarTrain(mean, std)(image, np.random.default_rng(3))
    assert out.shape == (3, 32, 32) and out.dtype == np.float32 and out.flags.c_contiguous
    hwc = out.transpose(1, 2, 0) * np.array(std, np.float32) + np.array(mean, np.float32)
    found = [
        (dy, dx, flip)
        for dy in range(9)
        for dx in range(9)
        for flip in (False, True)
        if np.allclose(hwc, padded[dy : dy + 32, dx : dx + 32][:, :: -1 if flip else 1], atol=1e-3)
    ]
    assert len(found) == 1
    with pytest.raises(ValueError, match="expected a 32x32 image, got 40x32"):
        CifarEval(mean, std)(Image.new("RGB", (40, 32)))


def test_random_resized_box_bounds_and_area():
    rng = np.random.default_rng(0)
    for _ in range(200):
        left, top, w, h = random_resized_box(500, 375, rng)
        assert min(left, top) >= 0 and left + w <= 500 and top + h <= 375
        assert 0.08 * 500 * 375 * 0.9 <= w * h <= 500 * 375
        assert 3 / 4 * 0.95 <= w / h <= 4 / 3 * 1.05
    # an impossible scale falls back to the largest centred crop with a clamped ratio
    assert random_resized_box(400, 100, rng, scale=(2.0, 3.0)) == (133, 0, 133, 100)


def test_imagenet_transforms_shapes_and_centre_crop():
    rng = np.random.default_rng(1)
    arr = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    image = Image.fromarray(arr)
    out = ImageNetTrain()(image, np.random.default_rng(5))
    assert out.shape == (3, 224, 224) and out.dtype == np.float32
    assert np.array_equal(out, ImageNetTrain()(image, np.random.default_rng(5)))
    ev = ImageNetEval(mean=(0, 0, 0), std=(1, 1, 1))(image)
    assert ev.shape == (3, 224, 224)
    resized = np.asarray(image.resize((341, 256), Image.Resampling.BILINEAR), dtype=np.float32)
    assert np.array_equal(ev, resized[16:240, 58:282].transpose(2, 0, 1))
    gray = Image.fromarray(arr[..., 0])  # grayscale JPEGs exist in ImageNet
    assert ImageNetEval()(gray).shape == (3, 224, 224)


def test_shared_cifar10_jpegs_decode_with_cifar_statistics(tmp_path):
    tarball = shared_path("cifar10-jpeg.tar.gz")
    per_class = 40
    wanted = {
        f"{s}/{c}/{i:04d}.jpg" for s in ("train", "test") for c in CLASSES for i in range(per_class)
    }
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.name.lstrip("./") in wanted]
        tar.extractall(tmp_path, members=members, filter="data")
    src = ImageFolderSource(
        tmp_path, CifarTrain(MEAN, STD), CifarEval(*IDENTITY), num_workers=0, classes=CLASSES
    )
    assert (src.num_train, src.num_eval) == (10 * per_class, 10 * per_class)
    x = torch.cat([b.inputs[0] for b in src.eval_batches(100)])  # raw 0-255 pixels
    assert x.shape == (400, 3, 32, 32) and x.dtype == torch.float32
    mean, std = x.mean(dim=(0, 2, 3)), x.std(dim=(0, 2, 3))
    # 400 images (the first of each class) against the 50,000-image statistics; they give
    # mean 127.0 / 124.4 / 115.2, std 63.7 / 63.1 / 66.9
    assert torch.allclose(mean, torch.tensor(MEAN), atol=4.0), mean
    assert torch.allclose(std, torch.tensor(STD), atol=4.0), std
    assert mean[0] > mean[1] > mean[2]  # red > green > blue, as in CIFAR-10
    train = next(iter(src.train_batches(400, torch.Generator().manual_seed(0))))
    assert train.inputs[0].shape == (400, 3, 32, 32)
    # normalized with the CIFAR statistics, training inputs are near zero mean, unit spread
    assert train.inputs[0].mean().abs() < 0.15 and 0.85 < train.inputs[0].std() < 1.15
