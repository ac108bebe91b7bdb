"""The `imagenet` workload: recipe (schedule, weight-decay groups, progressive resizing),
top-1/top-5 evaluation, the loader on a generated JPEG tree, and short CPU runs (real files and
synthetic) whose counted FLOPs per step must equal perfsuite's ResNet-50 count."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from PIL import Image  # noqa: E402

from perfsuite.flops import count_model  # noqa: E402
from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.workloads import get_workload  # noqa: E402
from perfsuite.workloads.base import lr_factor  # noqa: E402
from perfsuite.workloads.imagefolder import ImageFolderSource  # noqa: E402
from perfsuite.workloads.imagenet.recipe import preset  # noqa: E402
from perfsuite.workloads.imagenet.resnet import resnet50  # noqa: E402
from perfsuite.workloads.progressive import parse_schedule, size_for  # noqa: E402
from perfsuite.workloads.switches import parse_switches  # noqa: E402
from perfsuite.workloads.transforms import imagenet_transforms  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")

CLASSES = ["n01", "n02", "n03", "n04", "n05", "n06"]  # six: top-5 is not trivially 1
SIZES = [(40, 30), (30, 44), (36, 36)]  # landscape, portrait, square JPEGs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """train/<wnid>/*.JPEG (2 per class) and val/<wnid>/*.JPEG (1 per class), tiny JPEGs."""
    root = tmp_path / "imagenet"
    for label, wnid in enumerate(CLASSES):
        for split, count in (("train", 2), ("val", 1)):
            d = root / split / wnid
            d.mkdir(parents=True)
            for k in range(count):
                w, h = SIZES[(label + k) % len(SIZES)]
                rng = np.random.default_rng([label, k, len(split)])
                arr = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
                Image.fromarray(arr).save(d / f"{wnid}_{k}.JPEG", format="JPEG", quality=90)
    return root


def test_schedule_parsing_and_errors():
    stages = parse_schedule("1-2:24/3-:32")
    assert [size_for(stages, e) for e in (1, 2, 3, 40)] == [24, 24, 32, 32]
    for bad, text in [
        ("2-3:24/4-:32", "must start at epoch 1"),
        ("1-2:24/4-:32", "must start at epoch 3"),
        ("1-2:24", "last range must be open"),
        ("1-:24/2-:32", "after an open range"),
        ("1-2:x", "expected FIRST-LAST:SIZE"),
        ("1-:4", "at least 8 pixels"),
    ]:
        with pytest.raises(ValueError, match=text):
            parse_schedule(bad)


def test_switches_supported_and_refused():
    wl = get_workload("imagenet")
    sw = parse_switches(["bf16,channels_last", "progressive_resize"], wl.switches, "imagenet")
    assert (sw.precision, sw.channels_last, sw.progressive_resize) == ("bf16", True, "on")
    sw = parse_switches(["progressive_resize=1-3:128/4-:224"], wl.switches, "imagenet")
    assert sw.progressive_resize == "1-3:128/4-:224"
    with pytest.raises(ValueError, match="must start at epoch 4"):
        parse_switches(["progressive_resize=1-3:128/5-:224"], wl.switches, "imagenet")
    with pytest.raises(ValueError, match="does not support switch 'data'"):
        parse_switches(["data=device"], wl.switches, "imagenet")
    assert {"compile", "tf32", "fp16", "lr_rule", "label_smoothing", "tta"} <= wl.switches


def test_default_recipe_and_task():
    wl = get_workload("imagenet")
    r = wl.default_recipe("cuda")
    assert (wl.task, wl.metric, wl.default_threshold) == ("imagenet", "top5", 0.93)
    assert r.label_smoothing == 0.1 and r.extra["lr_schedule"] == "cosine"
    assert r.extra["image_size"] == 224 and r.extra["progressive_resize"] == "off"
    assert set(wl.presets()) == {"dawnbench", "cpu"}
    wl.configure(r)
    model = wl.build_model(r)
    gammas = [b.bn3.weight.detach() for b in model.modules() if hasattr(b, "bn3")]
    assert len(gammas) == 16 and all(float(g.abs().sum()) == 0.0 for g in gammas)
    assert float(model.bn1.weight.detach().sum()) == 64.0  # other batch norms keep scale 1
    r.extra["zero_init_residual"] = False
    assert all(
        float(b.bn3.weight.detach().sum()) > 0
        for b in wl.build_model(r).modules()
        if hasattr(b, "bn3")
    )


def test_lr_schedule_warmup_then_cosine_or_linear():
    total, warm = 100, 10
    assert lr_factor(0, total, warm, "cosine") == pytest.approx(0.1)
    assert lr_factor(9, total, warm, "cosine") == pytest.approx(1.0)
    assert lr_factor(10, total, warm, "cosine") == pytest.approx(1.0)
    assert lr_factor(55, total, warm, "cosine") == pytest.approx(0.5)  # half-way: cos(pi/2)
    assert lr_factor(32, total, warm, "cosine") == pytest.approx(
        0.5 * (1 + math.cos(math.pi * 22 / 90))
    )
    assert lr_factor(100, total, warm, "cosine") == pytest.approx(0.0, abs=1e-12)
    assert lr_factor(55, total, warm, "onecycle") == pytest.approx(0.5)
    assert lr_factor(28, total, warm, "onecycle") == pytest.approx(0.8)
    assert lr_factor(120, total, warm) == 0.0  # past the end: stays at 0
    recipe = preset("dawnbench")
    recipe.extra["lr_schedule"] = "step"
    with pytest.raises(ValueError, match="'lr_schedule': 'step' is not one of onecycle, cosine"):
        get_workload("imagenet").make_optimizer(resnet50(10), recipe, 4)


def test_no_weight_decay_on_batchnorm_and_bias():
    model = resnet50(10)
    recipe = preset("dawnbench")
    opt, sched = get_workload("imagenet").make_optimizer(model, recipe, steps_per_epoch=4)
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 5e-5 and no_decay["weight_decay"] == 0.0
    bn = [p for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d) for p in m.parameters()]
    ids = {id(p) for p in no_decay["params"]}
    assert {id(p) for p in bn} | {id(model.fc.bias)} == ids
    convs = [m.weight for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert {id(p) for p in decay["params"]} == {id(p) for p in convs} | {id(model.fc.weight)}
    assert opt.defaults["nesterov"] is True
    warm = int(recipe.warmup_fraction * recipe.epochs * 4)  # 20 of 128 steps
    assert sched.get_last_lr()[0] == pytest.approx(recipe.lr / warm)


class _Fixed(torch.nn.Module):
    """Returns the logits it was given per example index (the input holds the index)."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = logits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits[x[:, 0, 0, 0].long()]


class _Eval:
    num_eval = 3

    def __init__(self, target: list[int]) -> None:
        self.target = torch.tensor(target)

    def eval_batches(self, batch_size: int):
        from perfsuite.workloads.data import Batch

        idx = torch.arange(3, dtype=torch.float32).view(3, 1, 1, 1).expand(3, 3, 2, 2)
        for i in range(0, 3, batch_size):
            y = self.target[i : i + batch_size]
            yield Batch((idx[i : i + batch_size],), y, len(y))


def test_evaluate_top1_and_top5_by_hand():
    # 7 classes; the true class ranks 1st, 3rd and 6th in the three examples
    logits = torch.tensor(
        [
            [9.0, 8, 7, 6, 5, 4, 3],  # target 0: rank 1 (top-1 and top-5 hit)
            [9.0, 8, 7, 6, 5, 4, 3],  # target 2: rank 3 (top-5 hit only)
            [9.0, 8, 7, 6, 5, 4, 3],  # target 5: rank 6 (miss)
        ]
    )
    wl = get_workload("imagenet")
    wl.configure(preset("dawnbench"))
    got = wl.evaluate(_Fixed(logits), _Eval([0, 2, 5]), batch_size=2)
    assert got == {"top1": pytest.approx(1 / 3), "top5": pytest.approx(2 / 3)}


def test_loader_resizes_per_epoch_and_is_worker_independent(tree):
    train, evaluate = imagenet_transforms(32, 36, 0.25)
    a = ImageFolderSource(tree, train, evaluate, num_workers=0, eval_limit=3)
    b = ImageFolderSource(tree, train, evaluate, num_workers=2)
    try:
        assert a.classes == CLASSES and (a.num_train, a.num_eval) == (12, 3)
        assert "eval_limit 3, balanced" in a.description
        for src in (a, b):
            src.set_train_size(24)
        xa = [x.inputs[0] for x in a.train_batches(5, torch.Generator().manual_seed(3))]
        xb = [x.inputs[0] for x in b.train_batches(5, torch.Generator().manual_seed(3))]
        assert [x.shape for x in xa] == [(5, 3, 24, 24), (5, 3, 24, 24), (2, 3, 24, 24)]
        assert all(torch.equal(p, q) for p, q in zip(xa, xb, strict=True))
        b.set_train_size(None)
        assert next(iter(b.train_batches(4, torch.Generator()))).inputs[0].shape[-1] == 32
        ev = next(iter(b.eval_batches(6)))
        assert ev.inputs[0].shape == (6, 3, 32, 32) and ev.target.tolist() == list(range(6))
    finally:
        a.close()
        b.close()


def _opts(tmp_path: Path, **kw) -> RunOptions:
    base = dict(
        workload="imagenet",
        out=str(tmp_path / "runs"),
        progress=False,
        measure_peaks=False,
        inference_repeats=0,
        profile_steps=0,
        threads=1,
        batch_size=4,
    )
    base.update(kw)
    return RunOptions(**base)


SMALL = ["image_size=24", "eval_resize=28", "num_workers=2"]


@pytest.mark.slow
def test_run_on_image_folder_with_progressive_resizing(tree, tmp_path):
    opts = _opts(
        tmp_path,
        data_dir=str(tree),
        epochs=2,
        batch_size=6,
        all_epochs=True,
        capture=False,
        overrides=SMALL,
        switches=["progressive_resize=1-1:16/2-:24"],
    )
    rec = load_record(run_workload(opts))
    assert rec["status"] in ("reached", "not_reached")
    assert rec["task"]["metric"] == "top5" and rec["task"]["threshold"] == 0.93
    assert rec["model"] == "ResNet-50 v1.5, 6-class head"
    assert rec["task"]["name"] == "imagenet-6class"  # never on the 1000-class board
    assert len(rec["evaluations"]) == 2
    for ev in rec["evaluations"]:
        m = ev["metrics"]
        assert set(m) == {"top1", "top5"} and m["top1"] <= m["top5"]
        assert all(k / 6 == pytest.approx(v) for v in m.values() for k in [round(v * 6)])
    data = rec["data"]
    assert data["kind"] == "image-folder" and data["num_workers"] == 2
    assert "epochs 1-1: 16 px, 2-: 24 px" in data["description"]
    assert data["samples_delivered"] == 24  # 12 images x 2 epochs
    train_s = sum(rec["throughput"]["epoch_times_s"])
    assert data["delivered_rate"]["value"] == pytest.approx(24 / train_s)
    assert len(data["stall_per_epoch_s"]) == 2
    assert any("work.flops_per_step" in f and "counted on a 16 px step" in f for f in rec["flags"])


@pytest.mark.slow
def test_synthetic_steps_count_resnet50_flops(tmp_path):
    """FLOPs per step from the record = perfsuite's count of a ResNet-50 training step (same
    batch, image size, optimizer groups and loss; label smoothing off so the loss is the
    counter's plain cross-entropy)."""
    batch, size = 2, 24
    opts = _opts(
        tmp_path,
        synthetic=True,
        epochs=1,
        batch_size=batch,
        overrides=["image_size=24", "eval_resize=28", "train_limit=4", "eval_limit=2"],
        switches=["label_smoothing=0", "channels_last"],
    )
    rec = load_record(run_workload(opts))
    assert rec["data"]["kind"] == "synthetic" and "3x24x24" in rec["data"]["description"]
    assert rec["data"]["samples_delivered"] == 4
    assert rec["switches"]["effect"]["parameter_memory_format"] == "channels_last"
    assert rec["switches"]["effect"]["label_smoothing"] == 0.0
    assert any(f.startswith("evaluated on a subset: eval_limit=2") for f in rec["flags"])
    work = rec["work"]
    assert work["batch_size"] == batch and work["unknown_ops"] == []

    wl = get_workload("imagenet")
    recipe = preset("dawnbench")
    model = resnet50()
    opt, _ = wl.make_optimizer(model, recipe, steps_per_epoch=2)
    ref = count_model(model, (batch, 3, size, size), train=True, optimizer=opt)
    assert work["flops_per_step"]["value"] == ref.total_flops
    forward = sum(r["flops"] for r in work["per_op"] if r["phase"] == "forward")
    assert forward == ref.flops_of(phase="forward")
    assert wl.metric == rec["task"]["metric"]


def test_resnet50_forward_count_near_the_published_figure():
    """~4.1 GMAC = ~8.2 GFLOP per 224x224 image: conv + fc are 2 x 4,089,184,256 + 1000 bias
    adds (4.1 is that rounded); the whole forward adds batch norm, ReLU, residual adds and
    pooling, about 0.75% more."""
    res = count_model(resnet50(), (1, 3, 224, 224))
    macs = res.flops_of("convolution", "matmul")
    assert macs == 2 * 4_089_184_256 + 1000
    assert res.total_flops == pytest.approx(8.2e9, rel=0.01)
    assert 0.005 < res.total_flops / macs - 1 < 0.01


def test_label_smoothed_loss_has_no_uncounted_ops():
    """The recipe's loss (cross-entropy, label smoothing 0.1) masks ignored targets with
    bitwise_not: it has a formula (no op is left unknown), and on a bool mask it costs bytes,
    no FLOP (integer and bool work is no floating-point operation)."""
    from perfsuite.flops import OpCounter

    logits = torch.randn(4, 10, requires_grad=True)
    counter = OpCounter()
    with counter:
        wl = get_workload("imagenet")
        wl.loss(logits, torch.tensor([1, 2, 3, 4]), preset("dawnbench")).backward()
    res = counter.result()
    assert res.unknown_ops == []
    assert any(r.op == "aten::bitwise_not" and r.flops == 0 and r.bytes == 8 for r in res.per_op)
