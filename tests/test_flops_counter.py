"""The live counter sees the aten ops of real forward/backward/optimizer steps and applies the
registry: hand-checked counts per family, forward and backward."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from perfsuite.flops import Cost, OpCounter, register, unregister  # noqa: E402
from perfsuite.record import validate_record  # noqa: E402


def rows(res, phase=None):
    """{op: flops} of one phase (0-FLOP copies and fills left out)."""
    out = {}
    for r in res.per_op:
        if (phase is None or r.phase == phase) and r.family != "memory":
            out[r.op] = out.get(r.op, 0) + r.flops
    return out


def run(fn, **kw):
    c = OpCounter(**kw)
    with c:
        fn(c)
    return c.result()


def test_conv_forward_and_backward():
    conv = nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)

    def step(c):
        with c.phase("forward"):
            y = conv(x)
        with c.phase("backward"):
            y.sum().backward()

    res = run(step)
    macs = 2 * 4 * 8 * 8 * 3 * 3 * 3  # N*Cout*H*W*Cin*k*k = 13824
    assert rows(res, "forward")["aten::convolution"] == 2 * macs + 2 * 4 * 64
    # grad_input + grad_weight + grad_bias
    assert rows(res, "backward")["aten::convolution_backward"] == 4 * macs + 2 * 4 * 64


def test_conv_backward_without_input_grad_and_default_phases():
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
    x = torch.randn(2, 3, 8, 8)  # no grad wanted for the input: output_mask[0] is False
    res = run(lambda c: conv(x).sum().backward())
    assert rows(res, "forward")["aten::convolution"] == 2 * 13824
    assert rows(res, "backward")["aten::convolution_backward"] == 2 * 13824


def test_linear_forward_backward():
    lin = nn.Linear(4, 5)
    x = torch.randn(3, 4, requires_grad=True)
    res = run(lambda c: lin(x).sum().backward())
    assert rows(res, "forward") == {"aten::addmm": 2 * 3 * 4 * 5 + 3 * 5, "aten::sum": 15}
    back = rows(res, "backward")
    assert back["aten::mm"] == 2 * (2 * 3 * 4 * 5)  # grad_input and grad_weight
    assert back["aten::sum"] == 15  # grad_bias: reduce grad_output [3, 5]


def test_bmm_and_attention():
    a = torch.randn(2, 3, 4, requires_grad=True)
    b = torch.randn(2, 4, 5, requires_grad=True)
    res = run(lambda c: torch.bmm(a, b).sum().backward())
    assert rows(res, "forward")["aten::bmm"] == 240
    assert rows(res, "backward")["aten::bmm"] == 480
    q = torch.randn(2, 3, 5, 8, requires_grad=True)
    k = torch.randn(2, 3, 7, 8, requires_grad=True)
    v = torch.randn(2, 3, 7, 8, requires_grad=True)
    res = run(lambda c: F.scaled_dot_product_attention(q, k, v).sum().backward())
    fwd = {op: f for op, f in rows(res, "forward").items() if "attention" in op}
    bwd = {op: f for op, f in rows(res, "backward").items() if "attention" in op}
    assert list(fwd.values()) == [2 * 6 * 5 * 7 * 16]
    assert list(bwd.values()) == [4 * 6 * 5 * 7 * 16]


def test_norms_forward_backward():
    bn = nn.BatchNorm2d(3)
    x = torch.randn(2, 3, 4, 4, requires_grad=True)
    res = run(lambda c: bn(x).sum().backward())
    assert rows(res, "forward")["aten::native_batch_norm"] == 8 * 96
    assert rows(res, "backward")["aten::native_batch_norm_backward"] == 10 * 96
    bn.eval()
    with torch.no_grad():
        res = run(lambda c: bn(x))
    assert rows(res)["aten::native_batch_norm"] == 4 * 96
    ln, gn = nn.LayerNorm(6), nn.GroupNorm(2, 4)
    y = torch.randn(2, 5, 6, requires_grad=True)
    z = torch.randn(2, 4, 3, 3, requires_grad=True)
    res = run(lambda c: (ln(y).sum() + gn(z).sum()).backward())
    f, b = rows(res, "forward"), rows(res, "backward")
    assert f["aten::native_layer_norm"] == 8 * 60
    assert b["aten::native_layer_norm_backward"] == 10 * 60
    assert f["aten::native_group_norm"] == 8 * 72
    assert b["aten::native_group_norm_backward"] == 10 * 72


def test_elementwise_and_pooling():
    x = torch.randn(1, 2, 6, 6, requires_grad=True)
    res = run(lambda c: F.max_pool2d(F.gelu(F.relu(x)), 2).sum().backward())
    f, b = rows(res, "forward"), rows(res, "backward")
    assert f["aten::relu"] == 72
    assert f["aten::gelu"] == 5 * 72
    assert f["aten::max_pool2d_with_indices"] == 18 * 4
    assert b["aten::max_pool2d_with_indices_backward"] == 18
    assert b["aten::gelu_backward"] == 11 * 72
    assert b["aten::threshold_backward"] == 72
    res = run(lambda c: F.avg_pool2d(x, 3, 1, 1).sum().backward())
    assert rows(res, "forward")["aten::avg_pool2d"] == 72 * 9
    assert rows(res, "backward")["aten::avg_pool2d_backward"] == 72 * 9


def test_cross_entropy_and_embedding():
    logits = torch.randn(4, 10, requires_grad=True)
    y = torch.tensor([1, 2, 3, 4])
    res = run(lambda c: F.cross_entropy(logits, y).backward())
    assert rows(res, "forward") == {"aten::_log_softmax": 200, "aten::nll_loss_forward": 4}
    back = rows(res, "backward")
    assert back["aten::nll_loss_backward"] == 4
    assert back["aten::_log_softmax_backward_data"] == 160
    emb = nn.Embedding(20, 10)
    idx = torch.randint(0, 20, (4, 3))
    res = run(lambda c: emb(idx).sum().backward())
    assert rows(res, "forward")["aten::embedding"] == 0
    assert rows(res, "backward")["aten::embedding_dense_backward"] == 120
    emb_row = next(r for r in res.per_op if r.op == "aten::embedding")
    assert emb_row.bytes == 12 * 8 + 2 * 12 * 10 * 4


def _opt_flops(make_opt):
    """FLOPs of the second optimizer step (state exists) on a 2-tensor model (15 elements)."""
    torch.manual_seed(0)
    params = [nn.Parameter(torch.randn(10)), nn.Parameter(torch.randn(5))]
    opt = make_opt(params)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()
    c = OpCounter(track_modules=False)
    with c, c.phase("optimizer"):
        opt.step()
    res = c.result()
    assert res.unknown_ops == []
    return res.flops_of(phase="optimizer")


@pytest.mark.parametrize("impl", [{"foreach": False}, {"foreach": True}, {"fused": True}])
def test_sgd_momentum_nesterov_per_element(impl):
    def sgd(wd, nesterov):
        return lambda ps: torch.optim.SGD(
            ps, lr=0.1, momentum=0.9, nesterov=nesterov, weight_decay=wd, **impl
        )

    # update 2 + momentum 2 (+ Nesterov 2) (+ weight decay 2), per element
    assert _opt_flops(sgd(0.0, False)) == 4 * 15
    assert _opt_flops(sgd(0.0, True)) == 6 * 15
    assert _opt_flops(sgd(5e-4, True)) == 8 * 15


@pytest.mark.parametrize("impl", [{"foreach": False}, {"foreach": True}, {"fused": True}])
def test_adam_adamw_per_element(impl):
    # 13 per element (+1 AdamW decay, +2 Adam L2), + 1 per parameter tensor (step += 1)
    adam = _opt_flops(lambda ps: torch.optim.Adam(ps, lr=1e-3, **impl))
    assert adam == 13 * 15 + 2
    adam_l2 = _opt_flops(lambda ps: torch.optim.Adam(ps, lr=1e-3, weight_decay=0.1, **impl))
    assert adam_l2 == 15 * 15 + 2
    adamw = _opt_flops(lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, **impl))
    assert adamw == 14 * 15 + 2


def test_gradient_clipping_is_counted():
    """clip_grad_norm_ issues linalg_vector_norm(x, ord, dim, keepdim): ord is not a dim."""
    m = nn.Linear(4, 3)
    m(torch.randn(5, 4)).sum().backward()
    res = run(lambda c: nn.utils.clip_grad_norm_(m.parameters(), 1.0))
    got = rows(res)
    assert got["aten::_foreach_norm"] == 2 * 15  # square and add over the 12 + 3 gradients
    assert got["aten::linalg_vector_norm"] == 2 * 2  # the norm of the two norms
    assert res.unknown_ops == []


def test_unknown_ops_reported_and_custom_op_picked_up():
    x = torch.rand(7)
    res = run(lambda c: torch.special.bessel_j0(x))
    assert res.unknown_ops == [{"op": "aten::special_bessel_j0", "calls": 1}]
    assert res.total_flops == 0

    @register("aten::special_bessel_j0", family="elementwise")
    def j0(call):
        t = call.tensor(0)
        return Cost(20 * t.numel, call.io_bytes([t]))

    try:
        res = run(lambda c: (torch.special.bessel_j0(x), torch.special.bessel_j0(x)))
        assert res.unknown_ops == []
        assert rows(res) == {"aten::special_bessel_j0": 2 * 140}
        assert res.per_op[0].calls == 2
    finally:
        unregister("aten::special_bessel_j0")


def test_module_attribution_and_work_section(make_record):
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.ReLU())
    x = torch.randn(2, 3, 8, 8)
    res = run(lambda c: model(x).sum().backward(), track_modules=True)
    mods = {m.module: m.flops for m in res.per_module}
    assert mods["Sequential.0"] == 2 * 13824 + 2 * 13824  # forward + weight grad
    assert mods["Sequential.1"] == 512 + 512  # relu, threshold_backward on 2*4*8*8
    work = res.to_work_section()
    assert work["flops_per_step"] == {
        "value": res.total_flops,
        "unit": "FLOP",
        "provenance": "counted",
        "source": work["flops_per_step"]["source"],
    }
    assert work["bytes_per_step"]["provenance"] == "modeled"
    assert work["bytes_per_step"]["unit"] == "byte"
    assert work["dtype"] == "float32"
    assert {r["phase"] for r in work["per_op"]} == {"forward", "backward"}
    rec = make_record(work={**work, "batch_size": 2})
    validate_record(rec)


@pytest.mark.parametrize("optimizer", ["sgd", "instance"])
def test_count_model_never_modifies_the_callers_model(optimizer):
    from perfsuite.flops.torch_counter import count_model

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    opt = optimizer
    if optimizer == "instance":
        opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, weight_decay=5e-4)
    # device matches the model's: the old code stepped the caller's weights in place
    res = count_model(model, (2, 5), train=True, optimizer=opt, device="cpu")
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(p.grad is None for p in model.parameters())
    assert model.training  # mode untouched too (nn.Module default)
    if optimizer == "instance":
        assert opt.state == {}  # the caller's optimizer was not stepped
    # SGD momentum + weight decay, no Nesterov: 6 FLOPs per element (5*4+4+4*3+3 = 39)
    per = 8 if optimizer == "sgd" else 6
    assert res.flops_of(phase="optimizer") == per * 39
    # float64 count on the caller's device leaves the caller's dtype alone
    count_model(model, (2, 5), device="cpu", dtype=torch.float64)
    assert all(p.dtype == torch.float32 for p in model.parameters())
