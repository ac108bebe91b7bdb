"""`perfsuite.track` on the loops users write: epochs left early, evaluations inside an epoch,
NaN losses, any step return, batch sizes from any argument, lower-is-better metrics, detours
over tensors outside the model, the profile window's placement, nested tracks.

Most tests run on a fake training clock (`clock` below: the step advances it by exact binary
fractions), so times, step times and rates are asserted to the bit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import perfsuite  # noqa: E402
from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner.engine.clock import ClockReading  # noqa: E402
from perfsuite.runner.record.recorder import Recorder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("private_cache")


class FakeClock:
    t = 0.0

    def tick(self, seconds: float) -> None:
        self.t += seconds


@pytest.fixture
def clock(monkeypatch):
    """The training clock reads this instead of perf_counter: only ticks count."""
    fake = FakeClock()
    monkeypatch.setattr(ClockReading, "now", classmethod(lambda cls: cls(fake.t, 0.0, 0)))
    return fake


def _tiny(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 3)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def _batches(n: int, size: int = 8, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(size, 4, generator=g), torch.randint(0, 3, (size,), generator=g))] * n


def _stepper(model, opt, clock=None, seconds: float = 1.0):
    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if clock is not None:
            clock.tick(seconds)
        return loss

    return step


def _flag(flags: list[str], token: str) -> str:
    """The one flag that carries `token` (a short stable part of its text)."""
    (found,) = [f for f in flags if token in f]
    return found


def _track(tmp_path, model=None, opt=None, **kw):
    """A track into tmp_path/runs; capture off, and roofs never measured (seconds of
    micro-benchmarks per test) unless a test asks for them."""
    kw.setdefault("capture", False)
    kw.setdefault("threshold", 0.5)
    kw.setdefault("measure_peaks", False)
    return perfsuite.track("t", model=model, optimizer=opt, out=tmp_path / "runs", **kw)


def test_an_epoch_left_early_keeps_its_time_and_steps(tmp_path, clock):
    model, opt = _tiny()
    step = _stepper(model, opt, clock)
    with _track(tmp_path, model, opt) as run:
        for i, (x, y) in enumerate(run.epoch(_batches(5))):
            run.step(step, x, y)
            if i == 2:
                break  # a step budget per epoch
        assert run.evaluate(top1=0.6)
        for (x, y), _ in zip(run.epoch(_batches(5)), range(2), strict=False):
            run.step(step, x, y)  # zip with a shorter iterable: 2 steps
        run.evaluate(top1=0.7)
    rec = load_record(run.run_dir)
    assert [e["train_time_s"] for e in rec["evaluations"]] == [3.0, 5.0]
    assert [e["samples"] for e in rec["evaluations"]] == [24, 40]
    assert rec["time_to_accuracy"]["time_s"] == 3.0 and rec["status"] == "reached"
    assert rec["throughput"]["epoch_times_s"] == [3.0, 2.0]
    assert rec["throughput"]["step_time"]["value"] == 1.0
    assert rec["throughput"]["samples_per_s"]["value"] == 8.0
    early = _flag(rec["flags"], "ended early")
    assert early.startswith("epochs 1, 2 ended") and "after 3, 2 steps" in early


def test_evaluate_inside_an_epoch_stops_the_clock_for_the_evaluation(tmp_path, clock):
    model, opt = _tiny()
    step = _stepper(model, opt, clock)

    def slow_accuracy() -> float:
        clock.tick(100.0)  # evaluation time: must stay off the training clock
        return 0.25

    with _track(tmp_path, model, opt) as run:
        for i, (x, y) in enumerate(run.epoch(_batches(4))):
            run.step(step, x, y)
            if i == 1:
                with pytest.raises(ValueError, match=r"takes callables \(top1=lambda: \.\.\.\)"):
                    run.evaluate(top1=0.25)
                assert not run.evaluate(top1=slow_accuracy)
        run.evaluate(top1=0.75)
    rec = load_record(run.run_dir)
    assert [(e["epoch"], e["train_time_s"]) for e in rec["evaluations"]] == [(0.5, 2.0), (1, 4.0)]
    assert rec["throughput"]["epoch_times_s"] == [4.0]
    assert rec["time_to_accuracy"]["time_s"] == 4.0
    assert rec["evaluations"][0]["samples"] == 16


def test_a_nan_loss_ends_the_run_as_diverged_and_keeps_the_finished_epochs(tmp_path):
    model, opt = _tiny()
    calls = [0]

    def step(x, y):
        calls[0] += 1
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if calls[0] == 9:  # one bad batch: the next losses may look finite again
            return loss * float("nan")
        return loss

    run = _track(tmp_path, model, opt)
    with pytest.raises(FloatingPointError, match=r"non-finite loss by step 9$"), run:
        for _ in range(3):
            for x, y in run.epoch(_batches(6)):
                run.step(step, x, y)
            run.evaluate(top1=0.1)
    rec = load_record(run.run_dir)
    assert rec["status"] == "diverged"
    assert rec["error"].startswith("did not converge:") and rec["error"].endswith("by step 9")
    assert [e["epoch"] for e in rec["evaluations"]] == [1]
    assert len(rec["throughput"]["epoch_times_s"]) == 1  # the diverged epoch is not finished


def test_a_nan_between_checks_is_found_at_the_epoch_end(tmp_path):
    """On a GPU the loss is checked every 50 steps (a check is a sync); the sum kept on the
    device still carries a NaN of any step to the epoch's end."""
    model, opt = _tiny()
    losses = iter([1.0, float("nan"), 1.0, 1.0] * 2)
    with _track(tmp_path, model, opt) as run:
        run.loss.check_every = 50
        with pytest.raises(FloatingPointError, match=r"non-finite loss by step 4$"):
            for x, _ in run.epoch(_batches(4)):
                run.step(lambda x: torch.tensor(next(losses)), x)
    assert load_record(run.run_dir)["status"] == "diverged"
    # the same NaN in an epoch the loop leaves early is raised by the run's next call
    with _track(tmp_path, model, opt) as run2:
        run2.loss.check_every = 50
        for i, (x, _) in enumerate(run2.epoch(_batches(4))):
            run2.step(lambda x: torch.tensor(next(losses)), x)
            if i == 2:
                break
        with pytest.raises(FloatingPointError, match=r"non-finite loss by step 3$"):
            run2.evaluate(top1=0.1)
    assert load_record(run2.run_dir)["status"] == "diverged"


def test_any_step_return_is_read_for_its_loss(tmp_path):
    """Per-sample losses, a mapping with 'loss', a (loss, logits) tuple, a number; None is
    no loss (flagged), and never a crash of the user's step."""
    returns = [
        torch.full((8,), 0.5),
        {"loss": torch.tensor(0.25), "logits": torch.zeros(8, 3)},
        (torch.tensor(2.0), torch.zeros(8, 3)),
        1.5,
        None,
    ]
    with _track(tmp_path) as run:
        for value in returns:
            for x, _ in run.epoch(_batches(2)):
                run.step(lambda x, v=value: v, x)
            run.evaluate(top1=0.1)
    rec = load_record(run.run_dir)
    assert [e.get("train_loss") for e in rec["evaluations"]] == [0.5, 0.25, 2.0, 1.5, None]
    assert _flag(rec["flags"], "returned no loss").startswith("run.step:")


def test_batch_size_from_keywords_nested_arguments_or_given(tmp_path, clock):
    def step(*args, **kw):
        clock.tick(1.0)
        return torch.tensor(1.0)

    x = torch.zeros(8, 4)
    with _track(tmp_path) as run:
        for _ in run.epoch(range(2)):
            run.step(step, xb=x, yb=x[:, 0])  # keyword tensors
        run.evaluate(top1=0.1)
        for _ in run.epoch(range(2)):
            run.step(step, {"ids": x.long(), "mask": x}, (1, 2))  # nested in a mapping
        run.evaluate(top1=0.1)
        for _ in run.epoch(range(2)):
            run.step(step, x.T, batch_size=5)  # sequence-first: the size given
        run.evaluate(top1=0.1)
    rec = load_record(run.run_dir)
    assert [e["samples"] for e in rec["evaluations"]] == [16, 32, 42]
    assert rec["throughput"]["samples_per_s"]["value"] == 5.0

    with _track(tmp_path) as run:  # nothing to count: no samples at all, not 1 per step
        for _ in run.epoch(range(2)):
            run.step(step, 3)
        run.evaluate(top1=0.1)
    rec = load_record(run.run_dir)
    assert "samples" not in rec["evaluations"][0]
    assert "samples_per_s" not in rec["throughput"] and rec["throughput"]["step_time"]
    assert "samples not counted" in _flag(rec["flags"], "no batch_size given")


def test_samples_per_s_counts_the_partial_last_batch(tmp_path, clock):
    model, opt = _tiny()
    step = _stepper(model, opt, clock)
    batches = _batches(2) + _batches(1, size=3)
    with _track(tmp_path, model, opt, batch_size=8) as run:
        for x, y in run.epoch(batches):
            run.step(step, x, y)
        run.evaluate(top1=0.1)
    put = load_record(run.run_dir)["throughput"]["samples_per_s"]
    assert put["value"] == 19 / 3 and put["source"] == "19 samples per epoch / (step_time x 3)"


def test_step_time_is_each_epochs_time_over_its_own_steps(tmp_path, clock):
    model, opt = _tiny()
    step = _stepper(model, opt, clock)
    with _track(tmp_path, model, opt) as run:
        for n in (4, 4, 2):  # a last epoch with what was left of a step budget
            for x, y in run.epoch(_batches(n)):
                run.step(step, x, y)
            run.evaluate(top1=0.1)
    put = load_record(run.run_dir)["throughput"]
    assert put["epoch_times_s"] == [4.0, 4.0, 2.0]
    assert put["step_time"]["value"] == 1.0  # not median(4, 2) / 2 = 1.5
    source = put["step_time"]["source"]
    assert source.startswith("median over 2 epoch(s)") and "/ its own steps" in source


def test_recorder_step_time_of_equal_epochs_is_unchanged(tmp_path):
    task = {"name": "t", "metric": "top1", "threshold": 0.5}
    rec = Recorder(tmp_path, "t", task, "cpu", {}, framework="x", write_files=False)
    rec.epoch_times = [3.0, 5.0, 4.0]
    rec.set_throughput(4, 8, 30)  # perfsuite run: no epoch_steps, every epoch 4 steps
    put = rec.record["throughput"]
    assert put["step_time"]["value"] == 4.5 / 4
    source = put["step_time"]["source"]
    assert source.startswith("median over 2 epoch(s)") and "/ 4 steps" in source
    assert put["samples_per_s"]["value"] == 30 / (4.5 / 4 * 4)
    rec.set_throughput(4, None)  # neither samples nor a batch size: no rate, not 0
    assert "samples_per_s" not in rec.record["throughput"]


def _outside_run(tmp_path, capture: bool, accumulate: bool):
    torch.manual_seed(0)
    backbone = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU())
    head = torch.nn.Linear(6, 3)
    opt = torch.optim.SGD([*backbone.parameters(), *head.parameters()], lr=0.1, momentum=0.9)

    def step(x, y, apply: bool):
        loss = torch.nn.functional.cross_entropy(head(backbone(x)), y)
        loss.backward()  # gradients accumulate over two steps when `accumulate`
        if apply:
            opt.step()
            opt.zero_grad()
        return loss

    with _track(tmp_path, backbone, opt, capture=capture, profile_steps=1) as run:
        for i, (x, y) in enumerate(run.epoch(_batches(5, seed=2))):
            run.step(step, x, y, not accumulate or i % 2 == 1)
        run.evaluate(top1=0.1)
    return [t.detach().clone() for t in (*backbone.parameters(), *head.parameters())]


@pytest.mark.parametrize("accumulate", [False, True])
def test_detours_restore_what_the_optimizer_trains_outside_the_model(tmp_path, accumulate):
    on = _outside_run(tmp_path, True, accumulate)
    off = _outside_run(tmp_path, False, accumulate)
    assert all(torch.equal(a, b) for a, b in zip(on, off, strict=True))


def test_a_model_without_parameters(tmp_path):
    class Fixed(torch.nn.Module):  # the trained tensor is outside the model
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("w", torch.randn(4, 3))

        def forward(self, x):
            return x @ self.w

    model = Fixed()
    bias = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([bias], lr=0.1)

    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(x) + bias, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    with _track(tmp_path, model, opt, capture=True, profile_steps=0) as run:
        for x, y in run.epoch(_batches(3)):
            run.step(step, x, y)
        run.evaluate(top1=0.1)
    rec = load_record(run.run_dir)
    assert rec["status"] == "not_reached" and rec["extra"]["parameters"] == 0
    assert rec["math"]["param_dtype"] == "float32"  # the optimizer's tensor


def test_integer_inputs_do_not_set_the_dtype(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Embedding(10, 4), torch.nn.Flatten(), torch.nn.Linear(8, 3)
    )
    model.double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(ids, y):
        loss = torch.nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    ids, y = torch.randint(0, 10, (8, 2)), torch.randint(0, 3, (8,))
    with _track(tmp_path, model, opt, capture=True, profile_steps=0) as run:
        for _ in run.epoch(range(3)):
            run.step(step, ids, y)  # token ids and labels: integers
        run.evaluate(top1=0.1)
    rec = load_record(run.run_dir)
    # no floating-point input: the parameters' dtype, not the ids' int64
    assert rec["work"]["dtype"] == "float64" and rec["math"]["activation_dtype"] == "float64"
    from perfsuite.runner.engine.capture import compute_dtype
    from perfsuite.runner.engine.step_parts import leaves

    inputs = leaves(((ids, torch.zeros(2, dtype=torch.float16)), {}))
    assert compute_dtype(inputs, model.parameters()) == "float16"


def test_lower_is_better_metrics(tmp_path):
    with pytest.raises(ValueError, match="direction must be higher or lower, got 'down'"):
        _track(tmp_path, direction="down")
    with _track(tmp_path, metric="loss", threshold=0.3, direction="lower") as run:
        for value in (1.145, 0.25):
            for _ in run.epoch(range(1)):
                pass
            reached = run.evaluate(loss=value)
    rec = load_record(run.run_dir)
    assert reached and rec["task"]["direction"] == "lower"
    assert rec["time_to_accuracy"]["epoch"] == 2 and rec["status"] == "reached"


def test_a_workload_direction_reaches_the_runners_record(tmp_path):
    from perfsuite.runner import RunOptions
    from perfsuite.runner.routes.plan import plan_run

    wl = tmp_path / "lower.py"
    wl.write_text(
        "from perfsuite.workloads.digits.workload import DigitsWorkload\n\n"
        "class ErrorDigits(DigitsWorkload):\n"
        "    name = 'error-digits'\n"
        "    direction = 'lower'\n"
    )
    for workload, direction in ((f"{wl}:ErrorDigits", "lower"), ("digits", "higher")):
        opts = RunOptions(workload=workload, out=str(tmp_path / "runs"), progress=False)
        task = plan_run(opts).task  # the record as the run starts: nothing trained
        assert task["direction"] == direction


def _window_run(tmp_path, epochs_hint, per_epoch, reach_at, **kw):
    model, opt = _tiny()
    step = _stepper(model, opt)
    with _track(tmp_path, model, opt, capture=True, epochs=epochs_hint, **kw) as run:
        for epoch in range(1, epochs_hint + 1):
            for x, y in run.epoch(_batches(per_epoch)):
                run.step(step, x, y)
            if run.evaluate(top1=1.0 if epoch == reach_at else 0.0):
                break
    return load_record(run.run_dir)


def test_the_window_is_taken_when_the_threshold_comes_before_the_middle_epoch(tmp_path):
    rec = _window_run(tmp_path, 10, 2, reach_at=2)  # middle epoch 5; 2-step epochs
    assert rec["timeline"]["epoch"] == 2 and rec["timeline"]["steps"] == 3
    expected = rec["throughput"]["epoch_times_s"][1] / 2
    assert rec["timeline"]["measured_step_time"]["value"] == expected
    assert not [f for f in rec["flags"] if f.startswith("no profile window")]


def test_detours_after_the_loop_replay_the_kept_call_in_its_own_math(tmp_path):
    """The detours run after the loop, in the autocast and grad mode the kept call ran in:
    a loop under bf16 autocast gets its window and count at the evaluate() outside it, and a
    one-step run gets both at exit; a run that ends inside its loop says why it has neither."""
    model, opt = _tiny()
    step = _stepper(model, opt)
    with _track(tmp_path, model, opt, capture=True, epochs=4) as run:
        with torch.autocast("cpu", dtype=torch.bfloat16):  # the loop's math
            for x, y in run.epoch(_batches(2)):
                run.step(step, x, y)
        run.evaluate(top1=1.0)  # reached, outside the loop's autocast
    rec = load_record(run.run_dir)
    assert rec["timeline"]["batch"]["call"] == 2 and rec["work"]["counted_on"]["call"] == 2
    assert not [f for f in rec["flags"] if f.startswith(("no profile window", "no FLOP count"))]
    with _track(tmp_path, model, opt, capture=True) as run:
        for x, y in run.epoch(_batches(1)):
            run.step(step, x, y)
    rec = load_record(run.run_dir)
    assert rec["work"]["counted_on"]["call"] == 1 and rec["timeline"]["batch"]["call"] == 1
    with pytest.raises(RuntimeError), _track(tmp_path, model, opt, capture=True) as run:
        for x, y in run.epoch(_batches(3)):
            run.step(step, x, y)
            raise RuntimeError("the user's loop broke")
    flags = load_record(run.run_dir)["flags"]
    assert "the run ended before its loop did" in _flag(flags, "no FLOP count")
    assert "the run ended before its loop did" in _flag(flags, "no profile window")


NESTED = """
import os, sys, torch, perfsuite

def tiny():
    m = torch.nn.Linear(4, 3)
    return m, torch.optim.SGD(m.parameters(), lr=0.1)

def stepper(m, o):
    def step(x, y):
        loss = torch.nn.functional.cross_entropy(m(x), y)
        o.zero_grad(); loss.backward(); o.step()
        return loss
    return step

out = sys.argv[1]
q = {"measure_peaks": False}  # no roof micro-benchmarks: not what is tested
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
m, o = tiny(); m2, o2 = tiny()
inner_step = stepper(m2, o2)

def outer_step(x, y):
    with perfsuite.track("inner", threshold=0.9, model=m2, optimizer=o2, out=out, **q) as inner:
        for xb, yb in inner.epoch([(x, y)] * 4):
            inner.step(inner_step, xb, yb)
        inner.evaluate(top1=0.1)
    return stepper(m, o)(x, y)

with perfsuite.track("outer", threshold=0.9, model=m, optimizer=o, out=out, **q) as outer:
    for xb, yb in outer.epoch([(x, y)] * 4):
        outer.step(outer_step, xb, yb)
    outer.evaluate(top1=0.1)
print(len(os.listdir(out)), "folders")
with torch.profiler.profile():
    with perfsuite.track("mine", threshold=0.9, model=m, optimizer=o, out=out + "-p", **q) as run:
        for xb, yb in run.epoch([(x, y)] * 4):
            run.step(stepper(m, o), xb, yb)
        run.evaluate(top1=0.1)
for flag in run.record["flags"]:
    if flag.startswith("no profile window"):
        print(flag)
"""


def test_nested_tracks_and_a_users_profiler(tmp_path):
    """A track inside a tracked step: an inner track opened by a detour call is inert (4 real
    outer steps: 4 inner folders, not one per detour call), and no window opens while a
    profiler records (torch.profiler does not nest: it crashed the process)."""
    script = tmp_path / "nest.py"
    script.write_text(NESTED)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's perfsuite
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "runs")],
        capture_output=True, text=True, cwd=ROOT, timeout=600, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-2] == "5 folders"
    assert lines[-1].startswith("no profile window:") and "does not nest" in lines[-1]


def test_small_things(tmp_path, capsys):
    with _track(tmp_path, progress=True) as run:  # the loop never calls run.step
        for _ in run.epoch(range(3)):
            pass
        run.evaluate(top1=0.75)
        with pytest.raises(ValueError, match=r"run.step\(\) outside a run.epoch\(\) loop"):
            run.step(lambda: None)
    rec = load_record(run.run_dir)
    assert "samples" not in rec["evaluations"][0] and rec.get("throughput") is None
    assert _flag(rec["flags"], "run.step was never called")
    err = capsys.readouterr().err
    assert f"[perfsuite] {run.rec.run_id}: epoch 1: top1=0.7500 after" in err
    assert f"[perfsuite] {run.rec.run_id}: reached: {run.run_dir}" in err
    with pytest.raises(ValueError, match=r"^perfsuite.track: device must be cpu or cuda\[:N\]"):
        _track(tmp_path, device="tpu")


# -- the window's batch, loops without torch.optim, smaller things -----------------------------


def _sized(sizes, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g)) for n in sizes]


def test_the_window_replays_a_batch_of_the_counted_shape(tmp_path):
    """A partial batch is never the replayed one: the detours after the loop replay the last
    call with the first call's shapes (epoch 2 ends on full batches: call 6), and at evaluate()
    the last full one before it."""
    model, opt = _tiny()
    step = _stepper(model, opt)
    with _track(tmp_path, model, opt, capture=True, epochs=4, measure_peaks=False) as run:
        for sizes in ([8, 8, 3], [3, 8, 8]):
            for x, y in run.epoch(_sized(sizes)):
                run.step(step, x, y)
    rec = load_record(run.run_dir)
    assert rec["work"]["batch_size"] == 8
    assert rec["work"]["counted_on"]["call"] == 6
    assert rec["work"]["counted_on"]["shapes"] == [[8, 4], [8]]
    assert rec["timeline"]["batch"] == {
        "call": 6, "epoch": 2, "shapes": [[8, 4], [8]], "same_as_flop_count": True,
    }  # fmt: skip
    # the CPU trace's roofline points: host self time, addmm at the counted batch's shapes
    roof = perfsuite.trace(run.run_dir).roofline
    addmm = roof[roof["op"] == "aten::addmm"]
    assert set(roof["time_kind"]) == {"host"} and (roof["time_s"] > 0).all()
    assert addmm["flops_per_call"].tolist() == [2 * 8 * 4 * 3 + 8 * 3]
    # no peaks measured: no lost time, and each row says why instead of a bare NaN
    ops = perfsuite.open(run.run_dir).ops
    joined = ops[ops["status"] == "joined"]
    assert len(joined) and joined["lost_time_s"].isna().all()
    assert {why.split(":")[0] for why in joined["lost_time_why"]} == {"no roof"}
    # reached in epoch 1 of 10, whose last batch is partial: the late window replays call 2
    model, opt = _tiny()
    step = _stepper(model, opt)
    with _track(tmp_path, model, opt, capture=True, epochs=10) as run:
        for x, y in run.epoch(_sized([8, 8, 3])):
            run.step(step, x, y)
        run.evaluate(top1=1.0)
    tl = load_record(run.run_dir)["timeline"]
    assert (tl["batch"]["call"], tl["batch"]["shapes"]) == (2, [[8, 4], [8]])


def _hand_sgd_run(tmp_path, capture: bool, with_optimizer: bool | str):
    """Plain SGD written by hand (optimizer=None), or a momentum optimizer of "another
    library" (not torch.optim; it has state_dict/load_state_dict)."""

    class Momentum:
        def __init__(self, params, lr=0.1, mu=0.9):
            self.params, self.lr, self.mu = list(params), lr, mu
            self.bufs = [torch.zeros_like(p) for p in self.params]

        @torch.no_grad()
        def step(self):
            for p, b in zip(self.params, self.bufs, strict=True):
                b.mul_(self.mu).add_(p.grad)
                p.sub_(self.lr * b)

        def state_dict(self):
            return {"bufs": [b.clone() for b in self.bufs]}

        def load_state_dict(self, state):
            for b, saved in zip(self.bufs, state["bufs"], strict=True):
                b.copy_(saved)

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = Momentum(model.parameters()) if with_optimizer is True else None

    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        model.zero_grad()
        loss.backward()
        if opt is not None:
            opt.step()
        elif with_optimizer == "data":  # word_language_model's update: grad mode stays on
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-0.1)
        else:
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
        return loss

    with _track(tmp_path, model, opt, capture=capture, epochs=2) as run:
        for _ in range(2):
            for x, y in run.epoch(_sized([8, 8, 8])):
                run.step(step, x, y)
    return load_record(run.run_dir), [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize(
    "with_optimizer", [False, "data", True], ids=["by-hand", "p.data", "other-library"]
)
def test_a_step_without_a_torch_optimizer_is_counted_whole(tmp_path, with_optimizer):
    rec, weights = _hand_sgd_run(tmp_path, True, with_optimizer)
    _, plain = _hand_sgd_run(tmp_path, False, with_optimizer)
    for a, b in zip(weights, plain, strict=True):
        assert torch.equal(a, b)  # the detours restored the model and the optimizer's state
    assert not [f for f in rec["flags"] if "no model" in f or f.startswith("no FLOP count")]
    phases = {}
    for r in rec["work"]["per_op"]:
        phases.setdefault(r["phase"], {})[r["op"]] = r["flops"]
    # the update, 15 parameter elements: by hand mul + sub = 2 each; momentum mul_, add_,
    # mul (lr * b), sub_ = 4 each; grad mode is off there and it follows the backward
    per = {False: 2, "data": 2, True: 4}[with_optimizer]  # add_ with alpha: 2
    assert sum(phases["optimizer"].values()) == per * 15
    # forward: addmm 2*8*4*3 + 8*3 bias adds, then the loss; none of the update in it
    assert phases["forward"]["aten::addmm"] == 2 * 8 * 4 * 3 + 8 * 3
    update_ops = set(phases["optimizer"])
    assert not update_ops & set(phases["forward"]) and not update_ops & set(phases["backward"])
    assert rec["timeline"]["ops"]


def test_torch_optimizer_ops_are_labelled_optimizer(tmp_path):
    """Inside optimizer.step(), wherever the step calls it (here first: the previous step's
    gradients are applied before this one's backward)."""
    model, opt = _tiny()

    def step(x, y):
        if model.weight.grad is not None:
            opt.step()
            opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    with _track(tmp_path, model, opt, capture=True, epochs=1) as run:
        for x, y in run.epoch(_batches(4)):
            run.step(step, x, y)
    per_op = load_record(run.run_dir)["work"]["per_op"]
    update = {r["op"]: r["flops"] for r in per_op if r["phase"] == "optimizer"}
    assert sum(update.values()) == 2 * 15  # SGD without momentum: p - lr * g per element
    assert not [
        r for r in per_op if r["phase"] == "forward" and r["op"].startswith("aten::_foreach")
    ]


def test_an_epoch_left_after_its_last_batch_is_whole(tmp_path):
    model, opt = _tiny()
    step = _stepper(model, opt)
    with _track(tmp_path, model, opt) as run:
        batches = _batches(3)
        for i, (x, y) in enumerate(run.epoch(batches)):
            run.step(step, x, y)
            if i == len(batches) - 1:
                break  # after the last batch: nothing was left out
        for i, (x, y) in enumerate(run.epoch(batches)):
            run.step(step, x, y)
            if i == 1:
                break
    flags = load_record(run.run_dir)["flags"]
    assert _flag(flags, "ended early").startswith("epoch 2 ended early after 2 steps")


QUIET = """
import os, sys, torch, perfsuite
from perfsuite.runner.engine.profile_window import ProfileWindow

real_step = ProfileWindow.step
def chatty_step(self):  # stands in for Kineto's own lines, written by C++ to fd 2
    os.write(2, b"USDT: profiler_step\\n")
    real_step(self)
ProfileWindow.step = chatty_step

m = torch.nn.Linear(4, 3)
o = torch.optim.SGD(m.parameters(), lr=0.1)
def step(x, y):
    loss = torch.nn.functional.cross_entropy(m(x), y)
    o.zero_grad(); loss.backward(); o.step()
    return loss
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
q = {"measure_peaks": False}  # no roof micro-benchmarks: not what is tested
with perfsuite.track("q", threshold=0.9, model=m, optimizer=o, out=sys.argv[1], **q) as run:
    for xb, yb in run.epoch([(x, y)] * 4):
        run.step(step, xb, yb)
    run.evaluate(top1=0.1)
print(run.run_dir)
"""


def test_the_profilers_lines_go_to_the_runs_log_not_the_users_terminal(tmp_path):
    script = tmp_path / "quiet.py"
    script.write_text(QUIET)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "runs")],
        capture_output=True, text=True, cwd=ROOT, timeout=600, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "USDT" not in proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    rec = load_record(run_dir)
    assert rec["timeline"]["ops"] and rec["sidecars"]["log"] == "perfsuite.log"
    assert (run_dir / "perfsuite.log").read_text().count("USDT: profiler_step") == 5  # 1+1+3


def _draws(tmp_path, **kw) -> list[float]:
    """What a loop that draws from the global RNG (a dropout mask in the step, a shuffle
    after it) draws, under `perfsuite.track` with `kw`."""
    model, opt = _tiny()
    draws: list[float] = []

    def step():  # replayed by the FLOP count and the window, which restore the RNG after
        torch.rand(1)
        opt.step()

    with _track(tmp_path, model, opt, threshold=1.0, epochs=2, **kw) as run:
        for _ in range(2):
            for _ in run.epoch(range(3)):
                run.step(step)
                draws.append(float(torch.rand(1)))
            run.evaluate(top1=0.0)
    return draws


def test_roofs_measured_mid_run_leave_the_users_random_draws_alone(tmp_path, private_cache):
    """track measures roofs during epoch 1: its benchmarks' random operands come from a
    generator of their own, so the loop draws exactly what it draws without perfsuite."""
    off = _draws(tmp_path / "off", capture=False)
    on = _draws(tmp_path / "on", capture=True, measure_peaks=True)
    assert on == off and len(on) == 6


def test_a_leading_dimension_that_is_not_the_declared_batch_is_flagged(tmp_path):
    """A sequence-first (T, B) input: the declared batch size and the counted samples differ,
    and the record says so instead of counting sequence positions silently."""
    model, opt = _tiny()
    x, y = torch.randn(5, 2, 4), torch.randint(0, 3, (5, 2))  # T=5, B=2

    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    with _track(tmp_path / "a", model, opt, batch_size=2) as run:
        for x_, y_ in run.epoch([(x, y)] * 3):
            run.step(step, x_, y_)
        run.evaluate(top1=1.0)
    flags = load_record(run.run_dir)["flags"]
    assert "track(batch_size=2)" in _flag(flags, "leading dimension (5)")
    with _track(tmp_path / "b", model, opt, batch_size=2) as run:
        for x_, y_ in run.epoch([(x, y)] * 3):
            run.step(step, x_, y_, batch_size=2)
        run.evaluate(top1=1.0)
    assert not any("leading dimension" in f for f in load_record(run.run_dir)["flags"])
