"""The fast CIFAR-10 recipe's pieces: network shapes, whitening, Lookahead, TTA, schedule, FLOPs."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from perfsuite.workloads.cifar10_fast import (
    FAST_RECIPES,
    TTA_FORWARDS,
    Lookahead,
    alternating_flip,
    build_fast_net,
    fast_loss,
    init_whitening,
    lookahead_from_recipe,
    make_fast_optimizer,
    net_from_recipe,
    optimizer_from_recipe,
    parse_widths,
    patch_moments,
    random_translate,
    set_whitening_bias_trainable,
    triangle,
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
