"""Cost arithmetic, price origin (record / price table / unknown) and `perfsuite cost`."""

from __future__ import annotations

import json

import pytest

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.cli import main
from perfsuite.devices.accelerators import devices_used
from perfsuite.pricing import PriceError, builtin_prices, load_prices
from perfsuite.record import quantity, write_record
from perfsuite.record.tta import crossing_dict, first_crossing
from tests.conftest import extract_h100_run

TABLE = {"box.large": {"usd_per_hour": 3.6, "source": "test table: box.large"}}


def _trained(make_record, time_s, run_id="r", reached=0.95, **fields):
    rec = make_record([(1, time_s / 2, 0.5), (2, time_s, reached)], run_id=run_id, **fields)
    rec["time_to_accuracy"] = crossing_dict(first_crossing(rec["evaluations"], "top1", 0.9))
    rec["status"] = "reached" if rec["time_to_accuracy"]["reached"] else "not_reached"
    return rec


def _refused(note: str, option: str, ran_on: str, table_hw: str = "") -> bool:
    """`note` refuses `option` (the command line's or the recorded instance type), naming the
    hardware the run was measured on and the table's hardware for the type."""
    return (
        note.startswith(f"{option} not used")
        and ran_on in note
        and table_hw in note[note.index(ran_on) + len(ran_on) :]
    )


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
    assert [n for n in c.notes if n.startswith("inference ") and "NVIDIA H100 80GB HBM3" in n]


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
    (err,) = capsys.readouterr().err.splitlines()  # one line naming the option and its value
    assert err.startswith("perfsuite: error: ") and "--instance-type nope" in err


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
    (note,) = c.notes  # priced, with the type's origin said
    assert "p3.2xlarge" in note and "command line" in note
    c = priced({"name": "NVIDIA H100 80GB HBM3", "accelerator": "cuda", "count": 1})
    assert (c.training_cost_usd, c.price.usd_per_hour, c.price.origin) == (None, None, "unknown")
    assert _refused(c.notes[0], "--instance-type p3.2xlarge", "NVIDIA H100 80GB HBM3 (cuda)",
                    "NVIDIA Tesla V100-SXM2-16GB (cuda)")  # fmt: skip
    assert priced(v100, "p3.16xlarge").training_cost_usd is None  # 1 GPU, not the 8 there
    cpu = {"name": "AMD EPYC 7B13 (2 CPUs)", "accelerator": "cpu"}
    assert priced(cpu, "n2-standard-2").training_cost_usd == pytest.approx(0.097118)
    c = priced(cpu, "g4dn.xlarge")  # a CPU run priced as a T4 instance: no
    assert c.training_cost_usd is None and "(cpu), g4dn.xlarge is NVIDIA T4 (cuda)" in c.notes[0]
    c = priced({}, "p3.2xlarge")  # nothing to compare: not priced as a V100 on trust
    assert (c.training_cost_usd, c.price.usd_per_hour) == (None, None)
    (note,) = c.notes
    assert note.startswith("hardware unknown: ") and note.endswith(
        "--instance-type p3.2xlarge not used"
    )


def test_real_h100_run_is_not_priced_as_another_gpu(tmp_path, capsys):
    run = extract_h100_run(tmp_path)
    assert main(["cost", str(run), "--instance-type", "p3.2xlarge", "--json"]) == 0
    (c,) = json.loads(capsys.readouterr().out)["costs"]
    assert (c["price"]["usd_per_hour"], c["price"]["origin"]) == (None, "unknown")
    assert _refused(c["notes"][0], "--instance-type p3.2xlarge", "NVIDIA H100 80GB HBM3")
    assert c["inference_cost_per_10k_usd"] is None and c["inference_latency_s"] > 0


# ------------------------------------------- the hardware check: names, ranks, recorded types
def _priced_at(make_record, hardware, itype, **fields):
    rec = _trained(make_record, 3600.0, hardware=hardware, **fields)
    return cost_of(rec, builtin_prices(), itype)


def test_an_mlperf_import_of_the_h100_run_is_not_priced_as_a_v100(tmp_path, capsys):
    """The run itself is refused at p3.2xlarge, and so is its imported mllog.txt (hardware =
    {"name": submission_platform} only), which must not be priced at V100 rates, 3.06 USD/h."""
    run = extract_h100_run(tmp_path / "runs")
    out = tmp_path / "imported"
    args = [
        "import",
        "mlperf",
        str(run / "mllog.txt"),
        "--target",
        "cifar10=0.5",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    (imported,) = out.glob("*/run.json")
    rec = json.loads(imported.read_text())
    # the importer says what it can tell: the run.json beside the log is the run's
    assert rec["hardware"] == {
        "name": "NVIDIA H100 80GB HBM3",
        "accelerator": "cuda",
        "count": 1,
        "instance_type": None,
    }
    capsys.readouterr()
    assert main(["cost", str(run), str(out), "--instance-type", "p3.2xlarge", "--json"]) == 0
    costs = json.loads(capsys.readouterr().out)["costs"]
    assert [(c["price"]["usd_per_hour"], c["price"]["origin"]) for c in costs] == [
        (None, "unknown"),
        (None, "unknown"),
    ]
    refusal = costs[0]["price"]["why"]  # the run and its import: one refusal, said once each
    assert _refused(refusal, "--instance-type p3.2xlarge", "NVIDIA H100 80GB HBM3 (cuda)")
    assert [(c["price"]["why"], c["price_notes"]) for c in costs] == [(refusal, [refusal])] * 2
    # an import made before the importer recorded more: the kind is read from the name
    old = {"name": "NVIDIA H100 80GB HBM3"}
    c = cost_of({**rec, "hardware": old}, builtin_prices(), "p3.2xlarge")
    assert c.price.usd_per_hour is None
    assert _refused(c.price.why, "--instance-type p3.2xlarge", "NVIDIA H100 80GB HBM3 (cuda)")


@pytest.mark.parametrize(
    ("name", "itype", "usd"),
    [
        ("8 V100 (AWS p3.16xlarge)", "p3.16xlarge", 24.48),  # was refused: "names differ"
        ("1 V100 / 61 GB / 8 CPU (AWS p3.2xlarge)", "p3.2xlarge", 3.06),  # 61 GB: the host's
        ("8xTesla V100-SXM2-16GB", "p3.16xlarge", 24.48),
        ("Tesla V100-SXM2-16GB", "p3.2xlarge", None),  # no count: 1 or 8?
        ("p3.16xlarge", "p3.16xlarge", None),  # no model word in it
        ("16 p3.16xlarge (AWS)", "p3.16xlarge", None),  # 16 instances: 128 GPUs
        ("unspecified", "p3.2xlarge", None),  # no kind
    ],
)
def test_free_text_hardware_is_matched_on_its_model_word_and_count(make_record, name, itype, usd):
    c = _priced_at(make_record, {"name": name}, itype)
    assert c.price.usd_per_hour == usd
    if usd is None:
        assert c.price.why.startswith("hardware unknown: ") and itype in c.price.why
        assert c.price.why.endswith(f"--instance-type {itype} not used")
        assert c.notes[0] == c.price.why


def test_free_text_hardware_of_other_hardware_is_refused_saying_so(make_record):
    def why(hardware, itype):
        return _priced_at(make_record, hardware, itype).price.why

    # DAWNBench's import: accelerator read from the text, count None
    dawn = {"name": "8 V100 (AWS p3.16xlarge)", "accelerator": "cuda", "count": None}
    assert _priced_at(make_record, dawn, "p3.16xlarge").training_cost_usd == pytest.approx(24.48)
    itype = "--instance-type p3.2xlarge"  # 8 of them, not the 1 there
    assert _refused(why(dawn, "p3.2xlarge"), itype, "8 V100 (AWS p3.16xlarge) (cuda)")
    k80 = {"name": "1 K80 / 61 GB / 4 CPU (Amazon EC2 [p2.xlarge])"}
    assert _refused(why(k80, "p3.2xlarge"), itype, "1 K80")
    assert _refused(why({"name": "1 TPU v2 (GCP)"}, "p3.2xlarge"), itype, "(GCP) (tpu)")
    v100_32 = {"name": "Tesla V100-SXM2-32GB", "accelerator": "cuda", "count": 1}
    # a device name's memory, where both say
    assert _refused(why(v100_32, "p3.2xlarge"), itype, "Tesla V100-SXM2-32GB")
    a10g = why({"name": "NVIDIA A10G"}, "g5.xlarge")  # "NVIDIA": cuda; count unknown
    assert a10g.startswith("hardware unknown: ") and "how many A10G" in a10g
    assert a10g.endswith("--instance-type g5.xlarge not used")
    a10g = {"name": "NVIDIA A10G", "accelerator": "cuda", "count": 1}
    assert _priced_at(make_record, a10g, "g5.xlarge").training_cost_usd == pytest.approx(1.006)


def test_a_data_parallel_gpu_run_is_priced_for_every_gpu_it_used(make_record):
    """`--nproc 8` on 8 V100s: a record whose hardware.count is 1 for the whole job still ran
    on world_size GPUs, so it is an 8-GPU p3.16xlarge run, not a 1-GPU p3.2xlarge one (which
    would price it at 1/8 of its cost)."""
    v100 = {"name": "Tesla V100-SXM2-16GB", "accelerator": "cuda", "count": 1}
    ddp = {"world_size": 8}
    c = _priced_at(make_record, v100, "p3.2xlarge", distributed=ddp)
    assert (c.training_cost_usd, c.price.usd_per_hour) == (None, None)
    assert _refused(c.price.why, "--instance-type p3.2xlarge", "Tesla V100-SXM2-16GB x8 (cuda)")
    c = _priced_at(make_record, v100, "p3.16xlarge", distributed=ddp)
    assert c.training_cost_usd == pytest.approx(24.48)  # 1 h x 24.48 USD/h
    new = {**v100, "count": 8}  # count per job, as the runner records it
    assert _priced_at(make_record, new, "p3.16xlarge", distributed=ddp).training_cost_usd == (
        pytest.approx(24.48)
    )
    # a data-parallel CPU run is one machine: priced as one
    cpu = {"name": "AMD EPYC 7B13 (2 CPUs)", "accelerator": "cpu", "count": 1}
    c = _priced_at(make_record, cpu, "n2-standard-2", distributed={"world_size": 2})
    assert c.training_cost_usd == pytest.approx(0.097118)
    assert devices_used({"hardware": cpu, "distributed": {"world_size": 2}}) == 1
    assert devices_used({"hardware": v100, "distributed": ddp}) == 8
    assert devices_used({"hardware": v100}) == 1 and devices_used({}) is None


def test_a_recorded_instance_type_is_checked_against_the_hardware(make_record):
    """`perfsuite run --instance-type p3.2xlarge` on an H100 was priced as a V100 silently."""
    h100 = {"name": "NVIDIA H100 80GB HBM3", "accelerator": "cuda", "count": 1}
    c = _priced_at(make_record, {**h100, "instance_type": "p3.2xlarge"}, None)
    assert (c.training_cost_usd, c.price.usd_per_hour, c.price.origin) == (None, None, "unknown")
    assert c.instance_type == "p3.2xlarge"  # the record's own, shown as such
    (note,) = c.price_notes
    assert _refused(note, "recorded instance type p3.2xlarge", "NVIDIA H100 80GB HBM3 (cuda)")
    # with --instance-type too: that one is ignored, and the note saying why there is no
    # price is the recorded type's refusal
    c = _priced_at(make_record, {**h100, "instance_type": "p3.2xlarge"}, "g5.xlarge")
    ignored = c.price_notes[0]
    assert ignored.startswith("--instance-type g5.xlarge ignored") and "p3.2xlarge" in ignored
    assert c.price.why == c.price_notes[1] and c.price.why.startswith("recorded instance type")
    # the same hardware, or none to check, keeps the recorded type's price
    v100 = {"name": "Tesla V100-SXM2-16GB", "accelerator": "cuda", "count": 1}
    for hw in ({**v100, "instance_type": "p3.2xlarge"}, {"instance_type": "p3.2xlarge"}):
        c = _priced_at(make_record, hw, None)
        assert c.training_cost_usd == pytest.approx(3.06) and c.price_notes == []


def test_price_notes_and_why_there_is_no_price(make_record):
    rec = _trained(make_record, 3600.0, hardware={"instance_type": "nope"})
    c = cost_of(rec, TABLE, "box.large")
    ignored, unknown = c.price_notes
    assert ignored.startswith("--instance-type box.large ignored") and "nope" in ignored
    assert "nope" in unknown and "--prices" in unknown
    assert c.price.why == c.price_notes[1]  # not the first note
    assert c.notes[:2] == c.price_notes
    c = cost_of(_trained(make_record, 3600.0, hardware={"instance_type": "box.large"}), TABLE)
    assert c.price.why is None and c.price_notes == []


@pytest.mark.parametrize(
    ("status", "said"),
    [("crashed", "crashed"), ("interrupted", "interrupted"), ("running", "still running")],
)
def test_a_crashed_or_unfinished_run_is_left_out_not_dnc(make_record, tmp_path, capsys, status,
                                                         said):  # fmt: skip
    rec = _trained(make_record, 3600.0, reached=0.5, hardware={"instance_type": "box.large"})
    rec["status"] = status
    c = cost_of(rec, TABLE)
    assert (c.left_out, c.training_cost_usd, c.reached) == (said, None, False)
    assert c.notes[0].startswith(f"{said} ") and "not DNC" in c.notes[0]
    assert not any("DNC)" in n for n in c.notes)
    finished = _trained(make_record, 3600.0, reached=0.5, run_id="f")
    assert cost_of(finished, TABLE).left_out is None  # not_reached: DNC
    write_record(tmp_path / "r", rec)
    write_record(tmp_path / "f", finished)
    assert main(["cost", str(tmp_path)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert f"n/a ({said})" in rows["r"] and "DNC" not in rows["r"]
    assert "DNC" in rows["f"]
