"""The workload seam: one train_step, detours that leave the run untouched, switches,
synthetic data, the capture window (a user's own workload and loop: test_user_workloads.py)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from perfsuite.backends import parse_device, torch_backend  # noqa: E402
from perfsuite.hostinfo import low_precision_note, native_on_cpu  # noqa: E402
from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.runner.engine import capture  # noqa: E402
from perfsuite.runner.engine.capture import count_step_work  # noqa: E402
from perfsuite.runner.frameworks.assemble import build_state, prepare_recipe  # noqa: E402
from perfsuite.workloads import get_workload  # noqa: E402
from perfsuite.workloads.data import Batch  # noqa: E402
from perfsuite.workloads.state import detour  # noqa: E402
from perfsuite.workloads.switches import COMMON, parse_switches, scaled_lr  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")

# The digits CNN at a quarter of its width (16x fewer conv FLOPs): it still learns (about 0.3
# then 0.8 top-1 in 2 epochs), for the runs that read what a run records, not the model's size.
NARROW = ["width=8"]


def _opts(tmp_path, **kw):
    base = dict(
        workload="digits",
        out=str(tmp_path / "runs"),
        progress=False,
        measure_peaks=False,
        inference_repeats=3,
        capture=False,
        epochs=2,
    )
    base.update(kw)
    return RunOptions(**base)


@pytest.fixture(scope="module")
def module_run(tmp_path_factory):
    """Run `RunOptions` once for the module's tests that read different facts of one run; a
    cache of its own (as `private_cache`), and the run's stderr kept."""
    import contextlib
    import io

    made = {}

    def run(key, **kw):
        if key not in made:
            tmp = tmp_path_factory.mktemp(key)
            err = io.StringIO()
            with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
                mp.setenv("PERFSUITE_CACHE_DIR", str(tmp / "cache"))
                rec = load_record(run_workload(_opts(tmp, **kw)))
            made[key] = rec, err.getvalue()
        return made[key]

    return run


def _plain_two_epochs(module_run):
    """Capture off, no switch, both epochs trained and evaluated (a curve of two points)."""
    return module_run("plain", epochs=2, keep_going=True, overrides=NARROW)[0]


def _digits_state(switch_items=(), device="cpu"):
    wl = get_workload("digits")
    sw = parse_switches(list(switch_items), wl.switches, wl.name)
    recipe = prepare_recipe(wl, device, None, [], 2, None, sw)
    wl.configure(recipe)
    torch.manual_seed(0)
    data = wl.load_data(None, device)
    model = wl.build_model(recipe)
    backend = torch_backend(device)
    return wl, data, build_state(wl, recipe, model, wl.steps_per_epoch(data, recipe), backend, sw)


def test_device_parsing():
    assert parse_device("cuda:1").gpu_index == 1 and parse_device("cuda").gpu_index == 0
    assert parse_device("cpu").gpu_index is None and not parse_device("cpu").is_gpu
    with pytest.raises(ValueError, match="--device must be cpu or cuda"):
        parse_device("tpu")


def test_detour_restores_weights_optimizer_schedule_and_rng():
    wl, data, state = _digits_state()
    batches = data.train_batches(64, torch.Generator().manual_seed(1))
    wl.train_step(state, next(batches))  # momentum exists
    before = {k: v.clone() for k, v in state.module.state_dict().items()}
    lr = state.optimizer.param_groups[0]["lr"]
    momentum = [s["momentum_buffer"].clone() for s in state.optimizer.state.values()]
    rng = torch.get_rng_state()
    with detour(state):
        for _ in range(3):
            wl.train_step(state, next(batches))
        changed = any(not torch.equal(before[k], v) for k, v in state.module.state_dict().items())
    assert changed  # the detour really trained
    for k, v in state.module.state_dict().items():
        assert torch.equal(before[k], v), k
    assert state.optimizer.param_groups[0]["lr"] == lr
    after = [s["momentum_buffer"] for s in state.optimizer.state.values()]
    assert all(torch.equal(a, b) for a, b in zip(momentum, after, strict=True))
    assert torch.equal(rng, torch.get_rng_state())


def test_warm_up_takes_one_step_at_the_epoch_tail_size_and_restores_the_state(monkeypatch):
    # an epoch's last, partial batch is a new shape: its first use (cuDNN plans, kernels) goes
    # to the untimed warm-up, not to epoch 1's clock
    wl, data, state = _digits_state()
    sizes = []
    step = wl.train_step

    def counting(st, batch, **kw):
        sizes.append((batch.size, len(batch.inputs[0]), len(batch.target)))
        return step(st, batch, **kw)

    monkeypatch.setattr(wl, "train_step", counting)
    before = {k: v.clone() for k, v in state.module.state_dict().items()}
    batches = capture.endless(data, 64, torch.Generator().manual_seed(1))
    capture.warm_up(wl, state, batches, 2, tail=data.num_train % 64)
    tail = 1438 % 64  # digits: 1,438 training images
    assert sizes == [(64, 64, 64), (64, 64, 64), (tail, tail, tail)]
    for k, v in state.module.state_dict().items():
        assert torch.equal(before[k], v), k
    sizes.clear()
    capture.warm_up(wl, state, batches, 1, tail=0)  # the epoch divides evenly: no extra step
    assert sizes == [(64, 64, 64)]


def test_batch_head_cuts_every_tensor_or_declines():
    x, y = torch.arange(12.0).reshape(6, 2), torch.arange(6)
    short = capture.head(Batch((x, (x, y)), (y, y), 6), 4)
    assert short.size == 4 and torch.equal(short.inputs[1][1], y[:4])
    assert torch.equal(short.target[0], y[:4]) and isinstance(short.target, tuple)
    assert capture.head(Batch((x,), y, 6), 6) is None  # not shorter: nothing to warm
    assert capture.head(Batch((x, "mask"), y, 6), 4) is None  # not a tensor: left alone
    assert capture.head(Batch((x[:5],), y, 6), 4) is None  # not batch-major


def test_flop_count_uses_the_workload_step_with_phases():
    wl, data, state = _digits_state()
    batch = next(data.train_batches(64, torch.Generator().manual_seed(1)))
    work = count_step_work(wl, state, batch)
    phases = {row["phase"] for row in work["per_op"]}
    assert {"forward", "backward", "optimizer"} <= phases
    # the digits CNN's three 3x3 convs at batch 64: 1->32 and 32->64 on 8x8, 64->128 on 4x4
    (conv_fwd,) = [
        r for r in work["per_op"] if r["op"] == "aten::convolution" and r["phase"] == "forward"
    ]
    macs = 64 * 9 * (32 * 64 * 1 + 64 * 64 * 32 + 128 * 16 * 64)
    assert conv_fwd["flops"] == 2 * macs and conv_fwd["calls"] == 3
    assert work["batch_size"] == 64


def test_switch_parsing_errors_are_one_line():
    with pytest.raises(ValueError, match="unknown switch 'bf17'; known: "):
        parse_switches(["bf17"], COMMON, "digits")
    with pytest.raises(ValueError, match="does not support switch 'tta'"):
        parse_switches(["tta=off"], COMMON, "digits")
    with pytest.raises(ValueError, match="exclude each other"):
        parse_switches(["bf16,fp16"], COMMON, "digits")
    with pytest.raises(ValueError, match="'tf32': 'maybe' is not one of on, off"):
        parse_switches(["tf32=maybe"], COMMON, "digits")
    sw = parse_switches(["bf16,channels_last", "lr_rule=sqrt"], COMMON, "x")
    assert (sw.precision, sw.channels_last, sw.lr_rule) == ("bf16", True, "sqrt")
    assert scaled_lr(0.1, 64, 256, "linear") == pytest.approx(0.4)
    assert scaled_lr(0.1, 64, 256, "sqrt") == pytest.approx(0.2)


def test_switches_take_effect_and_are_recorded(tmp_path, module_run):
    opts = _opts(
        tmp_path,
        epochs=1,
        batch_size=128,
        overrides=NARROW,
        switches=["bf16,channels_last", "lr_rule=linear", "label_smoothing=0.05"],
    )
    rec = load_record(run_workload(opts))
    eff = rec["switches"]["effect"]
    assert eff["autocast"] == "bfloat16"
    assert eff["first_layer"]["output_dtype"] == "bfloat16"  # observed, not assumed
    assert eff["parameter_memory_format"] == "channels_last"
    assert eff["first_layer"]["output_memory_format"] == "channels_last"
    assert eff["batch_size"] == 128 and eff["lr"] == pytest.approx(0.1 * 128 / 64)
    assert eff["label_smoothing"] == 0.05
    assert rec["switches"]["requested"]["given"] == [
        "bf16",
        "channels_last",
        "lr_rule=linear",
        "label_smoothing=0.05",
    ]
    assert rec["config"]["switches"]
    assert (
        rec["math"]["autocast_dtype"] == "bfloat16"
        and rec["math"]["activation_dtype"] == "bfloat16"
    )
    from perfsuite.report.build import report_html

    page = report_html([rec])
    assert "Data, switches and math" in page and "input stall" in page
    assert "channels_last" in page and "bfloat16" in page
    plain = _plain_two_epochs(module_run)["switches"]["effect"]
    assert plain["autocast"] is None and plain["first_layer"]["output_dtype"] == "float32"
    assert plain["parameter_memory_format"] == "contiguous (NCHW)"


def _synthetic_cifar(tmp_path, **kw):
    """A tiny cifar10 run on synthetic data (no dataset needed)."""
    base = dict(
        workload="cifar10",
        synthetic=True,
        epochs=1,
        threshold=0.99,
        batch_size=32,
        overrides=["width=0.125", "train_limit=64"],
    )
    base.update(kw)
    return load_record(run_workload(_opts(tmp_path, **base)))


def test_synthetic_data_runs_without_the_dataset(tmp_path):
    rec = _synthetic_cifar(tmp_path, overrides=["width=0.125", "train_limit=48"], batch_size=16)
    assert rec["data"]["kind"] == "synthetic"
    assert "random 3x32x32" in rec["task"]["dataset"]
    assert any("synthetic data" in f for f in rec["flags"])
    assert rec["evaluations"][0]["samples"] == 48
    assert rec["data"]["stall_time"]["provenance"] == "measured"


def test_capture_warm_up_is_the_same_in_both_modes_and_window_is_mid_training(
    tmp_path, module_run, monkeypatch
):
    asked = []  # what the run asks of window_steps (its arithmetic: test_window_steps_...)
    window_steps = capture.window_steps
    monkeypatch.setattr(capture, "window_steps", lambda *a: asked.append(a) or window_steps(*a))
    off = _plain_two_epochs(module_run)
    # a tenth of a second of steps (the 1 s default is test_run_options's): the window's length
    # follows --profile-seconds whatever its value
    seconds = 0.1
    opts = _opts(
        tmp_path,
        epochs=2,
        keep_going=True,
        capture=True,
        profile_steps=2,
        profile_seconds=seconds,
        overrides=NARROW,
    )
    on = load_record(run_workload(opts))
    for rec in (off, on):
        assert rec["extra"]["setup_s"]["warmup_s"] > 0
    assert (
        "flop_count_s" in on["extra"]["setup_s"] and "flop_count_s" not in off["extra"]["setup_s"]
    )
    # after the last timed epoch (2 of 2: keep_going), not before training nor after the
    # first epoch, and no timed epoch follows it
    assert on["timeline"]["epoch"] == 2
    step_s = on["timeline"]["measured_step_time"]
    assert step_s["provenance"] == "measured"
    # the window covers --profile-seconds of the clock's steps, not just --profile-steps (the
    # run's request is checked too: on a loaded machine a step can outlast the seconds asked)
    ((steps, min_seconds, clock_step_s),) = asked
    assert (steps, min_seconds) == (2, seconds) and clock_step_s == pytest.approx(step_s["value"])
    assert on["timeline"]["steps"] == max(2, min(1000, math.ceil(seconds / step_s["value"])))
    # capture never changes what is trained: same seed, same curve
    assert [e["metrics"] for e in on["evaluations"]] == [e["metrics"] for e in off["evaluations"]]


def test_the_flop_count_and_ceilings_follow_the_last_timed_epoch(tmp_path, monkeypatch):
    """Before the clock, the count's allocations changed the allocator's state for every
    epoch (capture on: 2-3x the page faults, 4-7% slower epochs on the 2-core CPU); after
    the last timed epoch nothing timed follows it. Without a profile window too."""
    from perfsuite.runner.routes import run as loop

    timed_before: list[int] = []
    real = loop._Run._capture_work

    def spy(self):
        timed_before.append(len(self.rec.epoch_times))
        real(self)

    monkeypatch.setattr(loop._Run, "_capture_work", spy)
    # 6 steps an epoch: where the count falls, not what the epochs train
    opts = _opts(
        tmp_path,
        epochs=2,
        keep_going=True,
        capture=True,
        profile_steps=0,
        batch_size=256,
        overrides=NARROW,
    )
    rec = load_record(run_workload(opts))
    assert timed_before == [2]
    assert rec["work"]["flops_per_step"]["value"] > 0 and rec["ceilings"]
    assert "timeline" not in rec or not rec["timeline"]


def _one_epoch_captured(module_run):
    """One epoch, capture on, a window of exactly 1 step (profile_seconds=0), the progress
    shown, counters asked for on CPU (the phases and the counters' answer are separate facts
    of this one run)."""
    return module_run(
        "captured",
        epochs=1,
        capture=True,
        profile_steps=1,
        profile_seconds=0.0,
        counters="cupti",
        progress=True,
        overrides=NARROW,
    )


def test_capture_after_training_is_timed_as_phases_of_its_own(module_run):
    """The training bar closes before the count: the count's line carries training's time
    and the window's time is its own (not folded into "training and evaluation")."""
    _, err = _one_epoch_captured(module_run)
    lines = [x for x in err.splitlines() if "[perfsuite]" in x]
    counting = next(x for x in lines if ": counting FLOPs of one step, off the clock" in x)
    assert "  [training and evaluation: " in counting and "up to 1 epochs x " in counting
    latency = next(x for x in lines if ": inference latency" in x)
    assert "  [profile window: " in latency


def test_window_steps_cover_the_requested_seconds():
    assert capture.window_steps(3, 1.0, 0.008) == 125  # 125 steps of 8 ms = 1 s
    assert capture.window_steps(3, 1.0, 4.0) == 3  # long steps keep the step count
    assert capture.window_steps(3, 0.0, 0.008) == 3  # 0 s: exactly the step count
    assert capture.window_steps(3, 1.0, 1e-6) == 1000  # capped


def test_counters_request_on_cpu_never_loses_the_run(module_run):
    # profile_seconds=0: the timeline window is exactly its step (the counters' choice, and
    # the flag saying why, do not depend on its length)
    rec, _ = _one_epoch_captured(module_run)
    assert rec["status"] in ("reached", "not_reached")
    assert rec.get("counters") is None
    assert any(f.startswith("counters: ") for f in rec["flags"])


def test_replay_window_writes_no_record(tmp_path, monkeypatch):
    """The counters replay child runs its steps inside the backend's per-op ranges (what lets
    ncu attribute kernels to ops), draws its batches before them, and writes no record."""
    import contextlib

    from perfsuite.backends.pytorch import TorchBackend

    seen = []
    real = TorchBackend.op_ranges

    @contextlib.contextmanager
    def spy(self):
        seen.append("enter")
        with real(self):  # on CPU: a no-op, checked here too
            yield
        seen.append("exit")

    from perfsuite.runner.engine import capture

    endless = capture.endless

    def drawing(*args, **kw):
        for batch in endless(*args, **kw):
            seen.append("draw")
            yield batch

    monkeypatch.setattr(TorchBackend, "op_ranges", spy)
    monkeypatch.setattr(capture, "endless", drawing)
    out = tmp_path / "replay"
    assert run_workload(_opts(tmp_path, out=str(out), replay_steps=2)) is None
    assert not out.exists() or not any(out.iterdir())
    # the window's two batches are drawn before the ranges open: only steps inside them
    assert seen[-4:] == ["draw", "draw", "enter", "exit"]


def test_replay_argv_repeats_the_run(tmp_path):
    from perfsuite.runner.measure.counters_step import replay_argv

    opts = _opts(
        tmp_path,
        workload="cifar10",
        data_dir="/d",
        switches=["bf16"],
        seed=3,
        overrides=["width=0.5"],
        batch_size=256,
    )
    argv = replay_argv(opts, 3)
    assert argv[:2] == ["run", "cifar10"]
    for pair in (
        ["--seed", "3"],
        ["--data-dir", "/d"],
        ["--switch", "bf16"],
        ["--set", "width=0.5"],
        ["--batch-size", "256"],
        ["--replay-window", "3"],
    ):
        i = argv.index(pair[0])
        assert argv[i : i + 2] == pair


def test_eval_from_skips_early_evaluations_but_keeps_the_clock(tmp_path):
    # 3 steps an epoch: which epochs are evaluated and timed, not what they train
    opts = _opts(tmp_path, epochs=4, eval_from=3, keep_going=True, batch_size=512, overrides=NARROW)
    rec = load_record(run_workload(opts))
    assert [e["epoch"] for e in rec["evaluations"]] == [3, 4]
    times = rec["throughput"]["epoch_times_s"]
    assert len(times) == 4
    assert rec["evaluations"][0]["train_time_s"] == pytest.approx(sum(times[:3]))


def test_window_follows_the_epoch_the_run_stops_after(tmp_path):
    # a run that reaches its threshold stops there, and the window follows that epoch: warm,
    # and no epoch on the clock comes after it (docs/seam.md "Capture parity")
    # profile_seconds=0: a window of exactly 2 steps (where it is taken does not depend on its
    # length; test_capture_warm_up_... checks the length)
    opts = _opts(
        tmp_path, epochs=5, threshold=0.5, capture=True, profile_steps=2, profile_seconds=0.0,
        eval_from=2, overrides=NARROW,
    )  # fmt: skip
    rec = load_record(run_workload(opts))
    stopped = rec["evaluations"][-1]["epoch"]
    assert rec["status"] == "reached" and stopped < 5
    assert rec["timeline"]["epoch"] == stopped == len(rec["throughput"]["epoch_times_s"])
    step = rec["throughput"]["epoch_times_s"][-1] / rec["extra"]["steps_per_epoch"]
    assert rec["timeline"]["measured_step_time"]["value"] == pytest.approx(step)


def test_cifar10_streams_from_image_folders_with_data_workers(tmp_path):
    import numpy as np
    from PIL import Image

    from perfsuite.workloads.cifar10.data import CLASSES

    rng = np.random.default_rng(0)
    for split, n in (("train", 4), ("test", 2)):
        for c in CLASSES:
            d = tmp_path / "data" / split / c
            d.mkdir(parents=True)
            for i in range(n):
                img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                Image.fromarray(img).save(d / f"{i}.png")
    rec = load_record(
        run_workload(
            _opts(
                tmp_path,
                workload="cifar10",
                data_dir=str(tmp_path / "data"),
                epochs=1,
                recipe="cpu",
                overrides=["width=0.125"],
                batch_size=16,
                threshold=0.99,
                switches=["data=workers"],
            )
        )
    )
    assert rec["data"]["kind"] == "image-folder" and rec["data"]["num_workers"] >= 1
    assert rec["data"]["pinned_memory"] is False  # CPU run
    assert rec["evaluations"][0]["samples"] == 40
    assert rec["switches"]["requested"]["data"] == "workers"
    with pytest.raises(ValueError, match="needs CIFAR-10 in image-folder layout"):
        run_workload(
            _opts(
                tmp_path,
                workload="cifar10",
                data_dir=str(tmp_path),
                epochs=1,
                switches=["data=workers"],
            )
        )


@pytest.mark.parametrize(
    "switch",
    ["bf16", "fp16", "tf32=off", "channels_last", "compile", "label_smoothing=0.1", "tta=off"],
)
def test_each_switch_runs_on_cifar10_synthetic(tmp_path, switch, monkeypatch):
    # one batch of 16 per epoch and an evaluation of 16: what each switch sets, not training
    compiled: list[object] = []
    if switch == "compile":
        # The run wraps the model in torch.compile (what perfsuite does); the graphs are
        # captured by dynamo and AOT autograd as always, then run by the aot_eager backend:
        # inductor's C++ code generation costs a minute of a cold 2-core machine and is
        # torch's to test.
        real_compile = torch.compile

        def compile_aot_eager(model, mode=None, **kw):
            compiled.append(mode)
            return real_compile(model, backend="aot_eager", **kw)

        monkeypatch.setattr(torch, "compile", compile_aot_eager)
    rec = _synthetic_cifar(
        tmp_path,
        recipe="cpu",
        switches=[switch],
        batch_size=16,
        overrides=["width=0.125", "train_limit=16"],
    )
    assert rec["status"] == "not_reached"
    eff = rec["switches"]["effect"]
    expected = {
        "bf16": ("autocast", "bfloat16"),
        "fp16": ("loss_scaling", "dynamic (torch.amp.GradScaler)"),
        "channels_last": ("parameter_memory_format", "channels_last"),
        "compile": ("compiled", "torch.compile mode=default"),
        "label_smoothing=0.1": ("label_smoothing", 0.1),
        "tta=off": ("tta", False),
    }
    if switch in expected:
        key, value = expected[switch]
        assert eff[key] == value
    assert compiled == ([None] if switch == "compile" else [])
    if switch in ("bf16", "fp16"):  # flagged exactly when this CPU lacks the instructions
        assert rec["math"]["autocast_native"] is native_on_cpu(eff["autocast"])
        note = low_precision_note(eff["autocast"], native_on_cpu(eff["autocast"]))
        assert (
            (note in rec["flags"])
            if note
            else not any("autocast on a CPU" in f for f in rec["flags"])
        )
    if switch == "tf32=off":
        assert eff["tf32"]["cudnn_allow_tf32"] is False and eff["tf32"]["applies"] is False
        assert rec["math"]["cudnn_allow_tf32"] is False
        assert torch.backends.cudnn.allow_tf32 is True  # put back after the run


def test_flops_cli_reads_a_full_input_shape(capsys):
    """The `flops` command in-process (the argument parsing and the stderr note are what is
    tested, not a child process's start)."""
    import json

    from perfsuite.__main__ import main

    def flops(*args):
        assert main(["flops", "builtin:resnet18", "--json", *args]) == 0
        out = capsys.readouterr()
        return json.loads(out.out), out.err

    full, err = flops("--input", "2,3,224,224")
    assert "2x3x224x224 read as a full shape" in err and "(batch 2 first)" in err
    per, err2 = flops("--input", "3,224,224", "--batch", "2")
    assert "read as one example; batch 2 added" in err2
    assert full["total_flops"] == per["total_flops"] and full["batch_size"] == 2
    assert full["input_assumption"].startswith("2x3x224x224 read as a full shape")
