"""DAWNBench entries read as what they are: task and entry type from the <Task>/<train|
inference>/ folders only (fields win when they contradict them, with a flag), inference
entries with only one of latency and cost (as DAWNBench allows) carried to the boards, cost and
report, and the accelerator kind from cloud instance names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.runs.leaderboard import leaderboard
from perfsuite.devices.accelerators import accelerator
from perfsuite.importers import ImportFailure
from perfsuite.importers.dawnbench import load_entry
from perfsuite.record import validate_record
from perfsuite.report.inference_section import inference_rows

ENTRIES = Path(__file__).parent / "fixtures" / "dawnbench" / "entries"
CIFAR_TRAIN = ENTRIES / "CIFAR10" / "train" / "normal_resnet9"  # 94.00% at 0.04 h
IMAGENET_TRAIN = ENTRIES / "ImageNet" / "train" / "normal_resnet50"  # top-5 93.0% at 2.5 h
CIFAR_INFER = ENTRIES / "CIFAR10" / "inference" / "normal_infer.json"  # 0.857 ms, 1.02e-6 USD


def place(src: Path, folder: Path, name: str = "entry") -> Path:
    """Copy a training entry (JSON + TSV) into `folder` as `name`; returns the JSON path."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(src.with_suffix(".json"), folder / f"{name}.json")
    shutil.copy(src.with_suffix(".tsv"), folder / f"{name}.tsv")
    return folder / f"{name}.json"


def inference_entry(folder: Path, drop: tuple[str, ...] = (), **fields) -> Path:
    """normal_infer.json in `folder`, without the `drop` fields and with `fields` set."""
    entry = json.loads(CIFAR_INFER.read_text())
    for f in drop:
        del entry[f]
    entry.update(fields)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "infer.json"
    path.write_text(json.dumps(entry))
    return path


def load(path: Path) -> dict:
    rec = load_entry(path).record
    validate_record(rec)
    return rec


def flagged(rec: dict, *values: str) -> bool:
    """One flag names every value given (folders, fields, what the entry was read as)."""
    return any(all(v in f for v in values) for f in rec["flags"])


# -- task and entry type: only the <Task>/<train|inference>/ positions count ----------------


def test_folder_above_the_layout_does_not_decide_the_task(tmp_path):
    rec = load(place(CIFAR_TRAIN, tmp_path / "imagenet" / "mine"))
    assert (rec["task"]["name"], rec["task"]["metric"]) == ("cifar10", "top1")
    assert rec["time_to_accuracy"]["time_s"] == 144.0
    assert not flagged(rec, "folder")  # the folder said nothing: nothing to contradict


def test_nearer_train_folder_beats_an_inference_folder_higher_up(tmp_path):
    rec = load(place(CIFAR_TRAIN, tmp_path / "inference" / "CIFAR10" / "train"))
    assert rec["source"]["entry_type"] == "training"
    assert rec["run_id"] == "dawnbench-cifar10-train-entry"
    assert rec["time_to_accuracy"]["time_s"] == 144.0


def test_fields_of_another_task_overrule_the_task_folder_with_a_flag(tmp_path):
    rec = load(place(CIFAR_TRAIN, tmp_path / "ImageNet" / "train"))
    assert rec["task"]["name"] == "cifar10" and rec["task"]["threshold"] == 0.94
    assert flagged(rec, "ImageNet", "(top1Accuracy)", "CIFAR10's")
    rec = load(place(IMAGENET_TRAIN, tmp_path / "CIFAR10" / "train"))
    assert (rec["task"]["name"], rec["time_to_accuracy"]["time_s"]) == ("imagenet", 9000.0)
    assert flagged(rec, "are ImageNet's; read as ImageNet")


def test_a_task_folder_is_kept_when_the_fields_fit_it(tmp_path):
    # ImageNet inference entry reporting top-1 only: top1Accuracy is an ImageNet field too
    path = inference_entry(tmp_path / "ImageNet" / "inference")
    rec = load(path)
    assert rec["task"]["name"] == "imagenet"
    assert rec["inference"]["metrics"] == {"top1": 0.9423}
    assert rec["status"] == "not_reached"  # no top-5 reported: the threshold is not met
    assert flagged(rec, "no top5 accuracy reported")
    assert not flagged(rec, "read as")


def test_inference_entry_in_a_train_folder_is_read_as_inference(tmp_path):
    rec = load(inference_entry(tmp_path / "CIFAR10" / "train"))
    assert rec["source"]["entry_type"] == "inference"
    assert rec["inference"]["latency"]["value"] == pytest.approx(0.857e-3, rel=1e-12)
    assert flagged(
        rec,
        "train/",
        "latency/cost",
        "infer.tsv",
        "read as inference",
    )


def test_training_entry_in_an_inference_folder_is_read_as_training(tmp_path):
    rec = load(place(CIFAR_TRAIN, tmp_path / "CIFAR10" / "inference"))
    assert rec["source"]["entry_type"] == "training"
    assert rec["time_to_accuracy"]["time_s"] == 144.0
    assert flagged(
        rec,
        "inference/",
        "entry.tsv",
        "read as training",
    )


def test_mixed_evidence_follows_the_folder_and_says_what_was_not_read(tmp_path):
    path = place(CIFAR_TRAIN, tmp_path / "CIFAR10" / "train")
    entry = json.loads(path.read_text())
    path.write_text(json.dumps({**entry, "latency": 1.0}))  # a TSV and a latency
    rec = load(path)
    assert rec["source"]["entry_type"] == "training"
    assert rec["time_to_accuracy"]["time_s"] == 144.0
    assert flagged(rec, "entry.json: ", "entry.tsv", "read as training")


def test_no_task_folder_and_no_accuracy_field_is_one_line_error(tmp_path):
    path = inference_entry(tmp_path / "loose", drop=("top1Accuracy",))
    with pytest.raises(ImportFailure) as err:
        load_entry(path)
    assert "infer.json: field task: " in str(err.value)  # the file and the field, one line
    assert "\n" not in str(err.value)


# -- inference entries: latency or cost, either one is enough ------------------------------


def test_cost_only_inference_entry_imports(tmp_path):
    item = load_entry(inference_entry(tmp_path / "CIFAR10" / "inference", drop=("latency",)))
    rec = item.record
    validate_record(rec)
    assert rec["inference"]["latency"]["value"] is None
    assert rec["inference"]["cost_per_item"]["value"] == 1.02e-6
    assert "cost per item" in rec["inference"]["not_measured"]  # why there is no latency
    assert rec["status"] == "reached"
    assert flagged(rec, "infer.json: ", "latency", "cost per item")
    assert (item.summary["latency_s"], item.summary["cost_per_item_usd"]) == (None, 1.02e-6)


def test_cost_only_entry_on_the_boards_cost_and_report(tmp_path):
    rec = load(inference_entry(tmp_path / "CIFAR10" / "inference", drop=("latency",)))
    (by_cost,) = leaderboard([rec], "inference-cost")
    assert [(r.rank, r.status) for r in by_cost.rows] == [(1, "ranked")]
    assert by_cost.rows[0].value == pytest.approx(1.02e-6 * 10_000)
    (by_latency,) = leaderboard([rec], "inference-latency")
    assert [(r.rank, r.status, r.value) for r in by_latency.rows] == [(None, "n/a", None)]
    c = cost_of(rec, {})
    assert c.inference_latency_s is None
    assert c.inference_cost_per_10k_usd == pytest.approx(0.0102)
    rows = dict(map(tuple, inference_rows(rec)))
    assert rows["latency"] == f"none: {rec['inference']['not_measured']}"
    assert rows["accuracy of these predictions"].startswith("top1 ")  # not cut off at latency


@pytest.mark.parametrize(
    ("fields", "drop"),
    [({}, ("latency", "cost")), ({"latency": None, "cost": None}, ())],
)
def test_inference_entry_without_latency_and_cost_is_one_line_error(tmp_path, fields, drop):
    path = inference_entry(tmp_path / "CIFAR10" / "inference", drop=drop, **fields)
    with pytest.raises(ImportFailure) as err:
        load_entry(path)
    msg = str(err.value)
    assert "infer.json: field latency/cost: " in msg  # the file and the field, one line
    assert "\n" not in msg


def test_negative_latency_is_one_line_error(tmp_path):
    path = inference_entry(tmp_path / "CIFAR10" / "inference", latency=-1.0)
    with pytest.raises(ImportFailure, match=r"infer\.json: field latency: negative \(-1\)"):
        load_entry(path)


# -- accelerator kind from the hardware text -----------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("p3.16xlarge", "cuda"),  # AWS p3: V100
        ("16 p3.16xlarge (AWS)", "cuda"),
        ("g3.4xlarge", "cuda"),  # M60
        ("Azure ND40s_v2", "cuda"),  # 8x V100 SXM
        ("Standard_ND40rs_v2", "cuda"),
        ("Alibaba Cloud [ecs.gn6i-c8g1.2xlarge]", "cuda"),  # T4
        ("Huawei Cloud [pi2.2xlarge.4]", "cuda"),  # T4
        ("1 P4 / 128 GB / 32 CPU", "cuda"),  # a Tesla P4, not the CPUs beside it
        ("1 P4 / GCP", "cuda"),
        ("1 K80 / 61 GB / 4 CPU (Amazon EC2 [p2.xlarge])", "cuda"),
        ("Amazon EC2 [c5.18xlarge]", "cpu"),
        ("16 vCPUs (GCP)", "cpu"),
        ("1 TPU v2 (GCP)", "tpu"),
        ("NVIDIA A10G", "cuda"),  # torch's and perfsuite's MLPerf logs' device names
        ("NVIDIA L4", "cuda"),
        ("g4ad.xlarge", None),  # AMD GPU: not cuda
        ("Standard_NV32as_v4", None),  # AMD GPU
        ("Alibaba Cloud [ecs.ebman1.26xlarge]", None),  # NPU
        ("Alibaba Cloud Npu", None),
        (None, None),
    ],
)
def test_accelerator_kind(text, kind):
    assert accelerator(text) == kind


def test_instance_name_alone_gives_the_record_its_accelerator(tmp_path):
    path = place(IMAGENET_TRAIN, tmp_path / "ImageNet" / "train")
    entry = json.loads(path.read_text())
    entry["hardware"] = "p3.16xlarge"
    path.write_text(json.dumps(entry))
    assert load(path)["hardware"] == {
        "name": "p3.16xlarge",
        "accelerator": "cuda",
        "count": None,
        "instance_type": None,
    }
