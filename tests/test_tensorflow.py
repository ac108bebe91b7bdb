"""TensorFlow as a second framework: digits end to end, FLOPs of its traced graph against the
PyTorch count of the same network, the XSpace -> Chrome-trace conversion, the switches and the
one-line errors (docs/tensorflow.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfsuite.workloads.switches import Switches, parse_switches


def _tf():
    return pytest.importorskip("tensorflow", reason="tensorflow-cpu not installed")


def test_importing_perfsuite_does_not_import_tensorflow():
    code = (
        "import sys, perfsuite, perfsuite.cli, perfsuite.runner, perfsuite.flops, "
        "perfsuite.workloads, perfsuite.runner.frameworks.parts, perfsuite.backends\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "from perfsuite.workloads import get_workload\n"
        "get_workload('digits', 'tensorflow')\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_tensorflow_is_one_line_naming_the_extra(monkeypatch, tmp_path):
    from perfsuite.backends.tensorflow import require_tensorflow
    from perfsuite.runner import RunOptions, run_workload

    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` now fails
    with pytest.raises(ValueError, match=r"pip install perfsuite\[tensorflow\]") as info:
        require_tensorflow()
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"perfsuite\[tensorflow\]"):
        run_workload(RunOptions("digits", framework="tensorflow", out=str(tmp_path)))
    assert not list(tmp_path.iterdir())  # no run folder for a configuration error


def test_unknown_framework_and_workload_are_one_line():
    from perfsuite.workloads import get_workload

    with pytest.raises(ValueError, match="no TensorFlow version; known: cifar10, digits"):
        get_workload("squad", "tensorflow")
    with pytest.raises(ValueError, match="unknown framework 'jax'"):
        get_workload("digits", "jax")


def test_layout_switch_parses_and_excludes_channels_last_nchw():
    from perfsuite.workloads.digits.tensorflow import TFDigitsWorkload

    wl = TFDigitsWorkload()
    assert parse_switches(["layout=nchw"], wl.switches, "digits").layout == "nchw"
    with pytest.raises(ValueError, match="exclude each other"):
        parse_switches(["channels_last,layout=nchw"], wl.switches, "digits")
    with pytest.raises(ValueError, match="does not support switch 'compile'"):
        parse_switches(["compile"], wl.switches, "digits")


def test_nchw_on_cpu_is_a_one_line_error_before_any_run_folder(tmp_path):
    _tf()
    from perfsuite.runner import RunOptions, run_workload

    opts = RunOptions("digits", framework="tensorflow", out=str(tmp_path), switches=["layout=nchw"])
    with pytest.raises(ValueError, match="NCHW convolutions only on GPUs") as info:
        run_workload(opts)
    assert "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())


def _tf_state(precision: str | None = None, batch_size: int = 64):
    """A TensorFlow digits train state and one real training batch."""
    from perfsuite.backends import parse_device
    from perfsuite.backends.tensorflow import TFBackend
    from perfsuite.runner.frameworks.tf_parts import TFRunParts

    _tf()
    from perfsuite.workloads.digits.tensorflow import TFDigitsWorkload

    wl = TFDigitsWorkload()
    recipe = wl.default_recipe()
    wl.configure(recipe)
    backend, parts = TFBackend(parse_device("cpu")), TFRunParts()
    switches = Switches(precision=precision)
    data = parts.load_data(wl, None, backend, switches)
    model = parts.build_model(wl, recipe, backend, switches, seed=0)
    state = parts.build_state(wl, recipe, model, 23, backend, switches)
    batch = next(iter(data.train_batches(batch_size, backend.generator(0))))
    return wl, state, batch, data


def _torch_work(batch_size: int = 64) -> dict:
    import torch

    from perfsuite.backends import torch_backend
    from perfsuite.runner.engine import capture
    from perfsuite.runner.frameworks import assemble
    from perfsuite.workloads import get_workload

    wl = get_workload("digits")
    recipe = wl.default_recipe()
    wl.configure(recipe)
    backend = torch_backend("cpu")
    data = wl.load_data(None, backend.torch_device)
    torch.manual_seed(0)
    state = assemble.build_state(wl, recipe, wl.build_model(recipe), 23, backend, Switches())
    batch = next(iter(data.train_batches(batch_size, backend.generator(0))))
    return capture.count_step_work(wl, state, batch)


def _sum(work: dict, *, families=(), ops=(), phases=("forward", "backward")) -> float:
    return sum(
        r["flops"]
        for r in work["per_op"]
        if r["phase"] in phases
        and (not families or r["family"] in families)
        and (not ops or r["op"] in ops)
    )


@pytest.fixture(scope="module")
def tf_work() -> dict:
    """The `work` section of the TensorFlow digits step (fp32, batch 64), counted once."""
    from perfsuite.flops.tf_graph import count_step

    wl, state, batch, _ = _tf_state()
    wl.train_step(state, batch)  # traces the step for this batch shape
    return count_step(state, batch)


def test_tf_graph_flops_agree_with_the_pytorch_count_of_the_same_network(tf_work):
    tfw, ptw = tf_work, _torch_work()
    assert tfw["batch_size"] == ptw["batch_size"] == 64
    assert not tfw["unknown_ops"]
    # The heavy ops map one to one and use the same formulas: exact agreement.
    for fam in ("convolution", "normalization", "pooling"):
        assert _sum(tfw, families=(fam,)) == _sum(ptw, families=(fam,)) > 0, fam
    # Linear layer: addmm (+ two mm backward) == MatMul + BiasAdd (+ two MatMul backward).
    assert _sum(tfw, ops=("MatMul", "BiasAdd")) == _sum(ptw, ops=("aten::addmm", "aten::mm"))
    # Conv forward: 3 layers; backward: TF prunes the first layer's input gradient, as
    # PyTorch never computes it (input without grad): 2 BackpropInput + 3 BackpropFilter.
    calls = {(r["op"], r["phase"]): r["calls"] for r in tfw["per_op"]}
    assert calls[("Conv2DBackpropInput", "backward")] == 2
    assert calls[("Conv2DBackpropFilter", "backward")] == 3
    # Forward + backward in total: only the loss's small element-wise ops differ (fused
    # softmax cross-entropy on smoothed one-hot labels vs log_softmax + nll + smoothing).
    tf_fb, pt_fb = _sum(tfw), _sum(ptw)
    assert abs(tf_fb - pt_fb) / pt_fb < 1e-5
    assert abs(tf_fb - pt_fb) < 2_000
    # The SGD update spelled out with PyTorch's arithmetic costs the same.
    opt = ("optimizer",)
    assert _sum(tfw, phases=opt) == _sum(ptw, phases=opt) > 0


def test_tensorflow_profiler_cross_check_counts_dead_ops(tf_work):
    check = {r["op"]: r for r in tf_work["cross_check"]["per_op_type"]}
    assert check["Conv2D"]["tensorflow"] == check["Conv2D"]["perfsuite"]
    assert check["Conv2DBackpropFilter"]["tensorflow"] == check["Conv2DBackpropFilter"]["perfsuite"]
    # TensorFlow also counts the first convolution's (dead) input gradient: 64*8*8*32*9*2.
    first = 2 * 64 * 8 * 8 * 32 * 1 * 9
    got = check["Conv2DBackpropInput"]
    assert got["tensorflow"] - got["perfsuite"] == first


def test_bf16_policy_computes_convolutions_in_bfloat16_with_same_flops():
    from perfsuite.flops.tf_graph import count_step
    from perfsuite.runner.frameworks.tf_parts import TFRunParts

    wl, state, batch, _ = _tf_state("bf16")
    loss = wl.train_step(state, batch)
    assert loss.dtype.name == "float32" and float(loss) > 0
    seen: dict = {}
    effect = TFRunParts().switch_effects(state, parse_switches(["bf16"], wl.switches, "d"), seen)
    assert effect["first_layer"]["output_dtype"] == "bfloat16"
    assert effect["mixed_precision_policy"] == "mixed_bfloat16"
    assert state.model.trainable[0].dtype.name == "float32"  # variables stay float32
    work = count_step(state, batch)
    assert work["autocast"] == "bfloat16"
    conv = next(r for r in work["per_op"] if r["op"] == "Conv2D")
    assert conv["flops"] == 304_349_184  # same arithmetic, fewer bytes
    assert conv["bytes"] < 3_269_760


def test_detour_restores_variables_step_and_loss_scale():
    from perfsuite.workloads.state import detour

    wl, state, batch, _ = _tf_state("fp16")
    before = [v.numpy().copy() for v in state.model.variables]
    with detour(state):
        for _ in range(2):
            wl.train_step(state, batch)
        assert state.step == 2
        pairs = zip(state.model.variables, before, strict=True)
        assert any((v.numpy() != b).any() for v, b in pairs)
    assert state.step == 0
    for v, b in zip(state.model.variables, before, strict=True):
        assert (v.numpy() == b).all()
    assert float(state.loss_scale.scale.numpy()) == 2.0**16


def _space():
    """A tiny hand-made XSpace: one host plane, a python line with two step markers, a
    compute line with two ops and one executor event."""
    _tf()
    from perfsuite.runner.frameworks.xplane import xplane_pb2

    pb = xplane_pb2()
    space = pb.XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    for mid, name in ((1, "train"), (2, "forward/Conv2D:Conv2D"), (3, "ExecutorState::Process"),
                      (4, "gradient_tape/Conv2DBackpropFilter:Conv2DBackpropFilter")):  # fmt: skip
        plane.event_metadata[mid].id = mid
        plane.event_metadata[mid].name = name
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = "step_num"
    py = plane.lines.add(id=7, name="python", timestamp_ns=1_000_000)
    for step, (off, dur) in enumerate(((0, 10_000_000), (10_000_000, 12_000_000))):  # ps
        ev = py.events.add(metadata_id=1, offset_ps=off, duration_ps=dur)
        ev.stats.add(metadata_id=1, int64_value=step)
    comp = plane.lines.add(id=9, name="tf_Compute/9", timestamp_ns=1_000_000)
    comp.events.add(metadata_id=2, offset_ps=1_000_000, duration_ps=3_000_000)
    comp.events.add(metadata_id=3, offset_ps=500_000, duration_ps=9_000_000)
    comp.events.add(metadata_id=4, offset_ps=11_000_000, duration_ps=5_000_000)
    comp.events.add(metadata_id=2, offset_ps=17_000_000, duration_ps=2_000_000)
    space.planes.add(id=2, name="/device:GPU:0")
    return space


def test_xspace_conversion_of_a_hand_made_message(tmp_path):
    from perfsuite.analyzers.timeline import analyze_file
    from perfsuite.runner.frameworks.tf_profile import write_trace
    from perfsuite.runner.frameworks.xplane import op_rows, read_xspace, to_chrome_trace

    path = tmp_path / "host.xplane.pb"
    path.write_bytes(_space().SerializeToString())
    trace = to_chrome_trace(read_xspace(path))
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in xs] == [
        "ProfilerStep#0", "Conv2D", "ProfilerStep#1", "Conv2DBackpropFilter", "Conv2D",
    ]  # fmt: skip
    conv = xs[1]
    assert conv["cat"] == "cpu_op" and conv["args"]["tf_op"] == "forward/Conv2D"
    assert conv["ts"] == pytest.approx(1000.0 + 1.0) and conv["dur"] == pytest.approx(3.0)
    (note,) = trace["notes"]
    assert note.startswith("/device:GPU:0: device plane not converted")
    rows = {r["op"]: r for r in op_rows(trace)}
    assert rows["Conv2D"]["calls"] == 2
    assert rows["Conv2D"]["self_time_s"] == pytest.approx(5e-6)
    # 3 us in step 0, 2 us in step 1: sample stdev 0.5**0.5 over mean 2.5
    assert rows["Conv2D"]["step_cv"] == pytest.approx(0.5**0.5 / 2.5)
    write_trace(trace, tmp_path / "trace.json.gz")
    analysis = analyze_file(tmp_path / "trace.json.gz")
    ops = {o.name: o for o in analysis.ops}
    assert ops["Conv2D"].calls == 2


def test_onednn_and_fused_kernels_are_named_by_the_graph_op_they_run():
    """On x86 CPUs with AVX-512 VNNI, bf16 or AMX, TensorFlow's oneDNN rewrite runs
    `_MklNativeConv2D` for the graph's `Conv2D`; the FLOP count names the graph op, so the
    timeline must too or the per-op join finds nothing to divide."""
    _tf()
    from perfsuite.runner.frameworks.xplane import to_chrome_trace, xplane_pb2

    space = xplane_pb2().XSpace()
    plane = space.planes.add(id=1, name="/host:CPU")
    kernels = ["_MklNativeConv2D", "_MklNativeFusedMatMul", "_FusedConv2D", "_Send", "Relu"]
    for mid, kernel in enumerate(kernels, start=1):
        plane.event_metadata[mid].id = mid
        plane.event_metadata[mid].name = f"model/op{mid}:{kernel}"
    line = plane.lines.add(id=3, name="tf_Compute/3", timestamp_ns=1_000)
    for mid in range(1, len(kernels) + 1):
        line.events.add(metadata_id=mid, offset_ps=mid * 1_000_000, duration_ps=500_000)
    trace = to_chrome_trace(space)
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert [e["name"] for e in xs] == ["Conv2D", "MatMul", "Conv2D", "_Send", "Relu"]
    assert xs[0]["args"] == {"tf_op": "model/op1", "tf_kernel": "_MklNativeConv2D"}
    assert "tf_kernel" not in xs[3]["args"] and "tf_kernel" not in xs[4]["args"]
    (note,) = trace["notes"]
    assert "_MklNativeConv2D as Conv2D" in note and "_MklNativeFusedMatMul as MatMul" in note
    assert "fused bias or activation" in note
    # a fused kernel whose main op's name says "Fused" too gets the clause as well
    plane.event_metadata[1].name = "model/bn:_MklNativeFusedBatchNormEx"
    del line.events[1:]
    (note,) = to_chrome_trace(space)["notes"]
    assert "_MklNativeFusedBatchNormEx as FusedBatchNormV3;" in note
    assert note.endswith("fused bias or activation")


def test_unreadable_xspace_is_one_line(tmp_path):
    _tf()
    from perfsuite.runner.frameworks.xplane import read_xspace

    bad = tmp_path / "bad.xplane.pb"
    bad.write_bytes(b"\xff\xff\xff not a protobuf")
    with pytest.raises(ValueError, match=r"bad\.xplane\.pb: not a readable XSpace protobuf"):
        read_xspace(bad)


@pytest.mark.slow
def test_tensorflow_digits_end_to_end_through_the_cli(tmp_path, capsys):
    _tf()
    from perfsuite.analyzers.timeline import analyze_file
    from perfsuite.cli import main
    from perfsuite.record import load_record

    code = main(["run", "digits", "--framework", "tensorflow", "--epochs", "2", "--out",
                 str(tmp_path), "--profile-steps", "2", "--profile-seconds", "0", "--quiet",
                 "--no-peaks"])  # fmt: skip
    assert code == 0
    run_dir = next(tmp_path.iterdir())
    rec = load_record(run_dir)
    assert rec["framework"].startswith("tensorflow 2.")
    assert rec["environment"]["frameworks"]["tensorflow"] == rec["framework"].split()[1]
    assert [e["epoch"] for e in rec["evaluations"]] == [1, 2]
    assert rec["evaluations"][0]["train_time_s"] < rec["evaluations"][1]["train_time_s"]
    assert rec["evaluations"][1]["metrics"]["top1"] > 0.5  # it learns (chance is 0.1)
    assert rec["time_to_accuracy"]["threshold"] == 0.98
    assert len(rec["throughput"]["epoch_times_s"]) == 2
    # exact: 923,016,383 before integer work (3 of it here) stopped counting as FLOPs
    assert rec["work"]["flops_per_step"]["value"] == pytest.approx(923_016_380, rel=1e-9)
    assert rec["work"]["flops_per_step"]["provenance"] == "counted"
    assert rec["timeline"]["steps"] == 2
    assert {o["op"] for o in rec["timeline"]["ops"]} >= {"Conv2D", "Conv2DBackpropFilter"}
    assert rec["sidecars"]["telemetry"] == "telemetry.csv"
    assert rec["switches"]["effect"]["compiled"].startswith("tf.function")
    ops = {o.name for o in analyze_file(run_dir / rec["sidecars"]["trace"]).ops}
    assert "Conv2D" in ops
    capsys.readouterr()
    assert main(["timeline", str(run_dir), "--json"]) == 0
    assert main(["roofline", str(run_dir), "--json"]) == 0
    assert "Conv2DBackpropFilter" in capsys.readouterr().out


def test_study_plans_tensorflow_switches_and_passes_the_framework(tmp_path):
    from perfsuite.study.execute import open_study, run_options
    from perfsuite.study.spec import StudyError, spec_from_dict

    raw = {
        "kind": "factor",
        "workload": "digits",
        "options": ["bf16", "layout=nhwc"],
        "run": {"framework": "tensorflow", "epochs": 1},
    }
    study = open_study(spec_from_dict(raw, "s.toml"), tmp_path / "study")
    assert [c.switches for c in study.configs] == [(), ("bf16",), ("bf16", "layout=nhwc")]
    opts = run_options(study, study.configs[-1], 0, 0)
    assert opts.framework == "tensorflow"
    assert set(opts.switches) == {"bf16", "layout=nhwc"}
    with pytest.raises(StudyError, match=r"s\.toml: field run\.framework"):
        spec_from_dict({**raw, "run": {"framework": "jax"}}, "s.toml")
