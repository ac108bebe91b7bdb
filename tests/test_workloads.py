"""Workload data and models: the digits split, CIFAR-10 loaders (pickle, image folders)."""

from __future__ import annotations

import pickle
import shutil
import tarfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from perfsuite.workloads import get_workload, workload_names  # noqa: E402
from perfsuite.workloads.cifar10.data import CLASSES, find_cifar10, safe_unpickle  # noqa: E402
from perfsuite.workloads.cifar10.resnet9 import augment, build_resnet9  # noqa: E402
from perfsuite.workloads.data import DataError  # noqa: E402
from perfsuite.workloads.digits.workload import split_indices  # noqa: E402
from tests.conftest import shared_path  # noqa: E402


def test_builtin_workloads_registered():
    assert {"digits", "cifar10"} <= set(workload_names())
    with pytest.raises(KeyError, match="unknown workload 'nope'"):
        get_workload("nope")


def test_digits_split_is_fixed_stratified_and_disjoint():
    wl = get_workload("digits")
    data = wl.load_data(None, "cpu")
    assert (len(data.train_y), len(data.test_y)) == (1438, 359)
    counts = torch.bincount(data.test_y, minlength=10)
    assert counts.min() >= 35 and counts.max() <= 37  # 20% of each class (174..183 images)
    labels = np.repeat(np.arange(10), 10)
    tr, te = split_indices(labels)
    assert set(tr).isdisjoint(te) and len(te) == 20
    _, te2 = split_indices(labels)
    assert (te == te2).all()


def test_digits_are_scikit_learns_read_without_importing_it():
    """The file scikit-learn ships, read directly: the same pixels and labels as its
    `load_digits()`, and a run's data loading imports neither scikit-learn nor scipy."""
    import subprocess
    import sys

    from sklearn.datasets import load_digits

    from perfsuite.workloads.digits.workload import load_digits_table

    pixels, labels = load_digits_table()
    ref = load_digits()
    assert pixels.dtype == ref.images.dtype and np.array_equal(pixels, ref.images)
    assert labels.dtype == np.int64 and np.array_equal(labels, ref.target)
    code = (
        "import sys\n"
        "from perfsuite.workloads.digits.workload import digits_split\n"
        "assert len(digits_split()[0]) == 1797\n"
        "print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_recipe_overrides_convert_and_reject():
    r = get_workload("digits").default_recipe()
    r.override("lr", "0.05")
    r.override("nesterov", "false")
    r.override("width", "16")
    assert (r.lr, r.nesterov, r.extra["width"]) == (0.05, False, 16)
    with pytest.raises(ValueError, match="unknown recipe field 'lrr'"):
        r.override("lrr", "1")
    with pytest.raises(ValueError, match="cannot read 'abc' as float"):
        r.override("lr", "abc")


def _write_batch(path, n, seed):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = [int(i % 10) for i in range(n)]
    with open(path, "wb") as fh:
        pickle.dump({b"batch_label": b"x", b"labels": labels, b"data": data}, fh, protocol=2)
    return data, labels


def test_cifar_pickle_layout_loads_without_arbitrary_objects(tmp_path):
    root = tmp_path / "cifar-10-batches-py"
    root.mkdir()
    written = [_write_batch(root / f"data_batch_{i}", 20, i) for i in range(1, 6)]
    test_data, _ = _write_batch(root / "test_batch", 10, 9)
    arrays, where = find_cifar10(str(tmp_path))
    assert "python batches" in where
    train_x, train_y = arrays["train"]
    assert train_x.shape == (100, 32, 32, 3) and train_y.shape == (100,)
    # channel-major rows (R plane, G plane, B plane) become HWC pixels
    row = written[0][0][3]
    assert train_x[3, 0, 1, 0] == row[1] and train_x[3, 0, 1, 2] == row[2 * 1024 + 1]
    assert (arrays["test"][0][0].transpose(2, 0, 1).reshape(-1) == test_data[0]).all()


def test_malicious_pickle_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (shutil.rmtree, (str(tmp_path / "victim"),))

    (tmp_path / "victim").mkdir()
    bad = tmp_path / "data_batch_1"
    bad.write_bytes(pickle.dumps({b"data": Evil()}))
    with pytest.raises(DataError, match=r"refusing to load shutil\.rmtree"):
        safe_unpickle(bad)
    assert (tmp_path / "victim").is_dir()


def test_missing_dataset_error_names_the_folder(tmp_path):
    with pytest.raises(DataError, match=f"{tmp_path}: no CIFAR-10 found"):
        find_cifar10(str(tmp_path))


def test_cifar_image_folder_layout_from_shared_copy(tmp_path, monkeypatch):
    tarball = shared_path("cifar10-jpeg.tar.gz")
    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path / "cache"))
    wanted = {
        f"{split}/{c}/{i:04d}.jpg" for split in ("train", "test") for c in CLASSES for i in range(3)
    }
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if m.name.lstrip("./") in wanted]
        tar.extractall(tmp_path / "data", members=members, filter="data")
    got = sorted(str(p.relative_to(tmp_path / "data")) for p in (tmp_path / "data").rglob("*.jpg"))
    assert len(got) == 60, got[:5]
    arrays, where = find_cifar10(str(tmp_path / "data"), progress=False)
    assert "image folders" in where
    x, y = arrays["train"]
    assert x.shape == (30, 32, 32, 3) and x.dtype == np.uint8
    assert list(np.bincount(y)) == [3] * 10  # labels follow the canonical class order
    from PIL import Image

    first = np.asarray(Image.open(tmp_path / "data/train/airplane/0000.jpg").convert("RGB"))
    assert (x[0] == first).all()
    again, _ = find_cifar10(str(tmp_path / "data"), progress=False)  # from the .npz cache
    assert (again["train"][0] == x).all()
    assert list((tmp_path / "cache" / "datasets").glob("*.npz"))


def test_resnet9_and_augmentation_shapes():
    model = build_resnet9(width=0.125)
    assert model(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    g = torch.Generator().manual_seed(0)
    x = torch.arange(2 * 3 * 40 * 40, dtype=torch.float32).view(2, 3, 40, 40)
    out = augment(x, g)
    assert out.shape == (2, 3, 32, 32)
    # each output is a 32x32 window of its own padded input, possibly mirrored
    for b in range(2):
        o = out[b, 0]
        found = any(
            torch.equal(o, x[b, 0, dy : dy + 32, dx : dx + 32])
            or torch.equal(o, x[b, 0, dy : dy + 32, dx : dx + 32].flip(1))
            for dy in range(9)
            for dx in range(9)
        )
        assert found


def test_cifar10_presets_defaults_and_dawnbench_unchanged():
    from perfsuite.workloads.base import Recipe

    wl = get_workload("cifar10")
    presets = wl.presets()
    assert set(presets) == {"dawnbench", "cpu", "airbench", "airbench_muon", "cpu-fast"}
    assert presets["dawnbench"] == Recipe(
        epochs=24,
        batch_size=512,
        lr=0.4,
        weight_decay=5e-4,
        label_smoothing=0.2,
        warmup_fraction=0.2,
        extra={"width": 1.0, "train_limit": 0, "tta_flip": True},
    )
    assert presets["cpu"] == Recipe(
        epochs=8,
        batch_size=256,
        lr=0.3,
        weight_decay=5e-4,
        label_smoothing=0.2,
        warmup_fraction=0.25,
        extra={"width": 0.25, "train_limit": 0, "tta_flip": True},
    )
    assert wl.default_recipe("cpu") == presets["cpu-fast"]
    assert wl.default_recipe("cuda:0") == presets["airbench"]
    assert presets["cpu-fast"].extra["precision"] == "fp32"
    assert presets["airbench"].extra["precision"] == "bf16"
    wl.configure(presets["dawnbench"])
    assert wl.model_name(presets["dawnbench"]) == "ResNet-9 style, width x1.0"
    assert type(wl.build_model(presets["cpu"])).__name__ == "Sequential"  # the ResNet-9
    assert type(wl.build_model(presets["cpu-fast"])).__name__ == "FastNet"
    bad = Recipe(extra={"family": "vgg"})
    with pytest.raises(ValueError, match="recipe field 'family'"):
        wl.configure(bad)


def test_cifar10_hands_each_call_to_its_recipes_family():
    from perfsuite.workloads.base import Recipe
    from perfsuite.workloads.cifar10.airbench.workload import AirbenchWorkload
    from perfsuite.workloads.cifar10.resnet9 import ResNet9Workload

    assert set(ResNet9Workload().presets()) == {"dawnbench", "cpu"}
    assert set(AirbenchWorkload().presets()) == {"airbench", "airbench_muon", "cpu-fast"}
    wl = get_workload("cifar10")
    presets = wl.presets()
    for name, recipe in presets.items():
        family = ResNet9Workload if name in ("dawnbench", "cpu") else AirbenchWorkload
        assert type(wl.family(recipe)) is family, name
    assert type(wl.family()) is ResNet9Workload  # no recipe: the ResNet-9 (flops workload:cifar10)
    wl.download = True
    wl.configure(presets["cpu-fast"])
    impl = wl.family()
    assert type(impl) is AirbenchWorkload
    assert impl.recipe is wl.recipe and impl.download is True
    with pytest.raises(ValueError, match="needs the fast family"):
        wl.configure(Recipe(extra={"activation": "silu"}))
