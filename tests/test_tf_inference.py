"""TensorFlow runs keep their threshold model (.npz of named variables, checked on load) and
get the DAWNBench batch-1 inference figure, in the run and through `perfsuite infer`."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from perfsuite.record import RecordError
from perfsuite.runner.frameworks.tf_parts import TFRunParts, load_threshold_variables
from perfsuite.runner.measure import inference
from perfsuite.runner.record.checkpoint import _sha256
from perfsuite.workloads import get_workload

pytestmark = pytest.mark.usefixtures("tf")

WHERE = {"epoch": 3, "evaluation_index": 2, "metric": "top1", "value": 0.75}


def _model(seed: int):
    return get_workload("digits", "tensorflow").build_model(seed=seed)


@pytest.fixture
def saved(tmp_path):
    """A digits model with non-default batch-norm statistics, saved as a run would; returns
    (record view, the saved arrays)."""
    model = _model(seed=0)
    rng = np.random.default_rng(5)
    for bn in model.bns:  # running statistics are part of the model: they must round-trip
        bn["mean"].assign(rng.normal(size=bn["mean"].shape).astype("float32"))
        bn["var"].assign(rng.uniform(0.5, 2, size=bn["var"].shape).astype("float32"))
    section = TFRunParts().save_threshold_model(tmp_path, model, **WHERE)
    arrays = {k: v.numpy().copy() for k, v in model.named_variables().items()}
    record = {"checkpoint": section, "_dir": str(tmp_path), "_path": str(tmp_path / "run.json")}
    return record, arrays


def test_checkpoint_section_describes_the_npz(saved, tmp_path):
    record, arrays = saved
    ck = record["checkpoint"]
    path = tmp_path / "threshold_model.npz"
    assert ck["file"] == "threshold_model.npz" and ck["size_bytes"] == path.stat().st_size
    assert ck["sha256"] == _sha256(path) and "allow_pickle=False" in ck["format"]
    assert {k: ck[k] for k in WHERE} == WHERE
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write leaves no temporary file
    with np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(arrays)
        assert "bn0/mean" in npz.files and "bn2/var" in npz.files


def test_loading_restores_exactly_the_saved_variables(saved):
    record, arrays = saved
    other = _model(seed=1)
    before = {k: v.numpy().copy() for k, v in other.named_variables().items()}
    assert any(not np.array_equal(before[k], arrays[k]) for k in arrays)  # else no test
    load_threshold_variables(record, other)
    for k, v in other.named_variables().items():
        np.testing.assert_array_equal(v.numpy(), arrays[k], err_msg=k)


def test_cifar10_resnet9_round_trips_without_a_head_bias(tmp_path):
    from perfsuite.workloads.base import Recipe

    wl = get_workload("cifar10", "tensorflow")
    recipe = Recipe(epochs=1, batch_size=8, lr=0.1, extra={"width": 0.125})
    saved_model = wl.build_model(recipe, seed=0)
    names = list(saved_model.named_variables())
    assert len(names) == 8 * 5 + 1 and "dense/bias" not in names  # 8 conv-BN blocks, head
    section = TFRunParts().save_threshold_model(tmp_path, saved_model, **WHERE)
    record = {"checkpoint": section, "_dir": str(tmp_path), "_path": "run.json"}
    other = wl.build_model(recipe, seed=1)
    load_threshold_variables(record, other)
    for k, v in other.named_variables().items():
        np.testing.assert_array_equal(v.numpy(), saved_model.named_variables()[k].numpy())


def _one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg
    return msg


def test_truncated_npz_is_refused_naming_file_and_field(saved, tmp_path):
    record, _ = saved
    path = tmp_path / "threshold_model.npz"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(RecordError) as exc:
        load_threshold_variables(record, _model(seed=1))
    msg = _one_line(exc)
    assert "threshold_model.npz: field checkpoint.size_bytes: " in msg and "1000 bytes" in msg


def test_tampered_npz_is_refused_by_its_sha256(saved, tmp_path):
    record, _ = saved
    path = tmp_path / "threshold_model.npz"
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # same size, one byte changed
    path.write_bytes(bytes(raw))
    with pytest.raises(RecordError) as exc:
        load_threshold_variables(record, _model(seed=1))
    assert "threshold_model.npz: field checkpoint.sha256: " in _one_line(exc)


def _rewrite(record, path, arrays) -> None:
    """Replace the file and make the record agree with it (size, hash): only the content
    checks are left to refuse it."""
    np.savez(path, **arrays)
    record["checkpoint"]["size_bytes"] = path.stat().st_size
    record["checkpoint"]["sha256"] = _sha256(path)


def test_names_shapes_and_dtypes_must_match_the_rebuilt_model(saved, tmp_path):
    record, arrays = saved
    path = tmp_path / "threshold_model.npz"
    _rewrite(record, path, {k: v for k, v in arrays.items() if k != "bn1/var"})
    with pytest.raises(RecordError) as exc:
        load_threshold_variables(record, _model(seed=1))
    msg = _one_line(exc)
    assert "field checkpoint.file: " in msg and "rebuilt model" in msg
    assert "bn1/var" in msg

    _rewrite(record, path, {**arrays, "conv0/kernel": np.zeros((3, 3, 1, 7), "float32")})
    with pytest.raises(RecordError, match=r"variable conv0/kernel has shape \(3, 3, 1, 7\), "):
        load_threshold_variables(record, _model(seed=1))

    _rewrite(record, path, {**arrays, "dense/bias": arrays["dense/bias"].astype("float64")})
    with pytest.raises(RecordError, match="variable dense/bias is float64"):
        load_threshold_variables(record, _model(seed=1))


def test_pickled_arrays_are_never_unpickled(saved, tmp_path):
    record, arrays = saved
    path = tmp_path / "threshold_model.npz"
    _rewrite(record, path, {**arrays, "conv0/kernel": np.array([{"a": 1}], dtype=object)})
    with pytest.raises(RecordError) as exc:
        load_threshold_variables(record, _model(seed=1))
    assert "threshold_model.npz: field checkpoint.file: " in _one_line(exc)
    path.write_bytes(b"not a zip file at all")
    record["checkpoint"].update(size_bytes=path.stat().st_size, sha256=_sha256(path))
    with pytest.raises(RecordError, match=r"field checkpoint\.file: cannot load"):
        load_threshold_variables(record, _model(seed=1))
    assert zipfile.is_zipfile(path) is False


def test_tensorflow_inference_is_eager_or_a_graph():
    from perfsuite.backends import parse_device

    cpu, gpu = parse_device("cpu"), parse_device("cuda")
    inference.check_mode("eager", "bf16", cpu, "tensorflow")  # allowed
    inference.check_mode("compile", "fp32", cpu, "tensorflow")  # a tf.function graph
    with pytest.raises(inference.InferenceError, match="--mode cudagraphs: TensorFlow runs are"):
        inference.check_mode("cudagraphs", "fp32", gpu, "tensorflow")


def test_graph_model_computes_what_the_eager_model_does(tf):
    from perfsuite.backends.tensorflow import GraphModel

    model = _model(seed=0)
    graph = GraphModel(model, tf)
    x = tf.random.stateless_normal((1, 8, 8, 1), seed=(1, 2))
    np.testing.assert_allclose(
        graph(x).numpy(), model(x, training=False).numpy(), rtol=1e-5, atol=1e-6
    )
    assert graph.layout == model.layout  # other attributes are the eager model's
    assert graph.eager_model is model
    with pytest.raises(ValueError, match="training=True is not traced"):
        graph(x, training=True)


# -- a real TensorFlow digits run (a few seconds) ------------------------------------------


@pytest.fixture(scope="module")
def tf_run(tmp_path_factory):
    """One TF digits run that meets a low threshold early and keeps going, so the threshold
    model and the last epoch's model differ."""
    from tests.test_inference_run import _run  # the PyTorch runner test's tiny digits run

    root = tmp_path_factory.mktemp("tfrun")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PERFSUITE_CACHE_DIR", str(root / "cache"))
        return _run(root, framework="tensorflow", threshold=0.6, epochs=4, all_epochs=True)


@pytest.mark.slow
def test_tf_run_keeps_the_threshold_model_and_measures_it(tf_run):
    rec = tf_run
    ck, inf = rec["checkpoint"], rec["inference"]
    assert rec["status"] == "reached" and ck["file"] == "threshold_model.npz"
    assert rec["sidecars"]["checkpoint"] == "threshold_model.npz"
    threshold_eval = rec["evaluations"][ck["evaluation_index"]]
    assert threshold_eval["epoch"] == ck["epoch"] < 4
    assert rec["evaluations"][-1]["metrics"]["top1"] != ck["value"]  # two different models
    assert "not_measured" not in inf and inf["rule"] == "dawnbench"
    assert inf["examples"] == inf["eval_size"] == 359 and inf["partial"] is False
    # no TTA on digits: batch-1 predictions score exactly what the threshold evaluation did
    assert inf["metrics"]["top1"] == threshold_eval["metrics"]["top1"] == ck["value"]
    assert inf["model"]["sha256"] == ck["sha256"] and inf["mode"] == "eager"
    assert inf["precision"] == "fp32" and inf["latency"]["value"] > 0
    assert inf["latency_p50_s"] <= inf["latency_p99_s"]
    assert rec["inference_measurements"] == [inf]
    assert not [f for f in rec["flags"] if "threshold" in f and "not" in f]


@pytest.mark.slow
def test_rebuild_loads_the_tf_threshold_model(tf_run):
    from perfsuite.generalization.threshold_model import rebuild

    tm = rebuild(tf_run)
    assert tm.framework == "tensorflow" and tm.switches is not None
    path = f"{tf_run['_dir']}/threshold_model.npz"
    with np.load(path, allow_pickle=False) as npz:
        for k, v in tm.model.named_variables().items():
            np.testing.assert_array_equal(v.numpy(), npz[k], err_msg=k)


@pytest.mark.slow
def test_infer_remeasures_a_tf_run_and_eval_refuses_it(tf_run, capsys):
    from perfsuite.cli import main
    from perfsuite.record import load_record

    run_dir = tf_run["_dir"]
    capsys.readouterr()
    assert main(["infer", run_dir, "--threads", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["inference"]
    assert out["by"] == "perfsuite infer" and out["examples"] == 359
    assert out["metrics"] == tf_run["inference"]["metrics"]
    rec = load_record(run_dir)
    assert len(rec["inference_measurements"]) == 2
    assert rec["inference"]["measured_at"] == out["measured_at"]
    assert rec["inference"]["by"] == "perfsuite infer"

    # the same model as one tf.function graph: the same predictions, its own mode
    assert main(["infer", run_dir, "--threads", "1", "--mode", "compile", "--json"]) == 0
    graph = json.loads(capsys.readouterr().out)["inference"]
    assert graph["mode"] == "compile" and graph["examples"] == 359
    assert graph["metrics"] == tf_run["inference"]["metrics"]
    assert len(load_record(run_dir)["inference_measurements"]) == 3

    assert main(["eval", "shift", run_dir, "--corruptions"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "this is a tensorflow run" in err


@pytest.mark.slow
def test_infer_measures_a_tf_run_at_its_own_precision(tf_run, tmp_path, capsys):
    """A bf16 TensorFlow run is re-measured with a bfloat16 compute dtype by default (it was
    fp32 whatever the run used), and the entry notes no precision difference."""
    import shutil

    from perfsuite.cli import main
    from perfsuite.generalization.threshold_model import rebuild
    from perfsuite.record import load_record

    run_dir = shutil.copytree(tf_run["_dir"], tmp_path / "run")
    rec = json.loads((run_dir / "run.json").read_text())
    rec["config"]["switches"] = ["bf16"]  # as `run --switch bf16` records it
    (run_dir / "run.json").write_text(json.dumps(rec))
    assert rebuild(load_record(run_dir)).model.compute_dtype == "bfloat16"
    capsys.readouterr()
    argv = ["infer", str(run_dir), "--threads", "1", "--limit", "20", "--no-store", "--json"]
    assert main(argv) == 0
    entry = json.loads(capsys.readouterr().out)["inference"]
    assert entry["precision"] == "bf16" and "precision bf16" in entry["latency"]["source"]
    # no precision note (a threads note may be there: TensorFlow's pools cannot be resized
    # once an earlier test in this process started its runtime)
    assert not [n for n in entry["notes"] if n.startswith("precision")]


@pytest.mark.slow
def test_tf_cifar10_inference_includes_its_flip_tta(tmp_path):
    """cifar10's predict adds the flipped image's logits: the batch-1 figure is measured
    through it, and scores what the run's own (batched, TTA) evaluation scored."""
    from perfsuite.cli import main
    from perfsuite.record import load_record
    from tests.test_tf_cifar10 import _pickle_layout

    data = tmp_path / "cifar-10-batches-py"
    _pickle_layout(data)
    out = tmp_path / "runs"
    code = main(["run", "cifar10", "--framework", "tensorflow", "--data-dir", str(data),
                 "--recipe", "cpu", "--set", "width=0.125", "--set", "train_limit=100",
                 "--batch-size", "32", "--epochs", "1", "--threshold", "0", "--out", str(out),
                 "--profile-steps", "0", "--quiet", "--no-peaks", "--threads", "1"])  # fmt: skip
    assert code == 0
    rec = load_record(next(out.iterdir()))
    ck, inf = rec["checkpoint"], rec["inference"]
    assert rec["switches"]["effect"]["tta"] is True and ck["file"] == "threshold_model.npz"
    assert inf["examples"] == inf["eval_size"] == 20  # _pickle_layout: 2 test images a class
    assert inf["metrics"]["top1"] == rec["evaluations"][0]["metrics"]["top1"]
    assert "test-time augmentation included" in inf["latency"]["source"]


def test_inference_precision_is_the_models_compute_dtype(tf):
    """--precision bf16 on a TensorFlow model: its convolutions compute in bfloat16 (logits
    move by rounding), fp32 restores float32 exactly."""
    from perfsuite.backends import parse_device
    from perfsuite.backends.tensorflow import TFBackend

    backend = TFBackend(parse_device("cpu"))
    model = _model(seed=0)
    x = tf.constant(np.random.default_rng(0).normal(size=(4, 8, 8, 1)).astype("float32"))
    fp32 = model(x, training=False).numpy()
    assert backend.inference_model(model, "eager", "bf16") is model
    assert model.compute_dtype == "bfloat16"
    bf16 = model(x, training=False).numpy()
    assert bf16.dtype == np.float32 and not np.array_equal(bf16, fp32)
    np.testing.assert_allclose(bf16, fp32, atol=0.1)
    backend.inference_model(model, "eager", "fp32")
    np.testing.assert_array_equal(model(x, training=False).numpy(), fp32)
