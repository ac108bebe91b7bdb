"""DAWNBench importer: one fixture per messy case, exact time-to-accuracy seconds and flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.importers import ImportFailure
from perfsuite.importers.common import parse_date
from perfsuite.importers.dawnbench import load_entry
from perfsuite.record import load_record, validate_record

FIX = Path(__file__).parent / "fixtures" / "dawnbench"
ENTRIES = FIX / "entries"


def entry(rel: str):
    item = load_entry(ENTRIES / rel)
    validate_record(item.record)
    return item.record


def cifar(name: str):
    return entry(f"CIFAR10/train/{name}.json")


def has_flag(rec, *tokens: str) -> bool:
    """Whether one flag carries every token."""
    return any(all(t in f for t in tokens) for f in rec["flags"])


def test_normal_cifar10_first_row_at_threshold_counts():
    rec = cifar("normal_resnet9")
    tta = rec["time_to_accuracy"]
    # row 3 is 93.99 (below), row 4 is exactly 94.00 (>= counts) at 0.04 h
    assert (tta["reached"], tta["time_s"], tta["epoch"], tta["evaluation_index"]) == (
        True,
        144.0,
        3.0,
        3,
    )
    assert tta["provenance"] == "imported"
    assert rec["status"] == "reached"
    assert rec["task"] == {
        "name": "cifar10",
        "workload": None,
        "metric": "top1",
        "threshold": 0.94,
        "dataset": "CIFAR10",
    }
    assert rec["evaluations"][2]["metrics"] == {"top1": 0.9399}
    assert rec["evaluations"][0]["train_time_s"] == 36.0
    assert rec["cost"]["usd_per_hour"] == {
        "value": 3.06,
        "unit": "USD/h",
        "provenance": "imported",
        "source": "DAWNBench entry normal_resnet9.json",
    }
    assert rec["source"]["kind"] == "dawnbench"
    assert rec["source"]["entry_type"] == "training"
    assert [Path(f).name for f in rec["source"]["files"]] == [
        "normal_resnet9.json",
        "normal_resnet9.tsv",
    ]
    assert rec["hardware"]["name"].startswith("1 V100")
    assert rec["hardware"]["accelerator"] == "cuda"
    assert rec["created_at"] == "2018-04-30"
    assert rec["flags"] == []


def test_imagenet_uses_top5_93():
    rec = entry("ImageNet/train/normal_resnet50.json")
    assert rec["task"]["metric"] == "top5" and rec["task"]["threshold"] == 0.93
    assert rec["time_to_accuracy"]["time_s"] == 9000.0  # 92.99 at 2.0 h misses, 93.0 at 2.5 h
    assert rec["evaluations"][2]["metrics"] == {"top1": 0.75, "top5": 0.93}


def test_squad_f1_fraction_075():
    rec = entry("SQuAD/train/normal_drqa.json")
    assert rec["task"]["metric"] == "f1"
    assert rec["time_to_accuracy"]["time_s"] == 4500.0  # 0.749 misses, 0.751 at 1.25 h
    assert rec["flags"] == []


def test_squad_f1_given_in_percent_is_converted_and_flagged():
    rec = entry("SQuAD/train/f1_as_percent.json")
    assert rec["evaluations"][1]["metrics"]["f1"] == 0.755
    assert rec["time_to_accuracy"]["time_s"] == 3600.0
    assert has_flag(rec, "f1Score should be a 0-1 fraction")


def test_columns_in_another_order_are_read_by_name():
    rec = cifar("reordered_columns")
    assert rec["evaluations"][0] == {"epoch": 1.0, "train_time_s": 900.0, "metrics": {"top1": 0.91}}
    assert rec["time_to_accuracy"]["time_s"] == 1800.0
    assert has_flag(rec, "columns in unusual order")


def test_bom_and_crlf():
    raw = (ENTRIES / "CIFAR10/train/bom_crlf.tsv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw  # the fixture really is messy
    rec = cifar("bom_crlf")
    assert rec["time_to_accuracy"]["time_s"] == 900.0
    assert has_flag(rec, "bom_crlf.tsv: UTF-8 byte-order mark")
    assert has_flag(rec, "bom_crlf.json: CRLF line endings")


def test_trailing_blank_lines_ignored_silently():
    rec = cifar("trailing_blank")
    assert len(rec["evaluations"]) == 2
    assert rec["time_to_accuracy"]["time_s"] == 360.0
    assert rec["flags"] == []


def test_fractional_epochs():
    rec = cifar("fractional_epochs")
    assert [e["epoch"] for e in rec["evaluations"]] == [0.5, 1.0, 1.5, 2.0]
    assert rec["time_to_accuracy"]["time_s"] == 270.0
    assert rec["time_to_accuracy"]["epoch"] == 1.5
    assert has_flag(rec, "fractional epochs")


def test_repeated_epochs_kept_in_file_order():
    rec = cifar("repeated_epochs")
    assert rec["time_to_accuracy"]["time_s"] == 1080.0  # the second "epoch 2" row (0.3 h)
    assert rec["time_to_accuracy"]["evaluation_index"] == 2
    assert has_flag(rec, "epoch 2 repeated (row 3)")


def test_accuracy_falling_back_keeps_first_crossing():
    rec = cifar("falls_back")
    assert rec["time_to_accuracy"]["time_s"] == 720.0
    assert rec["status"] == "reached"
    assert has_flag(rec, "falls back below 0.94")


def test_never_reaching():
    rec = cifar("never_reaches")
    assert rec["status"] == "not_reached"
    assert rec["time_to_accuracy"]["reached"] is False
    assert rec["time_to_accuracy"]["time_s"] is None


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("null_cost", "costPerHour is null"),
        ("missing_cost", "costPerHour missing"),
    ],
)
def test_null_or_missing_cost(name, flag):
    rec = cifar(name)
    assert rec["cost"] is None
    assert has_flag(rec, flag)
    assert rec["time_to_accuracy"]["time_s"] == 1800.0


def test_misc_string_kept_and_flagged():
    rec = cifar("misc_string")
    assert rec["extra"]["dawnbench"]["misc"] == "spot instances, 2 runs averaged"
    assert has_flag(rec, "misc is a string")
    assert cifar("normal_resnet9")["extra"]["dawnbench"]["misc"] == {"note": "fixture"}


def test_date_without_zero_padding():
    rec = cifar("date_unpadded")
    assert rec["created_at"] == "2018-04-09"
    assert has_flag(rec, "'2018-4-9'", "read as 2018-04-09")


@pytest.mark.parametrize(
    ("raw", "iso", "noted"),
    [
        ("2019-10-15", "2019-10-15", False),
        ("2018/4/9", "2018-04-09", True),
        ("2018-04-09 13:05:00", "2018-04-09T13:05:00", True),
        ("yesterday", None, True),
        (None, None, True),
    ],
)
def test_parse_date(raw, iso, noted):
    got, note = parse_date(raw)
    assert got == iso
    assert (note is not None) is noted


def test_fraction_in_percent_column_converted_and_flagged():
    rec = cifar("fraction_in_percent")
    assert rec["evaluations"][2]["metrics"]["top1"] == 0.9401
    assert rec["time_to_accuracy"]["time_s"] == 1080.0
    assert has_flag(rec, "percent column", "<= 1.0")


def test_inference_entry_latency_ms_to_s_and_cost_per_item():
    rec = entry("CIFAR10/inference/normal_infer.json")
    assert rec["source"]["entry_type"] == "inference"
    assert rec["inference"]["latency"]["value"] == pytest.approx(0.857e-3, rel=1e-12)
    assert rec["inference"]["latency"]["unit"] == "s"
    assert rec["inference"]["cost_per_item"]["value"] == 1.02e-6
    assert rec["inference"]["cost_per_item"]["unit"] == "USD"
    assert rec["inference"]["metrics"] == {"top1": 0.9423}
    assert rec["status"] == "reached"
    assert rec["evaluations"] == []


def test_inference_null_cost_and_below_threshold():
    rec = entry("CIFAR10/inference/null_cost_infer.json")
    assert "cost_per_item" not in rec["inference"]
    assert rec["status"] == "not_reached"
    assert has_flag(rec, "cost null")


def test_squad_inference():
    rec = entry("SQuAD/inference/bidaf_infer.json")
    assert rec["inference"]["latency"]["value"] == 0.59
    assert rec["inference"]["metrics"] == {"f1": 0.7524}


def test_task_from_fields_when_path_does_not_say():
    item = load_entry(FIX / "loose" / "squad_like_entry.json")
    assert item.record["task"]["name"] == "squad"
    assert item.record["source"]["entry_type"] == "inference"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad_json.json", "bad_json.json: not valid JSON (line 3, column 1)"),
        ("missing_column.json", "missing_column.tsv: field top1Accuracy: column missing"),
        ("not_a_number.json", "not_a_number.tsv: line 3: field hours: 'abc' is not a number"),
        ("no_tsv.json", "no_tsv.json: field tsv: training entry without no_tsv.tsv"),
    ],
)
def test_malformed_files_give_one_line_errors(name, message):
    with pytest.raises(ImportFailure) as err:
        load_entry(FIX / "malformed" / "CIFAR10" / "train" / name)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_cli_writes_loadable_records_and_json(tmp_path, capsys):
    out = tmp_path / "runs"
    rc = main(
        ["import", "dawnbench", str(ENTRIES / "CIFAR10" / "train"), "--out", str(out), "--json"]
    )
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    by_id = {s["run_id"]: s for s in payload["imported"]}
    assert len(by_id) == 13 and payload["failed"] == []
    s = by_id["dawnbench-cifar10-train-normal_resnet9"]
    assert s["time_to_accuracy_s"] == 144.0
    assert s["cost_usd"] == pytest.approx(3.06 * 0.04)
    rec = load_record(out / "dawnbench-cifar10-train-normal_resnet9")
    assert rec["time_to_accuracy"]["time_s"] == 144.0


def test_cli_stops_at_malformed_file_unless_keep_going(tmp_path, capsys):
    out = tmp_path / "runs"
    bad = FIX / "malformed"
    good = ENTRIES / "CIFAR10" / "train" / "normal_resnet9.json"
    assert main(["import", "dawnbench", str(good), str(bad), "--out", str(out)]) == 2
    assert "bad_json.json: not valid JSON" in capsys.readouterr().err
    assert not out.exists()  # nothing written when stopping
    rc = main(
        ["import", "dawnbench", str(good), str(bad), "--out", str(out), "--keep-going", "--json"]
    )
    assert rc == 1
    payload = json.loads(capsys.readouterr().out)
    assert [s["run_id"] for s in payload["imported"]] == ["dawnbench-cifar10-train-normal_resnet9"]
    assert len(payload["failed"]) == 4
    assert (out / "dawnbench-cifar10-train-normal_resnet9" / "run.json").is_file()


def test_cli_text_output_rounds_to_the_second(tmp_path, capsys):
    rc = main(["import", "dawnbench", str(ENTRIES / "ImageNet"), "--out", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "TTA 2h30m00s" in out
    assert "61.20 USD" in out


@pytest.mark.parametrize("raw", [1e17, 1e30, -1e300])
def test_parse_date_numeric_out_of_range_is_left_out(raw):
    got, note = parse_date(raw)
    assert got is None
    assert note is not None and "out of range; left out" in note


def test_parse_date_numeric_in_range():
    got, note = parse_date(1_500_000_000)
    assert got == "2017-07-14T02:40:00+00:00"
    assert note is not None and "epoch seconds" in note


def test_summary_cost_is_the_leaderboards_training_cost():
    from perfsuite.analyzers.results.cost import cost_of

    item = load_entry(ENTRIES / "CIFAR10" / "train" / "normal_resnet9.json")
    c = cost_of(item.record, {})
    assert c.training_cost_usd is not None
    assert item.summary["cost_usd"] == c.training_cost_usd  # one formula, bit for bit
    assert item.summary["cost_usd"] == pytest.approx(144.0 / 3600.0 * 3.06)


def test_a_column_given_twice_is_flagged_and_the_first_read(tmp_path):
    src = ENTRIES / "CIFAR10" / "train"
    folder = tmp_path / "CIFAR10" / "train"
    folder.mkdir(parents=True)
    (folder / "twice.json").write_bytes((src / "reordered_columns.json").read_bytes())
    rows = ["epoch\thours\ttop1Accuracy\ttop1Accuracy", "1\t0.25\t91.0\t95.0", "2\t0.5\t94.2\t96.0"]
    (folder / "twice.tsv").write_text("\n".join(rows) + "\n")
    rec = load_entry(folder / "twice.json").record
    (flag,) = [f for f in rec["flags"] if "given 2 times" in f]
    assert flag.startswith("twice.tsv: field top1Accuracy: ") and "(columns 3, 4)" in flag
    assert [e["metrics"]["top1"] for e in rec["evaluations"]] == [0.91, 0.942]
    assert not has_flag(cifar("reordered_columns"), "given 2 times")
