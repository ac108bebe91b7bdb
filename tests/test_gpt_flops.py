"""FLOPs of the GPT training step: the counter against the analytic transformer formula, each
SDPA kernel variant, Muon's Newton-Schulz products, torch's own FlopCounterMode, and the MFU
inputs worked by hand on one config."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from perfsuite.flops import OpCall, OpCounter, TensorMeta, estimate  # noqa: E402
from perfsuite.flops.mfu import mfu  # noqa: E402
from perfsuite.flops.transformer import model_flops_per_token  # noqa: E402
from perfsuite.workloads.gpt.model import GPT, GPTConfig, count_parameters  # noqa: E402
from perfsuite.workloads.gpt.muon import NS_STEPS, Muon  # noqa: E402
from perfsuite.workloads.newton_schulz import newton_schulz_flops  # noqa: E402

CONFIGS = [
    GPTConfig(vocab_size=65, block_size=16, n_layer=2, n_head=2, n_embd=32),
    GPTConfig(vocab_size=50, block_size=24, n_layer=3, n_head=4, n_embd=48, untied_head=True),
]


def analytic_forward(cfg: GPTConfig, batch: int) -> tuple[int, int]:
    """(matmul, attention) forward FLOPs of one batch, from the architecture alone: per token
    and layer Q/K/V 2·d·3d, output projection 2·d·d, MLP 2·d·4d + 2·4d·d; the head 2·d·V per
    token; attention QKᵀ and PV 2·T·d each per token and layer (causal mask not halved)."""
    tokens = batch * cfg.block_size
    d = cfg.n_embd
    matmul = tokens * (cfg.n_layer * 24 * d * d + 2 * d * cfg.vocab_size)
    attention = cfg.n_layer * 4 * batch * cfg.block_size**2 * d
    return matmul, attention


def counted_step(model: GPT, batch: int, **counter_kw):
    x = torch.randint(0, model.cfg.vocab_size, (batch, model.cfg.block_size))
    counter = OpCounter(**counter_kw)
    with counter:
        with counter.phase("forward"):
            logits = model(x)
            loss = F.cross_entropy(logits.flatten(0, 1), x.flatten())
        with counter.phase("backward"):
            loss.backward()
    return counter.result()


def family_flops(result, families, phases=("forward", "backward")) -> float:
    return sum(r.flops for r in result.per_op if r.family in families and r.phase in phases)


@pytest.mark.parametrize("cfg", CONFIGS, ids=["tied-2x32", "untied-3x48"])
def test_counted_matmul_and_attention_are_three_times_the_analytic_forward(cfg):
    torch.manual_seed(0)
    model = GPT(cfg)
    res = counted_step(model, batch=3)
    matmul, attention = analytic_forward(cfg, 3)
    fwd = family_flops(res, ("matmul", "attention"), ("forward",))
    assert fwd == pytest.approx(matmul + attention, rel=0.01)
    both = family_flops(res, ("matmul", "attention"))
    assert both == pytest.approx(3 * (matmul + attention), rel=0.01)
    assert family_flops(res, ("attention",)) == pytest.approx(3 * attention, rel=0.01)


def test_model_flops_formula_matches_the_analytic_count_for_a_tied_head():
    """6N + 12·L·d·T per token is the analytic matmul + attention count x 3 when N is every
    matrix that multiplies activations (no biases, norms add only 2 x d per norm)."""
    cfg = CONFIGS[0]
    model = GPT(cfg)
    n = count_parameters(model)["non_embedding"]
    matmul, attention = analytic_forward(cfg, 1)
    norms = (2 * cfg.n_layer + 1) * cfg.n_embd  # LayerNorm scales: in N, in no matmul
    per_token = model_flops_per_token(n, cfg.n_layer, cfg.n_embd, cfg.block_size)
    assert per_token == 3 * (matmul + attention) // cfg.block_size + 6 * norms


def test_parameter_split_by_hand():
    cfg = CONFIGS[0]  # V 65, T 16, L 2, d 32, tied
    p = count_parameters(GPT(cfg))
    # wte 65*32 = 2080 (= head); wpe 16*32 = 512; per layer 12 d^2 = 12288 + 2 LN scales 64;
    # ln_f 32
    assert p["total"] == 2080 + 512 + 2 * (12288 + 64) + 32
    assert p["embedding"] == 512
    assert p["non_embedding"] == 2080 + 2 * (12288 + 64) + 32
    untied = count_parameters(GPT(CONFIGS[1]))
    d, v, t = 48, 50, 24
    assert untied["embedding"] == v * d + t * d  # both tables; the head is its own matrix


def test_sdpa_variants_each_counted():
    """Flash (CPU and CUDA), memory-efficient, cuDNN and the fused override all cost
    2·B·H·L·S·(E+Ev) forward and twice that backward; the causal flag changes nothing
    (not halved)."""
    q, k, v = (TensorMeta((2, 4, 16, 8), "float32") for _ in range(3))
    want = 2 * 8 * 16 * 16 * 16
    for name in (
        "aten::_scaled_dot_product_flash_attention_for_cpu",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_fused_attention_overrideable",
    ):
        for causal in (False, True):
            e = estimate(OpCall(name, [q, k, v, 0.0, causal]))
            assert (e.family, e.flops) == ("attention", want), name
            back = estimate(OpCall(name + "_backward", [q, q, k, v, q, None, 0.0, causal]))
            assert (back.family, back.flops) == ("attention", 2 * want), name


def test_math_sdpa_counts_its_matmuls_the_same():
    """The math variant decomposes into batched matmuls (and a mask, softmax...): its
    matmul FLOPs equal the fused kernel's attention FLOPs, forward and backward."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    cfg = CONFIGS[0]
    torch.manual_seed(0)
    model = GPT(cfg)
    fused = counted_step(model, batch=2)
    model.zero_grad(set_to_none=True)
    with sdpa_kernel(SDPBackend.MATH):
        math = counted_step(model, batch=2)
    assert family_flops(math, ("attention",)) == 0
    assert family_flops(math, ("matmul",)) == pytest.approx(
        family_flops(fused, ("matmul", "attention")), rel=1e-9
    )


def test_agrees_with_torch_flop_counter_where_it_counts_the_same_ops():
    """torch.utils.flop_counter counts matmuls and (CUDA) SDPA kernels; it has no entry for
    CPU flash attention, so here: with the fused CPU kernel it equals our matmuls alone, and
    with the math kernel (attention as batched matmuls) it equals our matmuls + attention."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    cfg = CONFIGS[1]
    torch.manual_seed(0)
    model = GPT(cfg)
    x = torch.randint(0, cfg.vocab_size, (2, cfg.block_size))

    def theirs() -> int:
        model.zero_grad(set_to_none=True)
        with FlopCounterMode(display=False) as mode:
            F.cross_entropy(model(x).flatten(0, 1), x.flatten()).backward()
        return mode.get_total_flops()

    fused = counted_step(model, batch=2)
    assert family_flops(fused, ("matmul",)) == theirs()
    with sdpa_kernel(SDPBackend.MATH):
        assert family_flops(fused, ("matmul", "attention")) == theirs()


def test_muon_newton_schulz_products_are_counted():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(24, 40))
    opt = Muon([w], lr=0.01)
    w.grad = torch.randn_like(w)
    counter = OpCounter()
    with counter, counter.phase("optimizer"):
        opt.step()
    res = counter.result()
    matmul = family_flops(res, ("matmul",), ("optimizer",))
    assert matmul == newton_schulz_flops(24, 40, NS_STEPS)
    assert newton_schulz_flops(24, 40, NS_STEPS) == 5 * (4 * 24 * 24 * 40 + 2 * 24**3)
    assert newton_schulz_flops(40, 24, NS_STEPS) == newton_schulz_flops(
        24, 40, NS_STEPS
    )  # tall: transposed


def test_mfu_inputs_by_hand():
    """One config worked by hand: L 2, d 32, T 16, N 26,800, batch 3, step 0.5 s, fp32 roof
    spec 1e9 FLOP/s. Per token 6 x 26,800 + 12 x 2 x 32 x 16 = 160,800 + 12,288 = 173,088; tokens/s
    3 x 16 / 0.5 = 96; MFU 173,088 x 96 / 1e9 = 0.016616448."""
    assert model_flops_per_token(26_800, 2, 32, 16) == 173_088
    q = {"unit": "FLOP/s", "provenance": "measured"}
    record = {
        "run_id": "r",
        "model_flops": {
            "config": {"n_layer": 2, "n_embd": 32, "block_size": 16, "batch_size": 3},
            "tokens_per_sample": 16,
            "per_token": {"value": 173_088, "unit": "FLOP", "provenance": "modeled"},
        },
        "throughput": {"step_time": {"value": 0.5, "unit": "s", "provenance": "measured"}},
        "work": {"flops_per_step": 3 * 16 * 200_000.0, "batch_size": 3},
        "ceilings": {
            "device": "cpu",
            "spec": {"id": "t", "flops": {"float32": 1e9}, "source": "by hand"},
            "roofs": {"fp32": {"peak_flops": {"value": 2e9, **q}}},
        },
        "math": {"param_dtype": "float32", "source": "test"},
        "hardware": {"accelerator": "cpu"},
        "config": {"device": "cpu"},
    }
    m = mfu(record)
    assert m.tokens_per_s == 96
    assert m.peak_math == "fp32"
    assert m.mfu == pytest.approx(0.016616448, rel=1e-12)  # over the spec, not the 2e9 roof
    assert m.measured_peak_utilization == pytest.approx(0.016616448 / 2, rel=1e-12)
    assert m.counted_flops_per_token == 200_000
    assert m.hfu == pytest.approx(200_000 * 96 / 1e9)
    assert m.counted_over_model == pytest.approx(200_000 / 173_088)
    record["throughput"]["samples_per_s"] = {"value": 5.0, "unit": "sample/s"}
    assert mfu(record).tokens_per_s == 80  # delivered samples win over batch / step time
    del record["ceilings"]
    assert mfu(record).mfu is None and "peak" in mfu(record).notes[0]
