"""The record-class fast preset (airbench_muon), its switches, and presets carrying precision."""

from __future__ import annotations

import copy

import pytest
import torch

from perfsuite.runner.frameworks.assemble import prepare_recipe
from perfsuite.study.plan import plan
from perfsuite.study.spec import StudySpec
from perfsuite.workloads import get_workload
from perfsuite.workloads.cifar10.airbench.muon import MuonSGD, muon_from_recipe
from perfsuite.workloads.cifar10.airbench.net import net_from_recipe
from perfsuite.workloads.cifar10.airbench.optim import fast_loss
from perfsuite.workloads.cifar10.airbench.presets import PRESETS as FAST_RECIPES
from perfsuite.workloads.cifar10.airbench.workload import AirbenchWorkload, uses_muon
from perfsuite.workloads.newton_schulz import newton_schulz
from perfsuite.workloads.switches import parse_switches, resolve_preset


def _switches(*items: str):
    wl = get_workload("cifar10")
    return parse_switches(list(items), wl.switches, "cifar10")


# -- presets carry their precision and compilation ----------------------------------------------


def test_gpu_resolution_of_airbench_is_bf16_channels_last():
    s = _switches()
    entry = resolve_preset(s, FAST_RECIPES["airbench"].extra, "cuda:0")
    assert (s.precision, s.channels_last, s.compile) == ("bf16", True, None)
    assert entry["precision"] == "bf16" and entry["channels_last"] is True
    s = _switches()
    resolve_preset(s, FAST_RECIPES["airbench_muon"].extra, "cuda")
    assert (s.precision, s.channels_last, s.compile) == ("bf16", True, "reduce-overhead")


def test_cpu_resolution_falls_back_and_says_why():
    s = _switches()
    entry = resolve_preset(s, FAST_RECIPES["airbench_muon"].extra, "cpu")
    assert s.precision is None and s.compile is None and s.channels_last is True
    assert entry["precision"] == "fp32" and entry["compile"] is None
    assert entry["tuned"] == {
        "precision": "bf16",
        "compile": "reduce-overhead",
        "channels_last": True,
    }
    why = " ".join(entry["why"])
    assert "fp32" in why and "for GPUs" in why and "compile off" in why


def test_a_switch_overrides_the_preset():
    s = _switches("fp32", "compile=off")
    entry = resolve_preset(s, FAST_RECIPES["airbench_muon"].extra, "cuda")
    assert s.precision is None and s.compile is None
    assert any("given by a switch" in w for w in entry["why"])
    s = _switches("fp16")
    resolve_preset(s, FAST_RECIPES["airbench"].extra, "cuda")
    assert s.precision == "fp16"
    with pytest.raises(ValueError, match="exclude each other"):
        _switches("bf16", "fp32")
    assert resolve_preset(_switches(), {"width": 1.0}, "cuda") == {}  # nothing carried


def test_cpu_run_record_says_which_precision_ran(tmp_path):
    from perfsuite.runner.options import RunOptions
    from perfsuite.runner.routes.run import run_workload

    opts = RunOptions(
        workload="cifar10",
        recipe="airbench",
        synthetic=True,
        epochs=1,
        batch_size=16,
        overrides=["train_limit=32", "width=0.125", "whiten_images=32"],
        capture=False,
        inference_repeats=0,
        out=str(tmp_path),
        progress=False,
    )
    import json

    record = json.loads((run_workload(opts) / "run.json").read_text())
    preset = record["switches"]["preset"]
    assert preset["device"] == "cpu" and preset["precision"] == "fp32"
    assert preset["tuned"]["precision"] == "bf16"
    assert record["switches"]["effect"]["autocast"] is None  # fp32 really ran
    assert record["switches"]["effect"]["parameter_memory_format"] == "channels_last"


# -- Muon -------------------------------------------------------------------------------------


def test_newton_schulz_flattens_the_spectrum():
    torch.manual_seed(0)
    g = torch.randn(16, 40) @ torch.diag(torch.logspace(0, 3, 40))  # condition ~1000
    s = torch.linalg.svdvals(newton_schulz(g, steps=5))
    assert s.max() < 1.3 and s.min() > 0.6  # all directions near 1, none dominant
    assert newton_schulz(g.T, steps=5).shape == (40, 16)
    with pytest.raises(ValueError, match="matrix"):
        newton_schulz(torch.ones(3), steps=3)


def test_muon_groups_and_step():
    torch.manual_seed(0)
    recipe = copy.deepcopy(FAST_RECIPES["airbench_muon"])
    recipe.extra["width"] = 0.125
    net = net_from_recipe(recipe)
    opt, sched = muon_from_recipe(net, recipe, steps_per_epoch=4)
    assert isinstance(opt, MuonSGD)
    rules = [g["rule"] for g in opt.param_groups]
    assert rules == ["sgd", "sgd", "sgd", "muon"]
    filters = opt.param_groups[-1]["params"]
    assert all(p.ndim == 4 for p in filters) and len(filters) == 6  # 2 convs x 3 groups
    assert all(p is not net.whiten.weight for p in filters)  # fixed by whitening
    x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    fast_loss(net(x), y).backward()
    opt.step()
    sched.step()
    w = filters[0]
    assert float(w.detach().norm()) == pytest.approx(w.shape[0] ** 0.5, rel=0.05)  # renormalized
    # whitening bias decays to 0 over 3 epochs (12 steps), the rest over 8 epochs (32)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.053 * (1 - 1 / 12))
    assert opt.param_groups[-1]["lr"] == pytest.approx(0.24 * (1 - 1 / 32))


def test_airbench_muon_trains_at_toy_size():
    """Sixteen examples of two classes that differ in colour: the preset's pieces (whitening,
    Muon on the filters, SGD on the rest, SiLU) must learn them from chance in 10 steps (the
    loss floor is high: label smoothing 0.2 and the small head scale)."""
    torch.manual_seed(0)
    recipe = copy.deepcopy(FAST_RECIPES["airbench_muon"])
    recipe.extra.update(width=0.125)
    recipe.epochs = 6
    net = net_from_recipe(recipe)
    assert isinstance(net.groups[0].act, torch.nn.SiLU)
    x = torch.randn(16, 3, 32, 32) * 0.3
    y = torch.arange(16) % 2
    x[y == 1, 0] += 1.0
    from perfsuite.workloads.cifar10.airbench.net import init_whitening

    init_whitening(net.whiten, x)
    opt, sched = muon_from_recipe(net, recipe, steps_per_epoch=5)
    losses = []
    for _ in range(10):
        loss = fast_loss(net(x), y) / len(y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss))
    assert losses[-1] < 0.9 * losses[0]
    with torch.no_grad():
        assert float((net(x).argmax(1) == y).float().mean()) >= 0.9


def test_muon_switches_lesion():
    spec = StudySpec(kind="lesion", workload="cifar10", options=["muon", "activation=silu"])
    wl = get_workload("cifar10")
    configs = plan(spec, wl.switches, "cifar10")
    assert [c.name for c in configs] == ["full", "-muon", "-activation=silu"]
    extras = {}
    for c in configs:
        s = parse_switches(list(c.switches), wl.switches, "cifar10")
        r = prepare_recipe(wl, "cpu", "airbench", [], None, None, s)
        extras[c.name] = (r.extra["muon"], r.extra["activation"])
    assert extras == {
        "full": (True, "silu"),
        "-muon": (False, "silu"),
        "-activation=silu": (True, "gelu"),
    }
    # and off the record preset: --switch muon=off goes back to SGD + Lookahead
    s = _switches("muon=off")
    r = prepare_recipe(wl, "cpu", "airbench_muon", [], None, None, s)
    assert r.extra["muon"] is False and not uses_muon(r)


def test_muon_needs_the_fast_family():
    wl = get_workload("cifar10")
    s = _switches("muon")
    r = prepare_recipe(wl, "cpu", "dawnbench", [], None, None, s)
    with pytest.raises(ValueError, match="fast family"):
        wl.configure(r)


def test_compiled_run_keeps_the_whitening_bias_graph():
    """Flipping requires_grad after epoch 3 would recompile a compiled step inside the clock:
    compiled, the freeze is skipped (Muon's schedule has the bias's rate at 0 by then)."""
    from types import SimpleNamespace

    recipe = copy.deepcopy(FAST_RECIPES["airbench_muon"])
    recipe.extra.update(width=0.125, whiten_images=8)
    net = net_from_recipe(recipe)
    data = torch.randn(8, 3, 32, 32)
    source = SimpleNamespace(train_x=data)
    eager = SimpleNamespace(module=net, model=net, recipe=recipe)
    AirbenchWorkload().on_epoch_start(eager, source, 4)
    assert not net.whiten.bias.requires_grad
    compiled = SimpleNamespace(module=net, model=object(), recipe=recipe)
    AirbenchWorkload().on_epoch_start(compiled, source, 1)
    assert net.whiten.bias.requires_grad
    AirbenchWorkload().on_epoch_start(compiled, source, 4)
    assert net.whiten.bias.requires_grad
