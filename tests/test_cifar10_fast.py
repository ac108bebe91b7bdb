"""The fast CIFAR-10 recipe's pieces: network shapes, whitening, Lookahead, TTA, schedule, FLOPs."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from perfsuite.workloads.cifar10.airbench.net import (
    build_fast_net,
    init_whitening,
    net_from_recipe,
    parse_widths,
    patch_moments,
    set_whitening_bias_trainable,
)
from perfsuite.workloads.cifar10.airbench.optim import (
    Lookahead,
    fast_loss,
    lookahead_from_recipe,
    make_fast_optimizer,
    optimizer_from_recipe,
    triangle,
)
from perfsuite.workloads.cifar10.airbench.presets import PRESETS as FAST_RECIPES
from perfsuite.workloads.cifar10.airbench.views import (
    TTA_FORWARDS,
    alternating_flip,
    random_translate,
    tta_logits,
)


def test_shapes_and_frozen_parts():
    torch.manual_seed(0)
    net = build_fast_net((16, 32, 48))
    assert net.whiten.out_channels == 24 and net.whiten.kernel_size == (2, 2)
    assert net(torch.randn(3, 3, 32, 32)).shape == (3, 10)
    assert net.whiten(torch.randn(1, 3, 32, 32)).shape == (1, 24, 31, 31)
    assert not net.whiten.weight.requires_grad and net.whiten.bias.requires_grad
    bn = net.groups[1].norm2
    assert (bn.momentum, bn.eps, bn.weight.requires_grad) == (0.4, 1e-12, False)
    assert net.head.scale == pytest.approx(1 / 9)
    # partial identity init: the first min(cin, cout) filters of conv1 in group 0 are diracs
    w = net.groups[0].conv1.weight.detach()  # 16 x 24: 16 identity filters
    assert float(w[3, 3, 1, 1]) == 1.0 and float(w[3, 3].abs().sum()) == 1.0
    assert float(w[3, 4].abs().sum()) == 0.0
    with pytest.raises(ValueError, match="widths"):
        build_fast_net((64, 256))


def test_parse_widths():
    assert parse_widths("64,256,256") == (64, 256, 256)
    assert parse_widths("48-192-192") == (48, 192, 192)
    with pytest.raises(ValueError, match="'widths'"):
        parse_widths("64,x,2")
    with pytest.raises(ValueError, match="three positive"):
        parse_widths("64,256")


def _structured_images(n: int = 64) -> torch.Tensor:
    """Smooth, channel-correlated, off-centre images: a patch covariance far from identity."""
    g = torch.Generator().manual_seed(1)
    noise = torch.randn(n, 3, 36, 36, generator=g, dtype=torch.float64)
    blur = torch.tensor([1.0, 3.0, 1.0], dtype=torch.float64)
    k = (blur[:, None] * blur[None, :] / 25).expand(3, 1, 3, 3)
    smooth = F.conv2d(noise, k, groups=3)[..., :32, :32]
    mix = torch.tensor([[1.0, 0.6, 0.3], [0.0, 1.0, 0.5], [0.0, 0.0, 0.8]], dtype=torch.float64)
    x = torch.einsum("oc,nchw->nohw", mix, smooth) * 3.0 + 0.7
    return x.float()


def test_whitening_makes_patch_covariance_identity():
    x = _structured_images()
    _, before, _ = patch_moments(x, 2)
    off = before - torch.diag(torch.diag(before))
    assert float(off.abs().max()) > 0.5  # strongly correlated before
    assert float(torch.diag(before).max() / torch.diag(before).min()) < 3
    conv = nn.Conv2d(3, 24, 2, bias=True)
    lam = init_whitening(conv, x, eps=1e-9)
    assert torch.all(lam[:-1] >= lam[1:])  # largest first
    with torch.no_grad():
        y = conv(x).double()
    flat = y.permute(0, 2, 3, 1).reshape(-1, 24)
    assert float(flat.mean(0).abs().max()) < 1e-4  # bias centres the outputs
    cov = torch.cov(flat[:, :12].T)
    assert float((cov - torch.eye(12, dtype=cov.dtype)).abs().max()) < 2e-3
    assert torch.equal(conv.weight[12:], -conv.weight[:12])
    # eps damps small directions: lam / (lam + eps) on the diagonal
    init_whitening(conv, x, eps=float(lam[-1]))
    with torch.no_grad():
        flat = conv(x).double().permute(0, 2, 3, 1).reshape(-1, 24)
    assert float(torch.cov(flat[:, 11:12].T)) == pytest.approx(0.5, abs=2e-3)


def test_whitening_rejects_wrong_conv():
    with pytest.raises(ValueError, match="conv"):
        init_whitening(nn.Conv2d(3, 16, 2), torch.randn(2, 3, 8, 8))


def test_lookahead_math():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    look = Lookahead(10, start_step=2, every=2, base=0.9, power=1.0)
    assert not look.update(model, 1)  # before start
    w0 = model[0].weight.detach().clone()
    assert look.update(model, 2)  # EMA initialized to the network, network unchanged
    assert torch.equal(model[0].weight, w0)
    with torch.no_grad():
        model[0].weight.add_(1.0)
        model[1].running_mean.fill_(2.0)
    w1 = model[0].weight.detach().clone()
    assert not look.update(model, 3)  # off-period step
    assert torch.equal(model[0].weight, w1)
    rho = 0.9**2 * (4 / 10) ** 1.0
    assert look.decay(4) == pytest.approx(0.324)
    assert look.update(model, 4)
    torch.testing.assert_close(model[0].weight.detach(), rho * w0 + (1 - rho) * w1)
    torch.testing.assert_close(model[1].running_mean, torch.full((2,), (1 - rho) * 2.0))
    assert int(model[1].num_batches_tracked) == 0  # integer state is not averaged
    ema = model[0].weight.detach().clone()
    with torch.no_grad():
        model[0].weight.mul_(5.0)
    look.sync(model)  # network back to the average
    torch.testing.assert_close(model[0].weight.detach(), ema)


class _Counting(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x)


def test_tta_forward_counts_and_flip_invariance():
    torch.manual_seed(0)
    net = _Counting(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(5)))
    x = torch.randn(2, 3, 8, 8)
    net(x)
    for level, n in TTA_FORWARDS.items():
        net.calls = 0
        tta_logits(net, x, level)
        assert net.calls == n
    assert not torch.allclose(tta_logits(net, x, 0), tta_logits(net, x.flip(-1), 0))
    assert torch.equal(tta_logits(net, x, 1), tta_logits(net, x.flip(-1), 1))
    with pytest.raises(ValueError, match="tta level"):
        tta_logits(net, x, 3)


def test_tta_level2_views_and_weights():
    """A linear model makes the TTA output the model of the weighted average of the views,
    built here by explicit indexing: shift up-left reads row/col i-1 (reflect at 0 -> 1)."""
    torch.manual_seed(0)
    h = 6
    x = torch.randn(1, 3, h, h, dtype=torch.float64)
    v = torch.randn(3 * h * h, dtype=torch.float64)

    def model(t):
        return (t.flatten(1) @ v)[:, None]

    ul_idx = torch.tensor([1, *list(range(h - 1))])
    dr_idx = torch.tensor([*list(range(1, h)), h - 2])
    ul = x[:, :, ul_idx][:, :, :, ul_idx]
    dr = x[:, :, dr_idx][:, :, :, dr_idx]
    views = [x, x.flip(-1), ul, ul.flip(-1), dr, dr.flip(-1)]
    weights = [0.25, 0.25, 0.125, 0.125, 0.125, 0.125]
    expected = model(sum(w * t for w, t in zip(weights, views, strict=True)))
    torch.testing.assert_close(tta_logits(model, x, 2), expected)


def _opt_model() -> nn.Module:
    return build_fast_net((8, 8, 8))


def test_schedule_values():
    assert triangle(0, 100, 0.2, 0.23, 0.07) == pytest.approx(0.2)
    assert triangle(23, 100, 0.2, 0.23, 0.07) == pytest.approx(1.0)
    assert triangle(11, 100, 0.2, 0.23, 0.07) == pytest.approx(0.2 + 0.8 * 11 / 23)
    assert triangle(100, 100, 0.2, 0.23, 0.07) == pytest.approx(0.07)
    assert triangle(150, 100, 0.2, 0.23, 0.07) == pytest.approx(0.07)
    assert triangle(50, 100, 0.2, 0.23, 0.07) == pytest.approx(1 - 0.93 * 27 / 77)
    net = _opt_model()
    opt, sched = make_fast_optimizer(net, 2, 50)
    base = 11.5 / (1024 * (1 + 1 / 0.15))
    assert base == pytest.approx(0.00146484, rel=1e-5)
    bn_group, other = opt.param_groups
    assert bn_group["lr"] == pytest.approx(64 * base * 0.2)
    assert other["lr"] == pytest.approx(base * 0.2)
    for _ in range(23):
        opt.step()
        sched.step()
    assert other["lr"] == pytest.approx(base)
    for _ in range(77):
        opt.step()
        sched.step()
    assert other["lr"] == pytest.approx(base * 0.07)


def test_optimizer_groups_and_decoupled_decay():
    net = _opt_model()
    opt, _ = make_fast_optimizer(net, 1, 10, batch_size=512)
    bn_group, other = opt.param_groups
    assert len(bn_group["params"]) == 6  # BN shifts only: scales are frozen
    assert all(p.ndim == 1 for p in bn_group["params"])
    ids = {id(p) for p in other["params"]}
    assert id(net.whiten.bias) in ids and id(net.whiten.weight) not in ids
    assert len(other["params"]) == 1 + 6 + 1  # whitening bias, 6 convs, head
    # same decay per step in both groups at the peak lr: lr * wd = 0.0153 * 512 / (1024 * 7.667)
    # (the schedule scales it with the lr, like the step size)
    step_decay = 0.0153 * 512 / (1024 * (1 + 1 / 0.15))
    assert step_decay == pytest.approx(9.978e-4, rel=1e-4)
    for g in opt.param_groups:
        assert g["initial_lr"] * g["weight_decay"] == pytest.approx(step_decay)
        assert g["nesterov"] and g["momentum"] == 0.85
    _, sched = make_fast_optimizer(net, 9.9, 48)
    assert sched.lr_lambdas[0](math.ceil(9.9 * 48)) == pytest.approx(0.07)


def test_frozen_whitening_bias_gets_no_update():
    torch.manual_seed(0)
    net = _opt_model()
    opt, _ = make_fast_optimizer(net, 1, 10, batch_size=4)
    x, y = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))
    set_whitening_bias_trainable(net, False)
    before = net.whiten.bias.detach().clone()
    opt.zero_grad(set_to_none=True)
    fast_loss(net(x), y).backward()
    opt.step()
    assert torch.equal(net.whiten.bias, before)
    set_whitening_bias_trainable(net, True)
    opt.zero_grad(set_to_none=True)
    fast_loss(net(x), y).backward()
    opt.step()
    assert not torch.equal(net.whiten.bias, before)


def test_fast_loss_is_summed():
    logits, y = torch.randn(8, 10), torch.randint(0, 10, (8,))
    mean = F.cross_entropy(logits, y, label_smoothing=0.2)
    assert float(fast_loss(logits, y)) == pytest.approx(8 * float(mean), rel=1e-6)


def test_augmentation():
    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).view(2, 3, 4, 4)
    mask = torch.tensor([True, False])
    e0, e1 = alternating_flip(x, mask, 0), alternating_flip(x, mask, 1)
    assert torch.equal(e0[0], x[0].flip(-1)) and torch.equal(e0[1], x[1])
    assert torch.equal(e1[0], x[0]) and torch.equal(e1[1], x[1].flip(-1))
    assert torch.equal(alternating_flip(x, mask, 2), e0)
    assert torch.equal(random_translate(x, 0, None), x)
    g = torch.Generator().manual_seed(0)
    big = torch.randn(64, 3, 8, 8)
    out = random_translate(big, 2, g)
    padded = F.pad(big, (2, 2, 2, 2), mode="reflect")
    for i in range(64):
        windows = [padded[i, :, a : a + 8, b : b + 8] for a in range(5) for b in range(5)]
        assert any(torch.equal(out[i], w) for w in windows)
    assert not torch.equal(out, big)
    # the GPU's sync-free gather gives the same pixels from the same draws
    again = random_translate(big, 2, torch.Generator().manual_seed(0), gather=True)
    assert torch.equal(again, out)
    one = [random_translate(big, 1, torch.Generator().manual_seed(5), gather=g) for g in (1, 0)]
    assert torch.equal(*one)


def test_cpu_preset_flops_match_hand_count():
    """The counter's forward FLOPs for one conv layer of the CPU preset network at its batch
    size: group 0 conv1 maps 24 -> 64 channels, 3x3, on the 31x31 map after the 2x2 whitening
    conv: 2 * N * 64 * 31 * 31 * 24 * 9."""
    from perfsuite.flops import count_model

    recipe = FAST_RECIPES["cpu-fast"]
    n = recipe.batch_size
    net = net_from_recipe(recipe)
    res = count_model(net, (n, 3, 32, 32), track_modules=True)
    rows = {m.module: m.flops for m in res.per_module}
    assert rows["FastNet.groups.0.conv1"] == 2 * n * 64 * 31 * 31 * 24 * 9
    # all seven convolutions (whitening: 12 MACs per output)
    macs = 31 * 31 * (24 * 12 + 64 * 24 * 9) + 15 * 15 * (64 * 64 * 9 + 256 * 64 * 9)
    macs += 7 * 7 * (256 * 256 * 9 * 2) + 3 * 3 * 256 * 256 * 9
    assert res.flops_of("convolution") == 2 * n * macs + n * 24 * 31 * 31  # + whitening bias


def test_recipes_build():
    for name, recipe in FAST_RECIPES.items():
        net = net_from_recipe(recipe)
        _opt, sched = optimizer_from_recipe(net, recipe, 10)
        look = lookahead_from_recipe(recipe, 10)
        assert look.start_step == 30 and look.every == 5, name
        assert sched.lr_lambdas[0](0) == pytest.approx(0.2)
        assert recipe.extra["tta_level"] == 2 and recipe.label_smoothing == 0.2


# ----------------------------------------------------------------------------------------------
# The airbench family wired into the cifar10 workload seam (cifar10/airbench/workload.py)
# ----------------------------------------------------------------------------------------------

TINY = ["train_limit=256", "widths=8,16,16", "whiten_images=64", "tta_level=0"]


def _fast_state(overrides=(), switch_items=()):
    """A cifar10 run's TrainState with the default CPU recipe (cpu-fast), tiny, synthetic."""
    from perfsuite.backends import torch_backend
    from perfsuite.runner.frameworks.assemble import build_state, prepare_recipe
    from perfsuite.workloads import get_workload
    from perfsuite.workloads.switches import parse_switches

    wl = get_workload("cifar10")
    sw = parse_switches(list(switch_items), wl.switches, wl.name)
    recipe = prepare_recipe(wl, "cpu", None, [*TINY, *overrides], 2, 64, sw)
    wl.configure(recipe)
    torch.manual_seed(0)
    data = wl.synthetic_data("cpu", seed=0)
    model = wl.build_model(recipe)
    spe = wl.steps_per_epoch(data, recipe)
    return wl, data, build_state(wl, recipe, model, spe, torch_backend("cpu"), sw)


def test_fast_family_trains_through_the_runner(tmp_path, monkeypatch):
    """Default CPU recipe (cpu-fast) on tiny synthetic data via the real runner, capture on
    (warm-up, FLOP count and profile window all run the fast step in detours)."""
    from perfsuite.record import load_record
    from perfsuite.runner import RunOptions, run_workload

    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path / "cache"))
    opts = RunOptions(
        workload="cifar10",
        out=str(tmp_path / "runs"),
        synthetic=True,
        epochs=2,
        batch_size=64,
        threshold=0.99,
        overrides=[*TINY, "lookahead_start_epoch=0", "lookahead_every=2"],
        progress=False,
        measure_peaks=False,
        inference_repeats=2,
        profile_steps=1,
        profile_seconds=0.0,  # a window of exactly 1 step: nothing here reads its length
    )
    rec = load_record(run_workload(opts))
    assert rec["status"] == "not_reached"
    assert rec["model"] == "airbench-style fast net, widths 8,16,16"
    values = rec["config"]["recipe_values"]
    assert values["extra"]["family"] == "fast" and values["batch_size"] == 64
    assert rec["extra"]["steps_per_epoch"] == 4
    assert [e["epoch"] for e in rec["evaluations"]] == [1, 2]
    # the mean per-example loss (summed loss / 64), near ln(10) on random labels
    assert 1.5 < rec["evaluations"][0]["train_loss"] < 3.5
    assert rec["switches"]["effect"]["parameter_memory_format"] == "channels_last"
    assert rec["work"]["flops_per_step"]["value"] > 0


def test_whitening_is_initialized_in_epoch_one_and_its_bias_freezes():
    wl, data, state = _fast_state()
    conv = state.module.whiten
    before = conv.weight.detach().clone()
    wl.on_epoch_start(state, data, 1)
    assert not torch.equal(conv.weight, before)
    # the first 24 outputs whiten the 2x2 patches of the images used: covariance ~ identity
    images = data.train_batches(64, torch.Generator().manual_seed(0))
    x = torch.cat([b.inputs[0] for b in images])[:64]
    with torch.no_grad():
        out = conv(x)[:, :12].permute(0, 2, 3, 1).reshape(-1, 12).double()
    cov = torch.cov(out.T)
    assert torch.allclose(cov, torch.eye(12, dtype=torch.float64), atol=0.02)
    assert conv.bias.requires_grad
    wl.on_epoch_start(state, data, 3)
    assert conv.bias.requires_grad  # trains for whiten_bias_epochs = 3
    wl.on_epoch_start(state, data, 4)
    assert not conv.bias.requires_grad and conv.bias.grad is None
    after = conv.weight.detach().clone()
    wl.on_epoch_start(state, data, 2)
    assert torch.equal(conv.weight, after)


def test_detour_leaves_lookahead_and_weights_exactly_as_before():
    from perfsuite.workloads.state import detour

    wl, data, state = _fast_state(["lookahead_start_epoch=0", "lookahead_every=1"])
    wl.on_epoch_start(state, data, 1)
    batches = list(data.train_batches(64, torch.Generator().manual_seed(1)))
    for b in batches[:2]:
        wl.train_step(state, b)
    la = state.optimizer.lookahead
    assert state.extras["lookahead"] is la and la.steps == 2 and la.ema is not None
    ema = {k: v.clone() for k, v in la.ema.items()}
    weights = {k: v.clone() for k, v in state.module.state_dict().items()}
    with detour(state):
        for b in batches[2:4]:
            wl.train_step(state, b)
        assert la.steps == 4
        assert any(not torch.equal(ema[k], v) for k, v in la.ema.items())  # it did move
    assert la.steps == 2
    assert all(torch.equal(ema[k], v) for k, v in la.ema.items())
    assert all(torch.equal(weights[k], v) for k, v in state.module.state_dict().items())
    # and training continues from there exactly as without the detour
    loss = wl.train_step(state, batches[2])
    assert la.steps == 3 and torch.isfinite(loss)


def test_fast_step_returns_mean_loss_and_lookahead_syncs_at_the_last_epoch():
    wl, data, state = _fast_state(["lookahead_start_epoch=0", "lookahead_every=1"])
    wl.on_epoch_start(state, data, 1)
    b = next(data.train_batches(64, torch.Generator().manual_seed(2)))
    with torch.no_grad():
        summed = fast_loss(state.module(b.inputs[0]), b.target, 0.2)
    loss = wl.train_step(state, b)
    assert float(loss) == pytest.approx(float(summed) / 64, rel=1e-5)
    la = state.optimizer.lookahead
    with torch.no_grad():
        for p in state.module.parameters():
            p.add_(1.0)
    wl.on_epoch_end(state, data, 1)  # not the last epoch (epochs=2): no copy-back
    assert not torch.equal(state.module.head.linear.weight, la.ema["head.linear.weight"])
    wl.on_epoch_end(state, data, 2)
    assert torch.equal(state.module.head.linear.weight, la.ema["head.linear.weight"])


def test_fast_source_alternates_flips_and_translate_pads_itself():
    from perfsuite.workloads.cifar10.airbench.workload import FastCifarSource

    x = torch.randn(8, 3, 32, 32)
    y = torch.arange(8)
    src = FastCifarSource(x, y, x, y, translate=0)
    g = torch.Generator().manual_seed(0)
    src.epoch = 1
    (b1,) = list(src.train_batches(8, g))
    src.epoch = 2
    (b2,) = list(src.train_batches(8, g))

    def flipped(b):
        pairs = zip(b.inputs[0], b.target, strict=True)
        return {int(t): bool(torch.equal(img, x[t].flip(-1))) for img, t in pairs}

    one, two = flipped(b1), flipped(b2)
    assert all(one[i] != two[i] for i in range(8))  # every image in the other orientation
    assert src.train_x.shape[-1] == 32  # stored unpadded
    src.translate = 2
    (b3,) = list(src.train_batches(8, g))
    assert b3.inputs[0].shape == (8, 3, 32, 32)


def test_tta_switch_off_means_level_zero():
    from perfsuite.workloads.cifar10.airbench.workload import tta_level

    wl, data, state = _fast_state(["tta_level=2"], ["tta=off"])
    assert tta_level(state.recipe) == 0
    x = data.sample(4).inputs[0]
    state.module.eval()
    with torch.no_grad():
        assert torch.equal(wl.predict(state.module, x), state.module(x))
    wl, data, state = _fast_state(["tta_level=2"])
    assert tta_level(state.recipe) == 2
