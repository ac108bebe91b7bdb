"""The workload contract (perfsuite/workloads/base.py `Workload`, docs/workloads.md): the
scheduler stepped as the workload declares, detours that put back what a workload keeps, and
a from-scratch example run end to end."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.workloads.base import Workload, scheduler_interval  # noqa: E402
from perfsuite.workloads.keep import Unrestorable  # noqa: E402
from perfsuite.workloads.state import TrainState, detour  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "rings_workload.py")

pytestmark = pytest.mark.usefixtures("private_cache")


def _step_lr(model):
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    return opt, torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)


class Undeclared(Workload):
    name = "undeclared"

    def make_optimizer(self, model, recipe, steps_per_epoch):
        return _step_lr(model)


class Declared(Undeclared):
    scheduler_interval = "epoch"


class Inherits(Declared):  # declaration inherited from the class that wrote make_optimizer
    pass


class RewritesUndeclared(Declared):  # a new make_optimizer below the declaration
    def make_optimizer(self, model, recipe, steps_per_epoch):
        return _step_lr(model)


def test_a_returned_scheduler_needs_the_declaration_of_the_class_that_made_it():
    sched = _step_lr(torch.nn.Linear(2, 2))[1]
    for cls in (Undeclared, RewritesUndeclared):
        with pytest.raises(ValueError) as err:
            scheduler_interval(cls(), sched)
        message = str(err.value)
        assert "\n" not in message and "scheduler_interval" in message
        assert f"{cls.__name__}.make_optimizer returns a scheduler (StepLR)" in message
    assert scheduler_interval(Declared(), sched) == "epoch"
    assert scheduler_interval(Inherits(), sched) == "epoch"
    assert scheduler_interval(Undeclared(), None) is None
    # the base make_optimizer's one-cycle schedule is per step, and so is the default
    assert Workload.scheduler_interval == "step"
    assert scheduler_interval(Workload(), sched) == "step"


def test_a_scheduler_driven_by_a_metric_or_a_bad_interval_is_refused():
    opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=1.0)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match=r"ReduceLROnPlateau\.step needs metrics"):
        scheduler_interval(Declared(), plateau)
    odd = Declared()
    odd.scheduler_interval = "batch"
    with pytest.raises(ValueError, match="must be 'step' or 'epoch', got 'batch'"):
        scheduler_interval(odd, _step_lr(torch.nn.Linear(2, 2))[1])


def _opts(tmp_path, workload, **kw):
    base = {
        "workload": workload,
        "out": str(tmp_path / "runs"),
        "progress": False,
        "inference_repeats": 0,
        "measure_peaks": False,
    }
    base.update(kw)
    return RunOptions(**base)


def test_the_runner_steps_a_per_epoch_scheduler_once_per_epoch(tmp_path):
    rec = load_record(
        run_workload(_opts(tmp_path, f"{EXAMPLE}:Rings", epochs=3, threshold=1.0, capture=False))
    )
    extra = rec["extra"]
    assert extra["scheduler_interval"] == "epoch"
    assert extra["lr_at_epoch_start"] == pytest.approx([1.0, 0.7, 0.49])


def test_the_builtin_one_cycle_schedule_still_steps_per_step(tmp_path):
    opts = _opts(tmp_path, "digits", epochs=2, batch_size=512, capture=False)
    rec = load_record(run_workload(opts))
    extra = rec["extra"]
    steps = extra["steps_per_epoch"]
    recipe = rec["config"]["recipe_values"]
    warm = max(1, int(recipe["warmup_fraction"] * 2 * steps))
    from perfsuite.workloads.base import lr_factor

    # epoch 2 starts after `steps` scheduler steps: the factor of step `steps`
    expected = recipe["lr"] * lr_factor(steps, 2 * steps, warm)
    assert extra["scheduler_interval"] == "step"
    assert extra["lr_at_epoch_start"][1] == pytest.approx(expected)


SELF_STEPPING = """
from examples_rings import Rings

class SelfStepping(Rings):
    scheduler_interval = "step"

    def train_step(self, state, batch, phase=None):
        loss = super().train_step(state, batch)
        state.scheduler.step()  # the runner steps it too: twice per step
        return loss
"""


def test_a_scheduler_stepped_by_the_workload_as_well_is_an_error(tmp_path):
    (tmp_path / "examples_rings.py").write_text(Path(EXAMPLE).read_text())
    (tmp_path / "twice.py").write_text(SELF_STEPPING)
    with pytest.raises(ValueError, match=r"stepped 94 times in epoch 1, expected 47"):
        run_workload(_opts(tmp_path, f"{tmp_path / 'twice.py'}:SelfStepping", capture=False))


# -- detours put back what a workload keeps ----------------------------------------------


class _Backend:
    class device:
        is_gpu = False

    def sync(self) -> None:
        return None


class Keeper(Workload):
    def __init__(self) -> None:
        self.steps = 0
        self.flip = False
        self.history: list[int] = []
        self.ema = torch.zeros(3)
        self.helper = type("Helper", (), {})()
        self.helper.epoch = 1


def _state(owners):
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return TrainState(model, model, opt, None, None, _Backend(), owners=owners)


def test_a_detour_puts_back_the_workloads_attributes_extras_and_rngs():
    wl = Keeper()
    source = type("Source", (), {})()
    source.epoch, source.mask = 1, None
    state = _state((wl, source))
    state.extras["count"] = 5
    state.extras["buffer"] = torch.ones(2)
    py, np_state = random.random, None
    random.seed(3)
    expected_py = random.random()
    random.seed(3)
    with detour(state):
        wl.steps += 4
        wl.flip = not wl.flip
        wl.history.append(1)
        wl.ema += 1
        wl.helper.epoch = 7
        wl.added = "new"
        source.epoch, source.mask = 3, torch.ones(2)
        state.extras["count"] = 9
        state.extras["buffer"].mul_(3)
        state.extras["new"] = 1
        random.random()
    assert (wl.steps, wl.flip, wl.history) == (0, False, [])
    assert torch.equal(wl.ema, torch.zeros(3)) and wl.helper.epoch == 1
    assert not hasattr(wl, "added")
    assert (source.epoch, source.mask) == (1, None)
    assert set(state.extras) == {"count", "buffer"} and state.extras["count"] == 5
    assert torch.equal(state.extras["buffer"], torch.ones(2))
    assert py() == expected_py and np_state is None


def test_a_detour_refuses_an_iterator_it_cannot_rewind():
    wl = Keeper()
    wl.loader_position = iter(range(10))
    state = _state((wl,))
    refused = pytest.raises(Unrestorable, match=r"Keeper\.loader_position holds an iterator")
    with refused, detour(state):
        pass


def test_a_large_tensor_changed_in_place_is_named(monkeypatch):
    from perfsuite.workloads import keep

    monkeypatch.setattr(keep, "COPY_BYTES", 8)
    wl = Keeper()
    wl.table = torch.zeros(16)
    state = _state((wl,))
    named = pytest.raises(Unrestorable, match=r"Keeper\.table: a 0 MiB tensor changed in place")
    with named, detour(state):
        wl.table.add_(1)


# -- the example, end to end through the CLI ------------------------------------------------


def test_the_from_scratch_example_runs_through_the_cli(
    tmp_path, cli_roofs_cache, monkeypatch, capsys
):
    """`perfsuite run FILE:CLASS` in-process: the command, not a child's start, is tested."""
    from perfsuite.__main__ import main

    def cli(*args: str, cache: Path) -> str:
        monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(cache))
        monkeypatch.chdir(Path(__file__).resolve().parents[1])
        capsys.readouterr()
        assert main(list(args)) == 0
        return capsys.readouterr().out

    out = tmp_path / "runs"
    stdout = cli(
        "run",
        "examples/rings_workload.py:Rings",
        "--out",
        str(out),
        "--quiet",
        "--no-peaks",
        "--threshold",
        "0.9",
        "--all-epochs",
        "--inference-limit",
        "64",
        "--profile-seconds",  # a 3-step window: 1 s of these tiny steps is 1,000 profiled steps
        "0",
        cache=cli_roofs_cache,
    )
    rec = load_record(Path(stdout.strip().splitlines()[-1]))
    assert rec["status"] == "reached"
    assert rec["task"]["workload"] == "rings" and rec["model"] == "MLP 2-64-64-3"
    assert rec["extra"]["scheduler_interval"] == "epoch"
    assert rec["extra"]["lr_at_epoch_start"] == pytest.approx([1.0, 0.7, 0.49, 0.343])
    assert [e["epoch"] for e in rec["evaluations"]] == [1, 2, 3, 4]
    assert rec["work"]["flops_per_step"]["value"] > 0
    assert rec["timeline"] and rec["sidecars"]["trace"]
    assert rec["ceilings"]["peak_flops"]["value"] == 5e12
    assert rec["inference_measurements"][0]["partial"]  # --inference-limit 64: 64 examples
    assert rec["throughput"]
