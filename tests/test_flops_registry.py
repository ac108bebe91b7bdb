"""Hand-checked FLOP and byte counts of every op family, on torch-free OpCall descriptions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfsuite.flops import OpCall, TensorMeta, estimate, register, unregister
from perfsuite.flops.registry import lookup


def T(*shape, dtype="float32"):
    return TensorMeta(shape, dtype)


def est(name, *args, outputs=None, overload=""):
    return estimate(OpCall(name, list(args), outputs, overload))


def test_registry_import_is_torch_free():
    code = "import sys, perfsuite.flops as f; f.registered_ops(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---- convolution ------------------------------------------------------------------------


def test_conv_forward_with_bias():
    # 2*N*Cout*Hout*Wout*Cin*k*k = 2*2*4*8*8*3*3*3 = 27648, + bias N*Cout*H*W = 512
    e = est("aten::convolution", T(2, 3, 8, 8), T(4, 3, 3, 3), T(4), [1, 1], [1, 1], [1, 1],
            False, [0, 0], 1)  # fmt: skip
    assert e.family == "convolution"
    assert e.flops == 27648 + 512
    # bytes: x 1536 + w 432 + b 16 + out 2*4*8*8*4 = 2048
    assert e.bytes == 1536 + 432 + 16 + 2048


def test_conv_groups_stride_dilation():
    # out = (9 - 2*(3-1) - 1)//2 + 1 = 3; MACs = 1*6*3*3*(4/2)*3*3 = 972
    e = est("aten::convolution", T(1, 4, 9, 9), T(6, 2, 3, 3), None, [2, 2], [0, 0], [2, 2],
            False, [0, 0], 2)  # fmt: skip
    assert e.flops == 2 * 972


def test_conv_transposed():
    # out = (4-1)*2 - 2*1 + (3-1) + 1 + 1 = 8; MACs = N*Cin*Hin*Win*(Cout/g)*k*k = 2*16*3*9
    e = est("aten::convolution", T(1, 2, 4, 4), T(2, 3, 3, 3), None, [2, 2], [1, 1], [1, 1],
            True, [1, 1], 1)  # fmt: skip
    assert e.flops == 2 * 864
    assert e.bytes == (32 + 54 + 1 * 3 * 8 * 8) * 4


@pytest.mark.parametrize(
    ("mask", "flops"),
    [([True, True, True], 4 * 13824 + 512), ([False, True, False], 2 * 13824),
     ([True, False, False], 2 * 13824)],
)  # fmt: skip
def test_conv_backward_output_mask(mask, flops):
    e = est("aten::convolution_backward", T(2, 4, 8, 8), T(2, 3, 8, 8), T(4, 3, 3, 3), [4],
            [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)  # fmt: skip
    assert e.flops == flops


def test_conv_backward_bytes_weight_grad_only():
    # reads grad_output (2048) and input (1536), writes grad_weight (432)
    e = est("aten::convolution_backward", T(2, 4, 8, 8), T(2, 3, 8, 8), T(4, 3, 3, 3), [4],
            [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])  # fmt: skip
    assert e.bytes == 2048 + 1536 + 432


def test_conv2d_composite_matches_convolution():
    e = est("aten::conv2d", T(2, 3, 8, 8), T(4, 3, 3, 3), None, [1, 1], [1, 1], [1, 1], 1)
    assert e.flops == 27648
    assert lookup("aten::conv2d").composite


# ---- matmul -----------------------------------------------------------------------------


def test_matmul_family():
    assert est("aten::mm", T(3, 4), T(4, 5)).flops == 2 * 3 * 4 * 5
    assert est("aten::mm", T(3, 4), T(4, 5)).bytes == (12 + 20 + 15) * 4
    assert est("aten::addmm", T(5), T(3, 4), T(4, 5)).flops == 120 + 15
    assert est("aten::addmm", T(5), T(3, 4), T(4, 5), 0, 1).flops == 120
    assert est("aten::bmm", T(2, 3, 4), T(2, 4, 5)).flops == 240
    assert est("aten::baddbmm", T(2, 3, 5), T(2, 3, 4), T(2, 4, 5)).flops == 240 + 30
    assert est("aten::linear", T(2, 7, 4), T(5, 4), T(5)).flops == 2 * 14 * 4 * 5 + 14 * 5
    assert est("aten::matmul", T(2, 1, 3, 4), T(5, 4, 6)).flops == 2 * 2 * 5 * 3 * 4 * 6
    assert est("aten::matmul", T(4), T(4, 6)).flops == 2 * 4 * 6
    e = est("aten::einsum", "bij,bjk->bik", [T(2, 3, 4), T(2, 4, 5)])
    assert e.flops == 240
    # nothing summed: one multiply per element (elementwise, outer product); a dot product
    # sums its index away: a multiply-add per element
    assert est("aten::einsum", "ij,ij->ij", [T(4, 5), T(4, 5)]).flops == 20
    assert est("aten::einsum", "i,j->ij", [T(4), T(5)]).flops == 20
    assert est("aten::einsum", "i,i->", [T(7), T(7)]).flops == 14


def test_matmul_bytes_at_dtype_size():
    e = est("aten::mm", T(3, 4, dtype="bfloat16"), T(4, 5, dtype="c10::BFloat16"))
    assert e.bytes == (12 + 20 + 15) * 2


# ---- attention --------------------------------------------------------------------------


def test_attention_forward_and_backward():
    q, k, v = T(2, 3, 5, 8), T(2, 3, 7, 8), T(2, 3, 7, 4)
    fwd = est("aten::_scaled_dot_product_flash_attention_for_cpu", q, k, v, 0.0, False)
    assert fwd.family == "attention"
    assert fwd.flops == 2 * 6 * 5 * 7 * (8 + 4)  # QK^T + PV
    assert fwd.bytes == (240 + 336 + 168 + 2 * 3 * 5 * 4) * 4
    out, lse = T(2, 3, 5, 4), T(2, 3, 5)
    bwd = est("aten::_scaled_dot_product_flash_attention_for_cpu_backward", out, q, k, v, out,
              lse, 0.0, False)  # fmt: skip
    assert bwd.flops == 4 * 6 * 5 * 7 * (8 + 4)
    assert est("aten::_scaled_dot_product_efficient_attention", q, k, v).flops == fwd.flops


# ---- normalization ----------------------------------------------------------------------


def test_norms():
    x, c = T(2, 3, 4, 4), T(3)
    train = est("aten::native_batch_norm", x, c, c, c, c, True, 0.1, 1e-5)
    assert train.flops == 8 * 96
    assert train.bytes == (96 + 4 * 3) * 4 + (96 + 2 * 3) * 4  # in + out, saved mean/invstd
    assert est("aten::native_batch_norm", x, c, c, c, c, False, 0.1, 1e-5).flops == 4 * 96
    assert est("aten::_native_batch_norm_legit_no_training", x, c, c, c, c, 0.1, 1e-5).flops == (
        4 * 96
    )
    nostats = est("aten::_native_batch_norm_legit", x, None, None, True, 0.1, 1e-5,
                  overload="no_stats")  # fmt: skip
    assert nostats.flops == 6 * 96
    bwd = est("aten::native_batch_norm_backward", x, x, c, c, c, c, c, True, 1e-5,
              [True, True, True])  # fmt: skip
    assert bwd.flops == 10 * 96
    assert est("aten::native_layer_norm", T(2, 5, 6), [6], T(6), T(6), 1e-5).flops == 8 * 60
    lnb = est("aten::native_layer_norm_backward", T(2, 5, 6), T(2, 5, 6), [6], T(10, 1),
              T(10, 1), T(6), T(6), [True, True, True])  # fmt: skip
    assert lnb.flops == 10 * 60
    assert est("aten::native_group_norm", T(2, 4, 3, 3), None, None, 2, 4, 9, 2, 1e-5).flops == (
        6 * 72
    )
    gnb = est("aten::native_group_norm_backward", T(2, 4, 3, 3), T(2, 4, 3, 3), T(2, 2),
              T(2, 2), None, 2, 4, 9, 2, [True, False, False])  # fmt: skip
    assert gnb.flops == 10 * 72


# ---- element-wise -----------------------------------------------------------------------


def test_elementwise():
    assert est("aten::add", T(2, 3), T(3)).flops == 6
    assert est("aten::add", T(2, 3), T(3)).bytes == (6 + 3 + 6) * 4
    assert est("aten::add_", T(2, 3), T(2, 3), -0.1).flops == 12  # alpha != 1: multiply-add
    assert est("aten::relu", T(10)).flops == 10
    assert est("aten::threshold_backward", T(10), T(10), 0).flops == 10
    assert est("aten::sigmoid", T(10)).flops == 40
    assert est("aten::gelu", T(10)).flops == 50
    assert est("aten::gelu", T(10), "tanh").flops == 90
    assert est("aten::addcmul_", T(4), T(4), T(4), 1).flops == 8
    assert est("aten::addcdiv_", T(4), T(4), T(4), -0.01).flops == 12
    assert est("aten::lerp_", T(4), T(4), 0.1).flops == 12
    assert est("aten::mul", T(5), 2.0).flops == 5


def test_reductions():
    s = est("aten::sum", T(4, 5), [1], False)
    assert (s.flops, s.bytes) == (20, (20 + 4) * 4)
    m = est("aten::mean", T(2, 3, 4, 4), [-1, -2], True)
    assert (m.flops, m.bytes) == (96, (96 + 6) * 4)
    assert est("aten::sum", T(7)).bytes == (7 + 1) * 4
    # norms: (self, ord, dim, keepdim), the second argument is ord, not a dim
    n = est("aten::linalg_vector_norm", T(2, 3), 2.0)
    assert (n.flops, n.bytes) == (12, (6 + 1) * 4)
    n = est("aten::linalg_vector_norm", T(2, 3), 2.0, [1], True)
    assert n.bytes == (6 + 2) * 4
    assert est("aten::norm", T(2, 3), 2.0, [0]).bytes == (6 + 3) * 4
    # var.default (self, unbiased): a bool, not dim 1
    assert est("aten::var", T(2, 3), True).bytes == (6 + 1) * 4
    assert est("aten::var", T(2, 3), [1], None, True).bytes == (6 + 2) * 4


@pytest.mark.parametrize(
    ("op", "args", "flops", "out_elements", "out_bytes"),
    [
        # sum.default (self, *, dtype): the dtype sets the output's bytes, not a dim
        ("aten::sum", ("torch.float64",), 24, 1, 8),
        # sum.dim_IntList (self, dim, keepdim, *, dtype): dim tuples, negative dims, keepdim
        ("aten::sum", ([0, -1], True, "torch.float64"), 24, 3, 8),
        ("aten::mean", ([1], False), 24, 8, 4),
        ("aten::amax", ([], False), 24, 1, 4),  # dim=[]: every dim
        ("aten::amax", ([2], True), 24, 6, 4),
        ("aten::prod", (1, False, "torch.float64"), 24, 8, 8),  # prod.dim_int
        # var.correction (self, dim, *, correction, keepdim): mean, sub, square, add
        ("aten::var", ([1, 2], 0, True), 4 * 24, 2, 4),
        ("aten::std_mean", ([0], 1, False), 4 * 24, 12, 4),
        ("aten::logsumexp", ([2], False), 4 * 24, 6, 4),
        # vector norms (self, ord, dim, keepdim, *, dtype): the order sets the cost
        ("aten::linalg_vector_norm", (2.0,), 2 * 24, 1, 4),
        ("aten::linalg_vector_norm", (1, [2]), 2 * 24, 6, 4),
        ("aten::linalg_vector_norm", (float("inf"), [0, 1], True), 2 * 24, 4, 4),
        ("aten::linalg_vector_norm", (0.0,), 2 * 24, 1, 4),
        ("aten::linalg_vector_norm", (3.0, None, False, "torch.float64"), 3 * 24, 1, 8),
        ("aten::norm", (0.5, [1], True), 3 * 24, 8, 4),  # norm.ScalarOpt_dim
        ("aten::norm", (2, "torch.float16"), 2 * 24, 1, 2),  # norm.ScalarOpt_dtype
        ("aten::max", (1, True), 24, 8, 4 + 8),  # max.dim: values and int64 indices
    ],
)
def test_reduction_argument_forms(op, args, flops, out_elements, out_bytes):
    """Input [2, 3, 4] (24 float32 elements); outputs inferred as in a trace."""
    e = est(op, T(2, 3, 4), *args)
    assert e.flops == flops
    outputs = 2 if op.endswith("_mean") else 1  # var_mean / std_mean: two outputs
    assert e.bytes == 24 * 4 + outputs * out_elements * out_bytes
    assert est(op, T(2, 3, 4), *args, outputs=[T(1)]).bytes == 24 * 4 + 4  # real outputs win


def test_foreach_norm_by_order():
    assert est("aten::_foreach_norm", [T(3, 4), T(3)], 2.0).flops == 2 * 15
    assert est("aten::_foreach_norm", [T(3, 4), T(3)], 3.0).flops == 3 * 15


# ---- pooling ----------------------------------------------------------------------------


def test_pooling():
    mp = est("aten::max_pool2d_with_indices", T(1, 2, 6, 6), [2, 2], [2, 2])
    assert mp.flops == 18 * 4
    assert mp.bytes == 72 * 4 + 18 * 4 + 18 * 8  # in + out + int64 indices
    assert est("aten::max_pool2d_with_indices", T(1, 1, 5, 5), [2, 2], [2, 2], [0, 0], [1, 1],
               True).flops == 9 * 4  # fmt: skip
    assert est("aten::max_pool2d_with_indices", T(1, 1, 5, 5), [2, 2]).flops == 4 * 4
    assert est("aten::max_pool2d_with_indices_backward", T(1, 2, 3, 3), T(1, 2, 6, 6), [2, 2],
               [2, 2], [0, 0], [1, 1], False, T(1, 2, 3, 3, dtype="int64")).flops == 18  # fmt: skip
    assert est("aten::avg_pool2d", T(1, 1, 4, 4), [3, 3], [1, 1], [1, 1]).flops == 16 * 9
    assert est("aten::avg_pool2d_backward", T(1, 1, 4, 4), T(1, 1, 4, 4), [3, 3], [1, 1],
               [1, 1]).flops == 16 * 9  # fmt: skip
    # windows of 5 -> 3: [0,2) [1,4) [3,5) = 2 + 3 + 2 = 7 per dim -> 49
    assert est("aten::_adaptive_avg_pool2d", T(1, 1, 5, 5), [3, 3]).flops == 49
    assert est("aten::_adaptive_avg_pool2d_backward", T(1, 1, 3, 3), T(1, 1, 5, 5)).flops == 49


# ---- softmax and losses -----------------------------------------------------------------


def test_softmax_and_losses():
    assert est("aten::_log_softmax", T(4, 10), 1, False).flops == 200
    assert est("aten::_softmax", T(4, 10), 1, False).flops == 200
    assert est("aten::_log_softmax_backward_data", T(4, 10), T(4, 10), 1, "float32").flops == 160
    tgt = T(4, dtype="int64")
    nll = est("aten::nll_loss_forward", T(4, 10), tgt, None, 1, -100)
    assert nll.flops == 4
    # one gathered logit per target (4 * 4), the int64 targets (32), loss + total_weight (4 + 4);
    # the other 36 logits are never read
    assert nll.bytes == 4 * 4 + 32 + 4 + 4
    assert est("aten::nll_loss_forward", T(4, 10), tgt, T(10), 1, -100).flops == 8
    assert est("aten::nll_loss_backward", T(), T(4, 10), tgt, None, 1, -100, T()).flops == 4
    assert est("aten::cross_entropy_loss", T(4, 10), tgt).flops == 200 + 4


# ---- embedding --------------------------------------------------------------------------


def test_embedding():
    idx = T(4, 3, dtype="int64")
    e = est("aten::embedding", T(20, 10), idx)
    assert (e.flops, e.bytes) == (0, 96 + 2 * 12 * 10 * 4)
    b = est("aten::embedding_dense_backward", T(4, 3, 10), idx, 20, -1, False)
    assert (b.flops, b.bytes) == (120, 480 + 96 + 800)


# ---- optimizer --------------------------------------------------------------------------


def test_foreach_ops():
    ps = [T(3), T(2, 2)]
    e = est("aten::_foreach_add_", ps, ps, -0.1)
    assert e.family == "optimizer"
    assert e.flops == 2 * 7
    assert e.bytes == 28 + 28 + 28  # two lists read, self written
    assert est("aten::_foreach_mul_", ps, 0.9).flops == 7
    assert est("aten::_foreach_addcdiv_", ps, ps, ps, [-0.1, -0.1]).flops == 21
    assert est("aten::_foreach_addcmul_", ps, ps, ps, 1).flops == 14
    assert est("aten::_foreach_lerp_", ps, ps, 0.1).flops == 21
    assert est("aten::_foreach_sqrt", ps).flops == 7


def _fused_sgd(wd, momentum, nesterov, first):
    ps = [T(10), T(5)]
    return est("aten::_fused_sgd_", ps, ps, ps, wd, momentum, 0.1, 0.0, nesterov, False, first)


def test_fused_sgd_per_element():
    assert _fused_sgd(0.0, 0.0, False, False).flops == 2 * 15
    assert _fused_sgd(5e-4, 0.9, False, False).flops == 6 * 15
    assert _fused_sgd(5e-4, 0.9, True, False).flops == 8 * 15
    assert _fused_sgd(5e-4, 0.9, True, True).flops == 6 * 15  # first step: buf = grad
    assert _fused_sgd(0.0, 0.9, True, False).bytes == 4 * 15 * 3 + 4 * 15 * 2


def test_fused_adam_per_element():
    ps = [T(10), T(5)]
    steps = [T(), T()]
    adam = est("aten::_fused_adam_", ps, ps, ps, ps, [], steps, 1e-3, 0.9, 0.999, 0.0, 1e-8,
               False, False)  # fmt: skip
    assert adam.flops == 13 * 15
    assert adam.bytes == 4 * 15 * 4 + 8 + 4 * 15 * 3  # p, g, m, v, steps read; p, m, v written
    adam_l2 = est("aten::_fused_adam_", ps, ps, ps, ps, [], steps, 1e-3, 0.9, 0.999, 1e-2,
                  1e-8, False, False)  # fmt: skip
    assert adam_l2.flops == 15 * 15
    adamw = est("aten::_fused_adamw_", ps, ps, ps, ps, [], steps, 1e-3, 0.9, 0.999, 1e-2, 1e-8,
                False, False)  # fmt: skip
    assert adamw.flops == 14 * 15


# ---- unknown, ignored, custom -----------------------------------------------------------


def test_unknown_op_is_not_silently_known():
    e = est("aten::my_made_up_op", T(3))
    assert (e.known, e.flops, e.family) == (False, 0.0, "other")


def test_views_are_free_and_copies_move_bytes():
    v = est("aten::view", T(4, 4), [16])
    assert (v.known, v.flops, v.bytes) == (True, 0, 0)
    c = est("aten::clone", T(4, 4))
    assert (c.family, c.flops, c.bytes) == ("memory", 0, 128)
    z = est("aten::zeros_like", T(4, 4))
    assert (z.flops, z.bytes) == (0, 64)
    assert est("profiler::_record_function_enter_new", "x").known


def test_custom_op_registration():
    from perfsuite.flops import Cost

    @register("mylib::triple", family="elementwise")
    def triple(call):
        x = call.tensor(0)
        return Cost(3 * x.numel, call.io_bytes([x]))

    try:
        e = est("mylib::triple", T(2, 5))
        assert (e.known, e.family, e.flops, e.bytes) == (True, "elementwise", 30, 80)
    finally:
        unregister("mylib::triple")
    assert not est("mylib::triple", T(2, 5)).known


def test_register_rejects_unknown_family():
    with pytest.raises(ValueError, match="family"):
        register("mylib::x", family="magic")


def test_integer_and_bool_work_costs_bytes_not_flops():
    """FLOPs are floating-point operations: an eq of int64 labels, a bool not and an int64 step
    counter's add_ cost their bytes and no FLOP; the same ops on floats (or on a dtype a trace
    could not name) keep their FLOPs. Seen on an H200: ncu measured 0 where 1,024 were counted."""
    from perfsuite.flops.call import OpCall, TensorMeta
    from perfsuite.flops.registry import estimate

    labels = TensorMeta((1024,), "int64")
    eq = estimate(OpCall("aten::eq", [labels, labels], [TensorMeta((1024,), "bool")]))
    assert (eq.flops, eq.bytes) == (0.0, 1024 * 8 * 2 + 1024)
    step = estimate(OpCall("aten::add_", [TensorMeta((), "int64"), 1]))
    assert step.flops == 0.0 and step.bytes > 0
    assert estimate(OpCall("aten::bitwise_not", [TensorMeta((8,), "bool")])).flops == 0.0
    logits = TensorMeta((1024,), "float32")
    assert estimate(OpCall("aten::eq", [logits, logits])).flops == 1024
    assert estimate(OpCall("aten::add_", [TensorMeta((4,), "long int"), 1])).flops == 0.0
    assert estimate(OpCall("aten::add_", [TensorMeta((4,), "mystery"), 1])).flops == 4


def test_linalg_vector_norm_reads_dim_after_ord():
    """linalg_vector_norm(self, ord, dim, keepdim): gradient clipping's total norm passes ord
    as a float in argument 1, which is no dim."""
    whole = est("aten::linalg_vector_norm", T(4, 5), 2.0, None, False)
    assert (whole.flops, whole.bytes) == (40, 80 + 4)
    rows = est("aten::linalg_vector_norm", T(4, 5), 2.0, [1], True)
    assert (rows.flops, rows.bytes) == (40, 80 + 4 * 4)
