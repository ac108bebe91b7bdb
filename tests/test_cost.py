"""Cost arithmetic, price origin (record / price table / unknown) and `perfsuite cost`."""

from __future__ import annotations

import json

import pytest

from analyzers.cost import cost_of
from analyzers.tta import crossing_dict, first_crossing
from perfsuite.cli import main
from perfsuite.pricing import PriceError, builtin_prices, load_prices
from perfsuite.record import quantity, write_record
from tests.conftest import extract_h100_run

TABLE = {"box.large": {"usd_per_hour": 3.6, "source": "test table: box.large"}}


def _trained(make_record, time_s, run_id="r", reached=0.95, **fields):
    rec = make_record([(1, time_s / 2, 0.5), (2, time_s, reached)], run_id=run_id, **fields)
    rec["time_to_accuracy"] = crossing_dict(first_crossing(rec["evaluations"], "top1", 0.9))
    rec["status"] = "reached" if rec["time_to_accuracy"]["reached"] else "not_reached"
    return rec


def test_training_cost_from_record_price(make_record):
    rec = _trained(make_record, 1800.0, cost={"usd_per_hour": quantity(3.06, "USD/h", "imported")})
    c = cost_of(rec, TABLE)
    assert c.training_cost_usd == pytest.approx(1.53)  # 0.5 h x 3.06 USD/h
    assert (c.price.origin, c.price.provenance) == ("record", "imported")
    assert c.training_cost_provenance == "derived"


def test_training_cost_from_price_table(make_record):
    rec = _trained(make_record, 7200.0, hardware={"instance_type": "box.large"})
    c = cost_of(rec, TABLE)
    assert c.training_cost_usd == pytest.approx(7.2)  # 2 h x 3.6 USD/h
    assert (c.price.origin, c.price.provenance, c.price.source) == (
        "price-table",
        "spec",
        "test table: box.large",
    )


def test_unknown_price_is_never_guessed(make_record):
    c = cost_of(_trained(make_record, 100.0), TABLE)
    assert c.price.origin == "unknown" and c.price.usd_per_hour is None
    assert c.training_cost_usd is None and c.training_time_s == 100.0
    assert "no hardware.instance_type" in c.notes[0]
    c = cost_of(_trained(make_record, 100.0, hardware={"instance_type": "nope"}), TABLE)
    assert c.training_cost_usd is None and "not in the price table" in c.notes[0]


def test_instance_type_override_only_for_records_without_one(make_record):
    c = cost_of(_trained(make_record, 3600.0), TABLE, instance_type="box.large")
    assert c.training_cost_usd == pytest.approx(3.6)
    assert "given on the command line" in c.notes[0]
    rec = _trained(make_record, 3600.0, hardware={"instance_type": "other"})
    c = cost_of(rec, {**TABLE, "other": {"usd_per_hour": 1.0, "source": "s"}}, "box.large")
    assert c.training_cost_usd == pytest.approx(1.0) and "ignored" in c.notes[0]


def test_not_reached_has_no_training_cost(make_record):
    rec = _trained(make_record, 3600.0, reached=0.5, hardware={"instance_type": "box.large"})
    c = cost_of(rec, TABLE)
    assert not c.reached and c.training_cost_usd is None and "DNC" in c.notes[0]


def test_inference_cost_per_10k(make_record):
    rec = make_record(hardware={"instance_type": "box.large"})
    rec["inference"] = {"latency": quantity(0.02, "s", "measured")}
    c = cost_of(rec, TABLE)
    # 0.02 s x 10,000 = 200 s = 1/18 h; x 3.6 USD/h = 0.2 USD
    assert c.inference_cost_per_10k_usd == pytest.approx(0.2)
    assert c.inference_cost_provenance == "derived"
    rec["inference"]["cost_per_item"] = quantity(1.5e-5, "USD", "imported")
    c = cost_of(rec, TABLE)
    assert c.inference_cost_per_10k_usd == pytest.approx(0.15)
    assert c.inference_cost_provenance == "imported"


def test_latency_measured_on_other_hardware_is_not_priced_at_the_runs_price(make_record):
    rec = make_record(hardware={"name": "AMD EPYC 7B13", "instance_type": "box.large"})
    rec["inference"] = {"latency": quantity(0.02, "s", "measured")}
    rec["inference"]["hardware"] = {"name": "AMD EPYC 7B13", "accelerator": "cpu"}
    assert cost_of(rec, TABLE).inference_cost_per_10k_usd == pytest.approx(0.2)  # same box
    rec["inference"]["hardware"] = {"name": "NVIDIA H100 80GB HBM3", "accelerator": "cuda"}
    c = cost_of(rec, TABLE)  # perfsuite infer --device cuda on another machine
    assert c.inference_cost_per_10k_usd is None and c.inference_latency_s == 0.02
    assert any(n.startswith("inference measured on NVIDIA H100 80GB HBM3, the price is for")
               for n in c.notes)  # fmt: skip


def test_price_table_loading(tmp_path, monkeypatch):
    builtin = builtin_prices()
    assert builtin["n2-standard-2"]["usd_per_hour"] > 0
    assert "as of" in builtin["p3.2xlarge"]["source"]
    user = tmp_path / "p.json"
    user.write_text(
        json.dumps({"instances": {"p3.2xlarge": {"usd_per_hour": 1.5}, "x": {"usd_per_hour": 2}}})
    )
    monkeypatch.setenv("PERFSUITE_PRICES", str(user))
    table = load_prices()
    assert table["p3.2xlarge"]["usd_per_hour"] == 1.5 and table["x"]["usd_per_hour"] == 2.0
    assert "PERFSUITE_PRICES" in table["x"]["source"]
    assert table["n2-standard-2"] == builtin["n2-standard-2"]  # others kept
    user.write_text(json.dumps({"instances": {"y": {"usd_per_hour": "cheap"}}}))
    with pytest.raises(PriceError, match=r"p\.json.*field instances\.y\.usd_per_hour"):
        load_prices(user)
    with pytest.raises(PriceError, match="file not found"):
        load_prices(tmp_path / "missing.json")


def test_cli(make_record, tmp_path, capsys):
    write_record(tmp_path / "runs" / "a", _trained(make_record, 1800.0, run_id="a"))
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"as_of": "2025-01", "instances": {"box.large": {"usd_per_hour": 4.0}}})
    )
    args = ["cost", str(tmp_path / "runs"), "--prices", str(prices)]
    assert main([*args, "--instance-type", "box.large", "--json"]) == 0
    (c,) = json.loads(capsys.readouterr().out)["costs"]
    assert c["training_cost_usd"] == pytest.approx(2.0)
    assert c["price"]["origin"] == "price-table" and "2025-01" in c["price"]["source"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "unknown" in out and "no hardware.instance_type" in out
    assert main([*args, "--instance-type", "nope"]) == 2
    assert "--instance-type nope: not in the price table" in capsys.readouterr().err


def test_a_heavy_latency_tail_is_said(make_record):
    """A user trial's digits run: mean 14.8 ms against a 358 us median, without a word."""
    rec = make_record(hardware={"instance_type": "box.large"})
    rec["inference"] = {"latency": quantity(0.0148, "s", "measured"), "latency_p50_s": 358e-6}
    (note,) = [n for n in cost_of(rec, TABLE).notes if n.startswith("latency mean")]
    assert note.startswith("latency mean 41.3x its median")
    rec["inference"]["latency_p50_s"] = 0.010  # 1.48x: a normal spread, nothing said
    assert not [n for n in cost_of(rec, TABLE).notes if n.startswith("latency mean")]


def test_instance_type_is_not_used_for_other_hardware(make_record):
    """--instance-type prices a record that names no type only where the table's hardware for
    that type is the record's (built-in table: p3.2xlarge = 1 V100, 3.06 USD/h)."""
    table = builtin_prices()

    def priced(hardware, itype="p3.2xlarge"):
        return cost_of(_trained(make_record, 3600.0, hardware=hardware), table, itype)

    v100 = {"name": "Tesla V100-SXM2-16GB", "accelerator": "cuda", "count": 1}
    c = priced(v100)  # torch's name for the table's "NVIDIA Tesla V100-SXM2-16GB"
    assert c.training_cost_usd == pytest.approx(3.06) and c.price.origin == "price-table"
    assert c.notes == ["instance type p3.2xlarge given on the command line, not recorded"]
    c = priced({"name": "NVIDIA H100 80GB HBM3", "accelerator": "cuda", "count": 1})
    assert (c.training_cost_usd, c.price.usd_per_hour, c.price.origin) == (None, None, "unknown")
    assert c.notes[0].startswith(
        "--instance-type p3.2xlarge not used: the run was measured on NVIDIA H100 80GB HBM3 "
        "(cuda), p3.2xlarge is NVIDIA Tesla V100-SXM2-16GB (cuda)"
    )
    assert priced(v100, "p3.16xlarge").training_cost_usd is None  # 1 GPU, not the 8 there
    cpu = {"name": "AMD EPYC 7B13 (2 CPUs)", "accelerator": "cpu"}
    assert priced(cpu, "n2-standard-2").training_cost_usd == pytest.approx(0.097118)
    c = priced(cpu, "g4dn.xlarge")  # a CPU run priced as a T4 instance: no
    assert c.training_cost_usd is None and "(cpu), g4dn.xlarge is NVIDIA T4 (cuda)" in c.notes[0]
    assert priced({}, "p3.2xlarge").training_cost_usd == pytest.approx(3.06)  # nothing to compare


def test_real_h100_run_is_not_priced_as_another_gpu(tmp_path, capsys):
    run = extract_h100_run(tmp_path)
    assert main(["cost", str(run), "--instance-type", "p3.2xlarge", "--json"]) == 0
    (c,) = json.loads(capsys.readouterr().out)["costs"]
    assert (c["price"]["usd_per_hour"], c["price"]["origin"]) == (None, "unknown")
    assert c["notes"][0].startswith("--instance-type p3.2xlarge not used: the run was measured")
    assert c["inference_cost_per_10k_usd"] is None and c["inference_latency_s"] > 0
