"""cifar10 --framework tensorflow: FLOPs against the PyTorch count, data, switches, end to end."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from perfsuite.workloads.switches import Switches

WIDTH, BATCH = 0.125, 8


def _tf():
    return pytest.importorskip("tensorflow")


def _recipe(wl):
    r = copy.deepcopy(wl.presets()["cpu"])
    r.extra["width"], r.batch_size = WIDTH, BATCH
    return r


def _batch():
    """One fixed NHWC batch (normalized-looking values) and labels."""
    rng = np.random.default_rng(1)
    return rng.standard_normal((BATCH, 32, 32, 3), dtype="float32"), rng.integers(0, 10, BATCH)


@pytest.fixture(scope="module")
def works() -> tuple[dict, dict]:
    """The `work` sections of one training step of each framework, same network and batch."""
    _tf()
    import tensorflow as tf
    import torch

    from perfsuite.backends import parse_device, torch_backend
    from perfsuite.backends.tensorflow import TFBackend
    from perfsuite.flops.tf_graph import count_step
    from perfsuite.runner.engine import capture
    from perfsuite.runner.frameworks import assemble
    from perfsuite.runner.frameworks.tf_parts import TFRunParts
    from perfsuite.workloads import get_workload
    from perfsuite.workloads.data import Batch

    x, y = _batch()
    wl = get_workload("cifar10", "tensorflow")
    recipe = _recipe(wl)
    wl.configure(recipe)
    backend, parts = TFBackend(parse_device("cpu")), TFRunParts()
    model = parts.build_model(wl, recipe, backend, Switches(), seed=0)
    state = parts.build_state(wl, recipe, model, 10, backend, Switches())
    batch = Batch((tf.constant(x),), tf.constant(y), BATCH)
    wl.train_step(state, batch)
    tfw = count_step(state, batch)

    pw = get_workload("cifar10")
    pw.configure(recipe)
    torch.manual_seed(0)
    st = assemble.build_state(pw, recipe, pw.build_model(recipe), 10, torch_backend("cpu"),
                              Switches())  # fmt: skip
    pbatch = Batch((torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(),),
                   torch.from_numpy(y), BATCH)  # fmt: skip
    return tfw, capture.count_step_work(pw, st, pbatch)


def _by_family(work: dict, phases=("forward", "backward")) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in work["per_op"]:
        if r["phase"] in phases:
            out[r["family"]] = out.get(r["family"], 0.0) + r["flops"]
    return out


def test_flops_agree_with_the_pytorch_count_of_the_same_network(works):
    tfw, ptw = works
    assert tfw["unknown_ops"] == [] and tfw["batch_size"] == ptw["batch_size"] == BATCH
    tf_f, pt_f = _by_family(tfw), _by_family(ptw)
    # Convolutions (8 fwd; bwd 7 input + 8 weight gradients), batch norm, pooling (three 2x2
    # max-pools and the global max-pool) and the linear head: op for op the same arithmetic.
    for phase in ("forward", "backward"):
        tf_p, pt_p = _by_family(tfw, (phase,)), _by_family(ptw, (phase,))
        for family in ("convolution", "normalization", "pooling", "matmul"):
            assert tf_p[family] == pt_p[family], (phase, family)
        # element-wise ops differ only by the loss's small ops (batch x classes scale)
        assert abs(tf_p["elementwise"] - pt_p["elementwise"]) < 2 * BATCH * 10, phase
    assert tf_f["convolution"] == 290_193_408
    # The optimizer (PyTorch's SGD arithmetic spelled out) matches exactly.
    assert sum(_by_family(tfw, ("optimizer",)).values()) == sum(
        _by_family(ptw, ("optimizer",)).values()
    )
    # Forward + backward differ only by the loss (fused softmax cross-entropy on smoothed
    # one-hot targets vs PyTorch's log_softmax/nll_loss/smoothing ops): -47 FLOP here, far
    # below one op of the network (the smallest, the head's scale, is 80). Integer work counts
    # no FLOP on either side (it was -76 when TF's 3 int32 shape Subs and PyTorch's 32 of
    # BatchNorm step counters and the ignore-index mask were counted).
    diff = sum(tf_f.values()) - sum(pt_f.values())
    assert diff == -47
    assert tfw["flops_per_step"]["value"] == pytest.approx(ptw["flops_per_step"]["value"], 1e-6)


def test_residual_gradient_sum_is_counted_as_addn(works):
    tfw, _ = works
    rows = [r for r in tfw["per_op"] if r["op"] == "AddN"]
    # two residual blocks: the gradient reaching x is the sum of the branch's and the skip's
    c1, c3 = 16, 64  # width 0.125: 128/8 and 512/8 channels, on 16x16 and 4x4 maps
    assert sum(r["calls"] for r in rows) == 2 and {r["phase"] for r in rows} == {"backward"}
    assert sum(r["flops"] for r in rows) == BATCH * (c1 * 16 * 16 + c3 * 4 * 4)


def test_crop_flip_reads_the_reflect_padded_image():
    _tf()
    from perfsuite.workloads.cifar10.tensorflow import CifarArraySource

    x = np.arange(2 * 32 * 32 * 3, dtype="float32").reshape(2, 32, 32, 3)
    src = CifarArraySource(x, np.array([0, 1]), x, np.array([0, 1]), layout="nhwc",
                           description="t")  # fmt: skip
    assert src.train_x.shape == (2, 40, 40, 3)
    np.testing.assert_array_equal(src.train_x[:, 4:36, 4:36], x)
    np.testing.assert_array_equal(src.train_x[:, 3, 4:36], x[:, 1])  # reflect, not zeros
    out = src._crop_flip(src.train_x, np.random.default_rng(0))
    assert out.shape == (2, 32, 32, 3)
    for i in range(2):  # each crop is a window of the padded image, flipped or not
        hits = [
            (dy, dx, f)
            for dy in range(9)
            for dx in range(9)
            for f in (False, True)
            if np.array_equal(
                out[i], src.train_x[i, dy : dy + 32, dx : dx + 32][:, :: -1 if f else 1]
            )
        ]
        assert hits


def test_presets_switches_and_tta():
    _tf()
    import tensorflow as tf

    from perfsuite.workloads import get_workload
    from perfsuite.workloads.switches import parse_switches

    wl = get_workload("cifar10", "tensorflow")
    assert set(wl.presets()) == {"cpu", "dawnbench"}
    assert wl.default_recipe("cpu").extra["width"] == 0.25
    with pytest.raises(ValueError, match="compile"):
        parse_switches(["compile"], wl.switches, "cifar10")
    assert parse_switches(["tta=off"], wl.switches, "cifar10").tta is False
    recipe = _recipe(wl)
    wl.configure(recipe)
    model = wl.build_model(recipe, seed=0)
    x = tf.constant(_batch()[0])
    plain = model(x, training=False).numpy()
    both = wl.predict(model, x).numpy()
    flipped = model(tf.reverse(x, [2]), training=False).numpy()
    np.testing.assert_allclose(both, plain + flipped, rtol=1e-5, atol=1e-5)
    recipe.extra["tta_flip"] = False
    np.testing.assert_allclose(wl.predict(model, x).numpy(), plain, rtol=1e-6)
    fast = copy.deepcopy(recipe)
    fast.extra["family"] = "fast"
    with pytest.raises(ValueError, match="only the ResNet-9 recipes"):
        wl.configure(fast)


def _pickle_layout(root, per_class_train: int = 4, per_class_test: int = 2) -> None:
    """A tiny CIFAR-10 in the python-pickle layout (class-coloured noise, learnable)."""
    import pickle

    rng = np.random.default_rng(0)

    def split(per_class: int) -> dict:
        labels = np.repeat(np.arange(10), per_class)
        base = (labels[:, None] * 25).astype("int64")
        data = np.clip(base + rng.integers(0, 20, (len(labels), 3072)), 0, 255).astype("uint8")
        return {b"data": data, b"labels": labels.tolist()}

    root.mkdir()
    for i in range(1, 6):
        (root / f"data_batch_{i}").write_bytes(pickle.dumps(split(per_class_train)))
    (root / "test_batch").write_bytes(pickle.dumps(split(per_class_test)))


@pytest.mark.slow
def test_tensorflow_cifar10_end_to_end_on_a_tiny_pickle_layout(tmp_path, capsys):
    _tf()
    from perfsuite.cli import main
    from perfsuite.record import load_record

    data = tmp_path / "cifar-10-batches-py"
    _pickle_layout(data)
    out = tmp_path / "runs"
    code = main(["run", "cifar10", "--framework", "tensorflow", "--data-dir", str(data),
                 "--recipe", "cpu", "--set", "width=0.125", "--set", "train_limit=100",
                 "--batch-size", "32", "--epochs", "2", "--out", str(out), "--profile-steps",
                 "2", "--profile-seconds", "0", "--quiet", "--no-peaks"])  # fmt: skip
    assert code == 0
    rec = load_record(next(out.iterdir()))
    assert rec["framework"].startswith("tensorflow 2.")
    assert "(training subset: 100 images)" in rec["task"]["dataset"]
    assert [e["epoch"] for e in rec["evaluations"]] == [1, 2]
    assert rec["model"] == "ResNet-9 style, width x0.125 (TensorFlow)"
    assert len(rec["throughput"]["epoch_times_s"]) == 2
    assert rec["work"]["flops_per_step"]["provenance"] == "counted"
    assert rec["work"]["batch_size"] == 32 and rec["work"]["unknown_ops"] == []
    assert rec["switches"]["effect"]["tta"] is True
    assert rec["timeline"]["steps"] == 2
    assert {o["op"] for o in rec["timeline"]["ops"]} >= {"Conv2D", "Conv2DBackpropFilter"}
    assert rec["math"]["provenance"] == "measured" and rec["math"]["param_dtype"] == "float32"


@pytest.mark.slow
def test_tensorflow_cifar10_synthetic(tmp_path):
    _tf()
    from perfsuite.cli import main
    from perfsuite.record import load_record

    code = main(["run", "cifar10", "--framework", "tensorflow", "--synthetic", "--set",
                 "width=0.125", "--set", "train_limit=64", "--batch-size", "32", "--epochs",
                 "1", "--out", str(tmp_path), "--profile-steps", "0", "--quiet",
                 "--no-peaks"])  # fmt: skip
    assert code == 0
    rec = load_record(next(tmp_path.iterdir()))
    assert rec["task"]["dataset"].startswith("synthetic: random 32x32x3 inputs")
    assert any("synthetic" in f for f in rec["flags"])
    assert len(rec["throughput"]["epoch_times_s"]) == 1


def test_synthetic_source_takes_the_layout_of_the_model():
    _tf()
    from perfsuite.workloads import get_workload

    wl = get_workload("cifar10", "tensorflow")
    recipe = _recipe(wl)
    recipe.extra["train_limit"] = 100
    wl.configure(recipe)
    data = wl.synthetic_data(None, 0)
    assert (data.num_train, data.num_eval, len(data.train_y)) == (100, 100, 100)
    assert data.train_x.shape == (100, 40, 40, 3)  # reflect-padded for the crop
    wl.build_model(recipe, seed=0, layout="nchw")
    assert data.sample(4).inputs[0].shape == (4, 3, 32, 32)


def test_bf16_policy_runs_the_step_in_bfloat16_with_the_same_conv_flops(works):
    _tf()
    import tensorflow as tf

    from perfsuite.backends import parse_device
    from perfsuite.backends.tensorflow import TFBackend
    from perfsuite.flops.tf_graph import count_step
    from perfsuite.runner.frameworks.tf_parts import TFRunParts
    from perfsuite.workloads import get_workload
    from perfsuite.workloads.data import Batch

    wl = get_workload("cifar10", "tensorflow")
    recipe = _recipe(wl)
    wl.configure(recipe)
    backend, parts, sw = TFBackend(parse_device("cpu")), TFRunParts(), Switches(precision="bf16")
    model = parts.build_model(wl, recipe, backend, sw, seed=0)
    state = parts.build_state(wl, recipe, model, 10, backend, sw)
    x, y = _batch()
    batch = Batch((tf.constant(x),), tf.constant(y), BATCH)
    loss = wl.train_step(state, batch)
    assert np.isfinite(loss.numpy()) and model.trainable[0].dtype == tf.float32
    assert parts._first_conv(state)["output_dtype"] == "bfloat16"
    bf = count_step(state, batch)
    assert _by_family(bf)["convolution"] == _by_family(works[0])["convolution"]
    assert bf["bytes_per_step"]["value"] < works[0]["bytes_per_step"]["value"]
