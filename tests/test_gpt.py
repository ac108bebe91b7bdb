"""The `gpt` workload: model options, KV cache, data layouts and split, switches, and one tiny
end-to-end run whose record carries the config, model FLOPs per token, tokens/s and MFU."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from perfsuite.record import RecordError, load_record, validate_record  # noqa: E402
from perfsuite.runner import run_workload  # noqa: E402
from perfsuite.runner.options import RunOptions  # noqa: E402
from perfsuite.workloads import get_workload  # noqa: E402
from perfsuite.workloads.gpt.data import (  # noqa: E402
    WindowSource,
    char_tokens,
    eval_offsets,
    load_tokens,
)
from perfsuite.workloads.gpt.model import (  # noqa: E402
    GPT,
    GPTConfig,
    KVCache,
    apply_rotary,
    rotary_tables,
)
from perfsuite.workloads.gpt.presets import PRESETS, lr_factor  # noqa: E402
from perfsuite.workloads.switches import parse_switches  # noqa: E402

SPEC_HZ = 4.0e9  # a named CPU spec for the MFU tests: 16 lanes x 2 x 2 FMA x 4 GHz per core


@pytest.fixture
def named_spec(monkeypatch):
    """The CPU spec as an avx512f core at 4 GHz (1.024e11 FLOP/s float32 per thread), above
    any reading of this machine's benchmarks, so MFU has the same named denominator
    wherever the tests run (a flags spec a matmul beats has none: test_peaks_load)."""
    from perfsuite.ceilings import resolve
    from perfsuite.ceilings.cpuspec import cpu_spec

    def spec(name, threads):
        return cpu_spec(name, {"avx512f"}, (SPEC_HZ, "given by the test"), threads or 1)

    monkeypatch.setattr(resolve, "this_cpu_spec", spec)


TINY = ["n_layer=2", "n_head=2", "n_embd=32", "block_size=16", "iters_per_epoch=4"]


def tiny(**kw) -> GPTConfig:
    return GPTConfig(**{"vocab_size": 20, "block_size": 12, "n_layer": 2, "n_head": 2,
                        "n_embd": 16, **kw})  # fmt: skip


@pytest.mark.parametrize(
    "options",
    [{}, {"rotary": True, "qk_norm": True, "relu2": True, "untied_head": True, "softcap": 5.0}],
    ids=["plain", "speedrun"],
)
def test_kv_cache_decoding_equals_the_full_forward(options):
    torch.manual_seed(0)
    model = GPT(tiny(**options)).eval()
    if options.get("untied_head"):
        torch.nn.init.normal_(model.head.weight, 0, 0.02)  # zero init would hide errors
    x = torch.randint(0, 20, (1, 10))
    with torch.no_grad():
        full = model(x)
        cache = KVCache(model.cfg, 1, x.device, torch.float32)
        steps = [model(x[:, :6], cache)[:, -1]]
        for i in range(6, 10):
            steps.append(model(x[:, i : i + 1], cache)[:, -1])
    assert cache.length == 10
    got = torch.stack(steps[1:], dim=1)
    torch.testing.assert_close(got, full[:, 6:10], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(steps[0], full[:, 5], rtol=1e-4, atol=1e-5)
    if options.get("softcap"):
        assert full.abs().max() < 5.0


def test_rotary_scores_depend_on_the_position_difference_only():
    cos, sin = rotary_tables(16, 8)
    q, k = torch.randn(8), torch.randn(8)

    def score(i: int, j: int) -> float:
        qi = apply_rotary(q.view(1, 1, 1, 8), cos[i : i + 1], sin[i : i + 1])
        kj = apply_rotary(k.view(1, 1, 1, 8), cos[j : j + 1], sin[j : j + 1])
        return float((qi * kj).sum())

    assert score(5, 2) == pytest.approx(score(9, 6), rel=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), rel=1e-3)


def test_model_is_causal():
    torch.manual_seed(0)
    model = GPT(tiny(rotary=True)).eval()
    x = torch.randint(0, 20, (1, 12))
    y = x.clone()
    y[0, 8] = (y[0, 8] + 1) % 20
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :8], b[:, :8])
    assert not torch.allclose(a[:, 8:], b[:, 8:])


def test_config_errors_are_one_line():
    with pytest.raises(ValueError, match="n_embd 30 is not divisible by n_head 4"):
        GPTConfig(n_embd=30, n_head=4)
    with pytest.raises(ValueError, match="longer than block_size"):
        GPT(tiny())(torch.zeros(1, 13, dtype=torch.long))


def test_char_split_is_the_first_90_percent(tmp_path):
    text = "abcdefghij" * 10  # 100 characters
    f = tmp_path / "t.txt"
    f.write_text(text, encoding="utf-8")
    tokens = load_tokens(str(f))
    assert tokens.kind == "char" and tokens.chars == "abcdefghij" and tokens.vocab_size == 10
    assert len(tokens.train) == 90 and len(tokens.val) == 10
    assert "".join(tokens.chars[i] for i in tokens.train) == text[:90]
    assert "".join(tokens.chars[i] for i in tokens.val) == text[90:]
    with pytest.raises(ValueError, match="too short"):
        char_tokens("ab", "x.txt")


def test_folder_of_text_files_in_name_order(tmp_path):
    (tmp_path / "b.txt").write_text("bbbb" * 5, encoding="utf-8")
    (tmp_path / "a.txt").write_text("aaaa" * 5, encoding="utf-8")
    tokens = load_tokens(str(tmp_path))
    assert "2 text files" in tokens.description
    assert tokens.chars[tokens.train[0]] == "a" and tokens.chars[tokens.val[-1]] == "b"
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match=r"bad\.txt: not UTF-8"):
        load_tokens(str(tmp_path))


def test_uint16_shards_are_memory_mapped(tmp_path):
    np.arange(1000, dtype="<u2").tofile(tmp_path / "train.bin")
    (np.arange(300, dtype="<u2") % 7).tofile(tmp_path / "val.bin")
    tokens = load_tokens(str(tmp_path))
    assert tokens.kind == "uint16 shards" and isinstance(tokens.train, np.memmap)
    assert tokens.vocab_size == 1000  # largest id + 1
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": 1024}))
    assert load_tokens(str(tmp_path)).vocab_size == 1024
    (tmp_path / "meta.json").write_text(json.dumps({"vocab_size": 10}))
    with pytest.raises(ValueError, match=r"meta\.json: field vocab_size: 10 but the shards"):
        load_tokens(str(tmp_path))
    (tmp_path / "meta.json").unlink()
    src = WindowSource(load_tokens(str(tmp_path)), 8, 4, 3, 2, "cpu")
    batches = list(src.train_batches(4, torch.Generator().manual_seed(0)))
    assert len(batches) == 3
    x, y = batches[0].inputs[0], batches[0].target
    assert x.shape == (4, 8) and torch.equal(x[:, 1:], y[:, :-1])  # next-token targets
    assert torch.equal(y - x, torch.ones_like(x))  # train.bin counts up by one
    (tmp_path / "val.bin").write_bytes(b"\x01\x00\x02")
    with pytest.raises(ValueError, match=r"val\.bin: 3 bytes is not a uint16"):
        load_tokens(str(tmp_path))


def test_evaluation_windows_are_fixed_and_spread():
    assert eval_offsets(100, 9, 4) == [0, 30, 60, 90]
    with pytest.raises(ValueError, match="shorter than block_size"):
        eval_offsets(5, 8, 2)


def test_schedule_warms_up_then_decays_to_the_floor():
    assert lr_factor(0, 100, 10, 0.1) == pytest.approx(0.1)
    assert lr_factor(9, 100, 10, 0.1) == 1.0
    assert lr_factor(10, 100, 10, 0.1) == 1.0
    assert lr_factor(55, 100, 10, 0.1) == pytest.approx(0.55)
    assert lr_factor(100, 100, 10, 0.1) == pytest.approx(0.1)


def test_presets_follow_nanogpt_and_techniques_are_switches():
    sc = PRESETS["shakespeare_char"]
    x = sc.extra
    assert (x["n_layer"], x["n_head"], x["n_embd"], x["block_size"]) == (6, 6, 384, 256)
    assert (sc.batch_size, sc.lr, x["dropout"], x["beta2"], x["target"]) == (
        64,
        1e-3,
        0.2,
        0.99,
        1.47,
    )
    assert sc.epochs * x["iters_per_epoch"] == 5000
    fast = PRESETS["fast"].extra
    assert all(fast[t] for t in ("muon", "rotary", "qk_norm", "relu2", "untied_head", "softcap"))
    wl = get_workload("gpt")
    s = parse_switches(["muon=off,rotary", "bf16"], wl.switches, "gpt")
    assert s.recipe_flags == {"muon": False, "rotary": True} and s.precision == "bf16"
    with pytest.raises(ValueError, match="does not support switch 'muon'"):
        parse_switches(["muon"], get_workload("digits").switches, "digits")


def test_muon_trains_hidden_matrices_only():
    wl = get_workload("gpt")
    r = wl.presets()["fast"]
    r.extra.update(n_layer=1, n_embd=16, n_head=2, block_size=8)
    wl.configure(r)
    model = wl.build_model(r)
    opt, sched = wl.make_optimizer(model, r, 10)
    muon, _ = opt.optimizers
    hidden = {id(p) for g in muon.param_groups for p in g["params"]}
    assert hidden == {id(p) for p in model.blocks.parameters() if p.ndim == 2}
    assert id(model.wte.weight) not in hidden and id(model.head.weight) not in hidden
    assert sched.state_dict()["step_count"] == 0


def test_run_synthetic_one_epoch_records_config_model_flops_and_mfu(tmp_path, named_spec):
    """The issue's done-when, tiny: config, 6N + 12·L·d·T, tokens/s and MFU in (0, 1]; the
    generous threshold is met, so the batch-1 generation latency is measured too."""
    opts = RunOptions(
        workload="gpt",
        synthetic=True,
        epochs=1,
        out=str(tmp_path),
        overrides=[*TINY, "eval_batches=1", "gen_tokens=3", "gen_prompts=2"],
        threshold=100.0,
        progress=False,
        inference_limit=3,
        profile_seconds=0.0,
        profile_steps=1,
        threads=1,  # tiny ops: one thread is not slowed by a busy machine's other processes
    )
    rec = load_record(run_workload(opts) / "run.json")
    mf = rec["model_flops"]
    assert mf["config"] == {"n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 16,
                            "vocab_size": 65, "batch_size": 12}  # fmt: skip
    n = mf["parameters"]["non_embedding"]
    assert n == 65 * 32 + 2 * (12 * 32 * 32 + 64) + 32
    assert mf["per_token"]["value"] == 6 * n + 12 * 2 * 32 * 16
    assert mf["per_token"]["provenance"] == "modeled"
    step = rec["throughput"]["step_time"]["value"]
    rate = rec["throughput"]["samples_per_s"]["value"]
    assert mf["tokens_per_s"]["value"] == pytest.approx(rate * 16)
    assert rate == pytest.approx(12 / step)
    assert 0 < mf["mfu"]["value"] <= 1
    peak = mf["peak"]["value"]
    assert peak == 64 * SPEC_HZ and mf["peak"]["provenance"] == "spec"  # 1 thread, named
    assert "from the CPU flags: avx512f" in mf["peak"]["source"]
    assert mf["mfu"]["value"] == pytest.approx(mf["per_token"]["value"] * rate * 16 / peak)
    assert 1.0 < mf["counted_over_model"] < 1.5
    bad = json.loads(json.dumps({k: v for k, v in rec.items() if not k.startswith("_")}))
    bad["model_flops"]["mfu"]["unit"] = "%"
    with pytest.raises(RecordError, match=r"model_flops\.mfu\.unit"):
        validate_record(bad)
    assert rec["task"]["direction"] == "lower" and rec["task"]["name"] == "gpt-synthetic"
    val = rec["evaluations"][0]["metrics"]["val_loss"]
    assert abs(val - math.log(65)) < 0.2  # random tokens: ln(vocab)
    entry = rec["inference_measurements"][-1]  # --inference-limit: partial, kept here only
    assert entry["examples"] == 3 and entry["partial"]
    gen = entry["generation"]
    assert gen["kv_cache"] and gen["prompt_tokens"] == 8 and gen["new_tokens"] == 3
    assert gen["time_to_first_token"]["value"] > 0 and gen["decode_per_token"]["value"] > 0


def test_gpt_track_example_records_mfu(tmp_path, named_spec):
    """examples/gpt_track.py: a user's own GPT loop under perfsuite.track, model_flops given."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "examples"))
    try:
        import gpt_track
    finally:
        sys.path.pop(0)
    run_dir = gpt_track.main(
        None, str(tmp_path), epochs=2, steps=3, profile_steps=1, measure_peaks=True
    )
    rec = load_record(Path(run_dir) / "run.json")
    assert rec["task"]["direction"] == "lower" and rec["evaluations"]
    mf = rec["model_flops"]
    c = mf["config"]
    assert (c["n_layer"], c["n_embd"], c["block_size"], c["batch_size"]) == (2, 32, 32, 16)
    n = mf["parameters"]["non_embedding"]
    assert mf["per_token"]["value"] == 6 * n + 12 * 2 * 32 * 32
    assert mf["tokens_per_s"]["value"] > 0
    assert 0 < mf["mfu"]["value"] <= 1
    assert mf["counted_per_token"]["value"] > mf["per_token"]["value"] * 0.9
    with pytest.raises(ValueError, match="missing config field"):
        gpt_track.perfsuite.track(
            "x", threshold=1.0, model_flops={"n_layer": 2, "non_embedding_parameters": 9}
        )


def test_tiny_shakespeare_split_and_vocabulary():
    from tests.conftest import shared_path

    tokens = load_tokens(str(shared_path("text", "tinyshakespeare.txt")))
    assert tokens.vocab_size == 65  # nanoGPT's shakespeare_char vocabulary
    assert (len(tokens.train), len(tokens.val)) == (1_003_854, 111_540)
    assert tokens.chars[0] == "\n" and tokens.chars[-1] == "z"
