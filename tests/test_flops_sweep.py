"""Every op of a few real training steps, counted by the live counter, against an independent
count written here from each call's shapes: matmuls exactly, the rest by docs/flops.md's
conventions. The steps: a Transformer block (nn.TransformerEncoderLayer) with a linear head,
cross-entropy, gradient clipping and AdamW, in float32 and under CPU autocast (bfloat16). An
op this file does not know fails the test, so a new op in these steps gets a reviewed count."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from perfsuite.flops import OpCounter  # noqa: E402

B, L, D, HEADS, FF, CLASSES = 3, 7, 16, 2, 32, 5
ZERO = {  # no arithmetic: views, copies, fills, random draws, scalar reads
    "_local_scalar_dense", "_to_copy", "_unsafe_view", "clone", "detach", "empty_like",
    "expand", "ones_like", "permute", "select", "select_backward", "squeeze", "stack", "t",
    "transpose", "unsqueeze", "view", "bernoulli_", "copy_", "zeros_like", "fill_", "zero_",
}  # fmt: skip
ONE = {  # 1 FLOP per output element
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "sqrt", "reciprocal", "clamp",
    "relu", "threshold_backward", "neg", "maximum",
}  # fmt: skip


def numel(t) -> int:
    return math.prod(t.shape)


def float_work(args, out) -> bool:
    """False when every tensor in and out is integer or bool (no FLOPs then)."""
    ts = [a for a in _flat(args) if isinstance(a, torch.Tensor)] + list(_flat(out))
    ts = [t for t in ts if isinstance(t, torch.Tensor)]
    return not ts or any(t.is_floating_point() for t in ts)


def _flat(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flat(v)
    else:
        yield x


def expected(op: str, args: tuple, kw: dict, out) -> int:
    """FLOPs of one call, from its shapes, by docs/flops.md's conventions."""
    name = op.split("::")[1]
    first = out[0] if isinstance(out, (list, tuple)) else out
    if name in ZERO or not float_work(args, out):
        return 0
    if name == "mm":
        (m, k), n = args[0].shape, args[1].shape[1]
        return 2 * m * k * n
    if name == "addmm":  # bias + mat1 @ mat2: the bias add per output element
        (m, k), n = args[1].shape, args[2].shape[1]
        return 2 * m * k * n + m * n
    if name == "bmm":
        (b, m, k), n = args[0].shape, args[1].shape[2]
        return 2 * b * m * k * n
    if name in ONE:
        alpha = kw.get("alpha", args[2] if len(args) > 2 and name.startswith("add") else 1)
        return numel(first) * (2 if name.startswith(("add", "sub")) and alpha != 1 else 1)
    if name in ("addcmul_", "addcdiv_"):  # self + value * t1 (* or /) t2
        value = kw.get("value", args[3] if len(args) > 3 else 1)
        return numel(first) * (2 if value == 1 else 3)
    if name == "lerp_":  # self + w * (end - self)
        return numel(first) * 3
    if name in ("sum", "mean"):
        return numel(args[0])
    if name == "linalg_vector_norm":  # square and add, for ord 2
        assert (args[1] if len(args) > 1 else kw.get("ord", 2)) == 2
        return 2 * numel(args[0])
    if name == "_foreach_norm":
        assert (args[1] if len(args) > 1 else 2) == 2
        return 2 * sum(numel(t) for t in args[0])
    if name in ("_foreach_mul_", "_foreach_add_", "_foreach_div_", "_foreach_sqrt"):
        return sum(numel(t) for t in args[0])
    if name in ("_softmax", "_safe_softmax", "_log_softmax"):
        return 5 * numel(args[0])
    if name in ("_softmax_backward_data", "_log_softmax_backward_data"):
        return 4 * numel(args[0])
    if name in ("nll_loss_forward", "nll_loss_backward"):  # 1 per target (no class weights)
        return numel(args[1] if name == "nll_loss_forward" else args[2])
    if name == "native_layer_norm":  # statistics 6 + weight 1 + bias 1 per element
        return 8 * numel(args[0])
    if name == "native_layer_norm_backward":  # every gradient requested
        assert list(args[7]) == [True, True, True]
        return 10 * numel(args[1])
    raise AssertionError(f"no independent count for {op} in this test: add one")


class Recorder(TorchDispatchMode):
    """Every aten call with its real arguments and result, and its expected FLOPs."""

    def __init__(self) -> None:
        super().__init__()
        self.flops: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func._schema.name
        if name.startswith("aten::"):
            self.flops[name] += expected(name, args, kwargs, out)
            self.calls[name] += 1
        return out


def _setup(seed: int = 0):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.1, batch_first=True)
    head = torch.nn.Linear(D, CLASSES)
    params = [*layer.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=False)
    x = torch.randn(B, L, D)
    y = torch.randint(0, CLASSES, (B,))

    def step(autocast: bool) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = torch.nn.functional.cross_entropy(head(layer(x).mean(1)), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad()

    return step


def _count(autocast: bool):
    """The counter's and this file's per-op FLOPs for the same real step (the same seed,
    after one uncounted step so AdamW's state exists)."""
    step = _setup()
    step(autocast)
    counter = OpCounter()
    with counter:
        step(autocast)
    mine = _setup()
    mine(autocast)
    rec = Recorder()
    with rec:
        mine(autocast)
    got: defaultdict[str, float] = defaultdict(float)
    for r in counter.result().per_op:
        got[r.op] += r.flops
    return counter.result(), dict(got), rec


@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "autocast-bf16"])
def test_every_op_of_a_transformer_step_matches_an_independent_count(autocast):
    res, got, rec = _count(autocast)
    assert res.unknown_ops == []
    want = {op: float(f) for op, f in rec.flops.items() if f}
    assert {op: f for op, f in got.items() if f} == want
    # matmuls by hand from the architecture, rows R = B*L tokens:
    R = B * L
    linears = [(R, D, 3 * D), (R, D, D), (R, D, FF), (R, FF, D), (B, D, CLASSES)]  # M, K, N
    fwd = sum(2 * m * k * n + m * n for m, k, n in linears)
    attention = 2 * 2 * (B * HEADS) * L * L * (D // HEADS)  # Q K^T and P V
    # the packed in-projection of a 3-D input runs as mm + add, the others as addmm
    in_proj = 2 * R * D * 3 * D
    assert got["aten::addmm"] == fwd - in_proj - R * 3 * D
    # backward: grad_weight of every linear; grad_input of all but the in-projection (its
    # input is the data); each bmm's two gradients
    bwd = sum(2 * m * k * n for m, k, n in linears) * 2 - in_proj
    assert got["aten::mm"] == in_proj + bwd
    assert got["aten::bmm"] == attention * 3
    # AdamW: 15 FLOPs per parameter element (13 + decoupled decay 1 + its step count's add
    # counted per tensor) on the single-tensor path, clipping 2 + 1 per gradient element
    n = sum(p.numel() for p in torch.nn.TransformerEncoderLayer(D, HEADS, FF).parameters())
    n += D * CLASSES + CLASSES
    assert got["aten::_foreach_norm"] == 2 * n and got["aten::_foreach_mul_"] == n
    assert got["aten::lerp_"] == 3 * n and got["aten::addcdiv_"] == 3 * n
