"""The live counter's modeled bytes on real calls: out= tensors are results (not inputs),
copy_ never reads its destination, expanded views read their distinct elements, backward
kernels that need only a shape do not read it. Hand-derived values."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from perfsuite.flops import OpCounter  # noqa: E402


def counted(fn) -> dict[str, tuple[float, float]]:
    """{op: (flops, bytes)} of everything `fn` runs, summed over phases."""
    c = OpCounter()
    with c:
        fn()
    out: dict[str, tuple[float, float]] = {}
    for r in c.result().per_op:
        f, b = out.get(r.op, (0.0, 0.0))
        out[r.op] = (f + r.flops, b + r.bytes)
    return out


def test_out_variants_do_not_read_their_out_tensor():
    a, b, c = torch.randn(1000), torch.randn(1000), torch.empty(1000)
    # a and b read (2 * 4,000), c written once (4,000); was 16,000 with c also read
    assert counted(lambda: torch.add(a, b, out=c))["aten::add"] == (1000, 12_000)
    assert counted(lambda: torch.maximum(a, b, out=c))["aten::maximum"] == (1000, 12_000)
    m, s = torch.randn(64, 1000), torch.empty(64)
    # 64,000 read (256,000) + 64 written (256)
    assert counted(lambda: torch.sum(m, 1, out=s))["aten::sum"] == (64_000, 256_256)


def test_single_tensor_amsgrad_maximum_out():
    """Adam amsgrad (foreach=False) keeps max(v_max, v) with torch.maximum(..., out=)."""
    p = torch.nn.Parameter(torch.randn(1000))
    opt = torch.optim.Adam([p], amsgrad=True, foreach=False)
    p.grad = torch.randn(1000)
    opt.step()  # state exists from the second step on
    ops = counted(opt.step)
    assert ops["aten::maximum"] == (1000, 12_000)  # two states read, one written


def test_copy_reads_source_only():
    a, c = torch.randn(1000), torch.empty(1000)
    assert counted(lambda: c.copy_(a))["aten::copy_"] == (0, 8_000)  # was 12,000
    half = torch.randn(1000, dtype=torch.bfloat16)
    assert counted(lambda: c.copy_(half))["aten::copy_"] == (0, 2_000 + 4_000)


def test_index_put_charges_the_indexed_elements():
    x, idx, v = torch.zeros(10, 20), torch.tensor([1, 3]), torch.ones(10, 2)

    def put():
        x[:, idx] = v

    # 20 elements written (80) + idx 16 + v 80; was self 800 read + 800 written + 96
    assert counted(put)["aten::index_put_"] == (0, 80 + 16 + 80)


def test_expanded_operand_reads_its_distinct_elements():
    m, row = torch.randn(64, 1000), torch.randn(1, 1000)
    broadcast = counted(lambda: m + row)["aten::add"]
    expanded = counted(lambda: m + row.expand(64, 1000))["aten::add"]
    # m 256,000 + row 4,000 read, 256,000 written; the expanded view was charged 256,000
    assert broadcast == expanded == (64_000, 516_000)


def test_max_pool_backward_reads_grad_and_indices_only():
    x = torch.randn(512, 64, 32, 32, device="meta", requires_grad=True)
    y = F.max_pool2d(x, 2)
    g = torch.randn_like(y)  # a dense grad_output (sum's is a stride-0 view)
    ops = counted(lambda: y.backward(g))
    # grad_out 512*64*16*16*4 = 33,554,432 + int64 indices 67,108,864 read,
    # grad_input 512*64*32*32*4 = 134,217,728 written; was 369 MB with the input read too
    assert ops["aten::max_pool2d_with_indices_backward"] == (
        512 * 64 * 16 * 16,
        33_554_432 + 67_108_864 + 134_217_728,
    )


def test_nll_loss_reads_one_logit_per_target():
    n, v = 4096, 50_000
    z = torch.randn(n, v, device="meta", requires_grad=True)
    t = torch.randint(0, v, (n,), device="meta")
    ops = counted(lambda: F.cross_entropy(z, t).backward())
    # forward: 4096 logits * 4 + targets 4096 * 8 + loss 4 + total_weight 4 (was 819 MB)
    assert ops["aten::nll_loss_forward"] == (n, n * 4 + n * 8 + 4 + 4)
    # backward: grad_out 4 + targets 32,768 + total_weight 4 read; grad_input 819,200,000
    # written (was 1.64 GB: self read as well)
    assert ops["aten::nll_loss_backward"] == (n, 4 + n * 8 + 4 + n * v * 4)


def test_batch_norm_backward_without_input_grad():
    bn = torch.nn.BatchNorm1d(4)
    x = torch.randn(8, 4)  # first layer: no grad for the input, output_mask [F, T, T]
    ops = counted(lambda: bn(x).sum().backward())
    # x_hat 2 + sum(g * x_hat) 2 + sum(g) 1 = 5 per element of 32 (was 10)
    assert ops["aten::native_batch_norm_backward"][0] == 5 * 32
