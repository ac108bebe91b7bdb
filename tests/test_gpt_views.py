"""Tokens/s and MFU in every view: `perfsuite roofline` (text and --json), the report's
overview, `compare`, the Python API's run summary and study tables, on hand-built records."""

from __future__ import annotations

import json

import pytest

from perfsuite.analyzers.runs.compare import compare, items_from_records
from perfsuite.analyzers.runs.study import analyze_study, run_point
from perfsuite.cli import main
from perfsuite.flops.mfu import mfu
from perfsuite.record import quantity, write_record
from perfsuite.study.render import headers, rows
from perfsuite.views.compare_rows import side_rows
from tests.helpers import build_record

# per token 1e6 FLOP (modeled); batch 32 x 64 tokens per step of 0.1 s -> 20,480 token/s;
# 2.048e10 FLOP/s over the 1e11 fp32 spec -> MFU 0.2048 (over the 8e10 measured roof: 0.256);
# counted 2e9 / 2048 tokens -> 976,562.5
PER_TOKEN, MFU = 1e6, 0.2048
SPEC = {"id": "test-cpu", "name": "Test CPU", "flops": {"float32": 1e11}, "source": "test table"}


def with_roof(rec, measured):
    """`rec` with the test spec and a measured fp32 roof of `measured` FLOP/s."""
    pk = quantity(measured, "FLOP/s", "measured", "matmul")
    rec["ceilings"].update(spec=dict(SPEC), peak_flops=pk)
    rec["ceilings"]["roofs"]["fp32"] = {"peak_flops": pk}
    return rec


def gpt_record(make_record, run_id="g1", step=0.1):
    rec = build_record(make_record)
    rec["run_id"] = run_id
    rec["task"]["direction"] = "lower"
    rec["throughput"] = {"step_time": quantity(step, "s", "measured")}
    rec["model_flops"] = {
        "config": {
            "n_layer": 2,
            "n_head": 2,
            "n_embd": 32,
            "block_size": 64,
            "vocab_size": 65,
            "batch_size": 32,
        },
        "tokens_per_sample": 64,
        "per_token": quantity(PER_TOKEN, "FLOP", "modeled", "6N + 12LdT"),
    }
    return with_roof(rec, 8e10)


def test_mfu_of_a_hand_built_record(make_record):
    m = mfu(gpt_record(make_record))
    assert m.tokens_per_s == pytest.approx(20_480)
    assert m.mfu == pytest.approx(MFU)
    assert m.counted_flops_per_token == pytest.approx(2e9 / 2048)
    assert mfu(build_record(make_record)) is None  # no transformer section: no MFU


def test_two_records_of_one_machine_share_the_mfu_denominator(make_record):
    """MFU is over the fixed, named spec peak: a measured roof that grew between two runs
    (1.95e11 -> 2.49e11 of a conv reading) moves the measured-peak utilization, never MFU."""
    a = mfu(with_roof(gpt_record(make_record, "a"), 1.95e11))
    b = mfu(with_roof(gpt_record(make_record, "b"), 2.49e11))
    assert a.peak_flops == b.peak_flops == 1e11 and a.mfu == b.mfu == pytest.approx(MFU)
    assert a.peak_provenance == "spec" and a.peak_source == "test table (test-cpu)"
    assert a.measured_peak_utilization == pytest.approx(2.048e10 / 1.95e11)
    assert b.measured_peak_utilization == pytest.approx(2.048e10 / 2.49e11)
    rec = gpt_record(make_record)
    rec["ceilings"]["spec"] = {"id": "cpu-flags", "flops": {}, "source": "spec unknown: no clock"}
    none = mfu(rec)
    assert none.mfu is None and none.measured_peak_utilization == pytest.approx(0.256)
    assert "no fp32 spec peak: the spec has no fp32 value (spec unknown: no clock)" in none.notes[0]


def test_roofline_cli_text_and_json(make_record, tmp_path, capsys):
    rec = gpt_record(make_record)
    rec["_path"] = None
    write_record(tmp_path / "g1", {k: v for k, v in rec.items() if k != "_path"})
    assert main(["roofline", str(tmp_path / "g1")]) == 0
    text = capsys.readouterr().out
    assert "Model FLOPs utilization (transformer)" in text
    assert "20.48%" in text and "20.5 ktoken/s" in text
    assert "the fp32 spec peak (100 GFLOP/s: test table (test-cpu))" in text  # named, not a roof
    assert main(["roofline", str(tmp_path / "g1"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["mfu"]["mfu"] == pytest.approx(MFU)
    assert data["mfu"]["tokens_per_s"] == pytest.approx(20_480)


def test_report_overview_rows(make_record):
    from perfsuite.report.overview_section import _figures

    rows = {r[0]: r[1] for r in _figures(gpt_record(make_record), None)}
    assert rows["MFU"] == "20.48%"
    assert rows["of the measured peak"] == "25.60%"  # over the 8e10 measured roof, beside MFU
    assert rows["tokens/s"] == "20.5 ktoken/s"
    assert "MFU" not in {r[0] for r in _figures(build_record(make_record), None)}


def test_compare_rows_only_for_transformer_runs(make_record):
    a, b = gpt_record(make_record, "a"), gpt_record(make_record, "b", step=0.2)
    c = compare(items_from_records([a, b]))
    assert [s.mfu for s in c.items] == pytest.approx([MFU, MFU / 2])
    _, table = side_rows(c)
    got = {r[0]: r[1:] for r in table}
    assert got["MFU (6N + 12LdT, of the spec peak)"] == ["20.48%", "10.24%"]
    assert got["target"][0] == "top1 <= 0.9"  # the task's direction (a loss falls to it)
    assert got["tokens/s"][1] == "10.2 ktoken/s (x0.500)"
    x, y = build_record(make_record), build_record(make_record)
    y["run_id"] = "roof2"
    plain = compare(items_from_records([x, y]))
    assert "tokens/s" not in {r[0] for r in side_rows(plain)[1]}


def test_api_summary_and_study_columns(make_record):
    from perfsuite.api.run import Run

    rec = gpt_record(make_record)
    summary = Run(rec).summary
    assert summary["mfu"] == pytest.approx(MFU)
    assert summary["tokens_per_s"] == pytest.approx(20_480)
    assert summary["model_flops_per_token"] == PER_TOKEN
    rec["status"] = "reached"  # a finished run: studies count only those
    point = run_point(rec)
    assert point.mfu == pytest.approx(MFU)
    study = {"study_id": "s", "kind": "factor", "workload": "gpt",
             "configurations": [{"index": 0, "name": "baseline", "switches": []}]}  # fmt: skip
    result = analyze_study(study, {"baseline": [rec]})
    assert headers(result)[-2:] == ["tokens/s", "MFU"]
    assert rows(result)[0][-2:] == ["20.5 ktoken/s", "20.48%"]


def test_generation_and_loss_in_infer_and_report_rows(make_record):
    from perfsuite.cli.infer_cmd import render
    from perfsuite.report.inference_section import inference_rows

    gen = {
        "batch_size": 1,
        "kv_cache": True,
        "prompt_tokens": 32,
        "new_tokens": 8,
        "prompts": 5,
        "time_to_first_token": quantity(0.004, "s", "measured"),
        "decode_per_token": quantity(0.0015, "s", "measured"),
    }
    entry = {
        "rule": "dawnbench",
        "latency": quantity(0.002, "s", "measured", "mean"),
        "latency_p50_s": 0.002,
        "latency_p90_s": 0.003,
        "latency_p99_s": 0.004,
        "examples": 10,
        "eval_size": 10,
        "partial": False,
        "warmup_examples": 2,
        "mode": "eager",
        "precision": "fp32",
        "device": "cpu",
        "hardware": {"name": "cpu"},
        "host": "h",
        "threads": 1,
        "metrics": {"val_loss": 1.9366},
        "energy": {"reason": "none"},
        "generation": gen,
    }
    text = render(entry, None)
    assert "val_loss 1.9366" in text  # a loss, not a percentage
    assert "first token 4 ms" in text and "decode 1.5 ms per token" in text
    rec = make_record()
    rec["inference"] = entry
    rows = dict(inference_rows(rec))
    assert rows["accuracy of these predictions"] == "val_loss 1.9366"
    assert rows["generation (batch 1, KV cache)"].startswith("time to first token 4 ms")
