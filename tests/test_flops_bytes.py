"""Modeled bytes are compulsory traffic: what a kernel must read and write, nothing it never
touches (out= tensors read as inputs, copy_ destinations, shape-only inputs, whole tables of
which a gather reads a few elements), at the right element size. Hand-derived values."""

from __future__ import annotations

import pytest

from perfsuite.flops import OpCall, TensorMeta, estimate
from perfsuite.flops.call import dtype_bytes, is_non_float


def T(*shape, dtype="float32"):
    return TensorMeta(shape, dtype)


def est(name, *args, outputs=None):
    return estimate(OpCall(name, list(args), outputs))


# ---- element sizes ----------------------------------------------------------------------


def test_element_sizes_of_unsigned_and_fp8_names():
    # torch names and the C++ names torch.profiler writes into "Input type"; all were 4
    assert [dtype_bytes(n) for n in ("uint16", "short unsigned int")] == [2, 2]
    assert [dtype_bytes(n) for n in ("uint64", "torch.uint64", "long unsigned int")] == [8, 8, 8]
    fp8 = ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "c10::Float8_e4m3fnuz")
    assert [dtype_bytes(n) for n in fp8] == [1, 1, 1, 1]
    assert dtype_bytes("c10::complex<c10::Half>") == 4  # complex32
    assert is_non_float("long unsigned int") and not is_non_float("c10::Float8_e8m0fnu")
    # 1000 uint64 read + 1000 uint64 written: 16,000 (was 8,000 at 4 bytes each)
    assert est("aten::clone", T(1000, dtype="uint64")).bytes == 16_000


@pytest.mark.filterwarnings("ignore::UserWarning")  # complex32 and quantized are experimental
def test_every_torch_dtype_has_its_element_size():
    torch = pytest.importorskip("torch")
    dtypes = {v for v in vars(torch).values() if isinstance(v, torch.dtype)}
    assert len(dtypes) > 30
    wrong = {
        str(d): (dtype_bytes(str(d)), torch.empty(0, dtype=d).element_size())
        for d in dtypes
        if dtype_bytes(str(d)) != torch.empty(0, dtype=d).element_size()
    }
    assert wrong == {}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_every_profiler_type_name_has_its_element_size(tmp_path):
    """The trace path reads "Input type" (C++ names): record one alias of each dtype."""
    torch = pytest.importorskip("torch")
    import json

    from torch.profiler import profile

    dtypes = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
    with profile(record_shapes=True) as prof:
        for d in dtypes:
            torch.ops.aten.alias(torch.empty(2, dtype=d))
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    names = [e["args"]["Input type"][0] for e in events if e.get("name") == "aten::alias"]
    assert len(names) == len(dtypes)
    wrong = {
        n: (dtype_bytes(n), torch.empty(0, dtype=d).element_size())
        for d, n in zip(dtypes, names, strict=True)
        if dtype_bytes(n) != torch.empty(0, dtype=d).element_size()
    }
    assert wrong == {}


# ---- copies and partial in-place writes (registry) ----------------------------------------


def test_copy_reads_its_source_and_writes_its_destination_only():
    # copy_(self, src): 1000 fp32 read from src, 1000 written to self = 8,000 (self not read)
    assert est("aten::copy_", T(1000), T(1000), False).bytes == 8_000
    # conversion: 1000 bf16 read (2,000) + 1000 fp32 written (4,000)
    assert est("aten::copy_", T(1000), T(1000, dtype="bfloat16")).bytes == 6_000
    # _copy_from(self, dst): self read, dst written
    assert est("aten::_copy_from", T(1000), T(1000), False).bytes == 8_000


def test_partial_in_place_writes_charge_the_touched_elements():
    x, idx = T(10, 20), T(2, dtype="int64")
    # x[:, idx] = v: indices [None, idx] select 2 * 10 = 20 elements;
    # idx 16 + values 10*2*4 = 80 read, 20 * 4 = 80 written
    assert est("aten::index_put_", x, [None, idx], T(10, 2), False).bytes == 16 + 80 + 80
    # accumulate: the 80 bytes of touched elements are read as well
    assert est("aten::index_put_", x, [None, idx], T(10, 2), True).bytes == 16 + 80 + 160
    # a boolean mask selects a data-dependent count: self read and written in full
    mask = T(10, 20, dtype="bool")
    assert est("aten::index_put_", x, [mask], T(), False).bytes == 800 + 200 + 4 + 800
    # scatter_(x, 0, index[2, 20], src[2, 20]): index 320 + src 160 read, 40 elements written
    index = T(2, 20, dtype="int64")
    assert est("aten::scatter_", x, 0, index, T(2, 20)).bytes == 320 + 160 + 160
    assert est("aten::scatter_", x, 0, index, 1.0).bytes == 320 + 160  # scalar value
    assert est("aten::scatter_add_", x, 0, index, T(2, 20)).bytes == 320 + 160 + 320
    # index_add_(x, 0, idx, source[2, 20]): idx 16 + source 160, 40 elements read + written
    assert est("aten::index_add_", x, 0, idx, T(2, 20), 1).bytes == 16 + 160 + 320
    assert est("aten::index_copy_", x, 0, idx, T(2, 20)).bytes == 16 + 160 + 160


# ---- shape-only inputs: pooling backward, nll_loss (registry) ---------------------------


def test_pooling_backward_reads_no_forward_input():
    g, x = T(1, 2, 3, 3), T(1, 2, 6, 6)
    idx = T(1, 2, 3, 3, dtype="int64")
    mp = est("aten::max_pool2d_with_indices_backward", g, x, [2, 2], [2, 2], [0, 0], [1, 1],
             False, idx)  # fmt: skip
    # grad_out 18*4 = 72 + indices 18*8 = 144 read, grad_input 72*4 = 288 written (was +288)
    assert (mp.flops, mp.bytes) == (18, 72 + 144 + 288)
    amp = est("aten::adaptive_max_pool2d_backward", T(1, 1, 3, 3), T(1, 1, 5, 5),
              T(1, 1, 3, 3, dtype="int64"))  # fmt: skip
    assert amp.bytes == 36 + 72 + 100  # grad_out 9*4, indices 9*8, grad_input 25*4
    ap = est("aten::avg_pool2d_backward", T(1, 1, 4, 4), T(1, 1, 4, 4), [3, 3], [1, 1], [1, 1])
    assert (ap.flops, ap.bytes) == (16 * 9, 64 + 64)  # grad_out read, grad_input written
    aap = est("aten::_adaptive_avg_pool2d_backward", T(1, 1, 3, 3), T(1, 1, 5, 5))
    assert (aap.flops, aap.bytes) == (49, 36 + 100)


def test_nll_loss_reads_gathered_elements():
    x, tgt = T(4, 10), T(4, dtype="int64")
    # weighted: 4 gathered logits 16 + targets 32 + 4 gathered weights 16 + loss 4 + total 4
    fwd = est("aten::nll_loss_forward", x, tgt, T(10), 1, -100)
    assert (fwd.flops, fwd.bytes) == (8, 16 + 32 + 16 + 4 + 4)
    # more targets than classes: at most the 3 class weights are read
    many = est("aten::nll_loss_forward", T(8, 3), T(8, dtype="int64"), T(3), 1, -100)
    assert many.bytes == 8 * 4 + 64 + 3 * 4 + 4 + 4
    # backward: grad_out 4 + targets 32 + total_weight 4 read, grad_input 160 written
    bwd = est("aten::nll_loss_backward", T(), x, tgt, None, 1, -100, T())
    assert (bwd.flops, bwd.bytes) == (4, 4 + 32 + 4 + 160)


# ---- norm backward by output_mask (registry) ---------------------------------------------


@pytest.mark.parametrize(
    ("mask", "train", "per"),
    [([True, True, True], True, 10), ([True, True, True], False, 7),
     ([False, True, True], True, 5), ([True, False, False], False, 2),
     ([True, False, False], True, 10), ([False, False, True], True, 1)],
)  # fmt: skip
def test_batch_norm_backward_costs_the_requested_gradients(mask, train, per):
    # terms: x_hat 2 + sum(g*x_hat) 2 (grad_weight, or grad_input with batch stats),
    # sum(g) 1 (grad_bias, or grad_input with batch stats), grad_input 5 (batch) / 2 (running)
    x, c = T(2, 3, 4, 4), T(3)
    e = est("aten::native_batch_norm_backward", x, x, c, c, c, c, c, train, 1e-5, mask)
    assert e.flops == per * 96


def test_batch_norm_backward_bytes_without_grad_input():
    x, c = T(2, 3, 4, 4), T(3)
    e = est("aten::native_batch_norm_backward", x, x, c, c, c, c, c, True, 1e-5,
            [False, True, True])  # fmt: skip
    # read grad_out 384 + input 384 (x_hat) + 5 per-channel tensors 60; write 2 * 12
    assert e.bytes == 384 + 384 + 60 + 24
    e = est("aten::native_batch_norm_backward", x, x, c, c, c, c, c, False, 1e-5,
            [True, False, False])  # fmt: skip
    # running stats, grad_input only (g * w * invstd): input not read; grad_input written
    assert e.bytes == 384 + 60 + 384
