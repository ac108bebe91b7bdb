"""The threshold checkpoint and `perfsuite eval shift|probe` end to end on a real `digits` run:
known expected drops and probe accuracies on generated folders, records, report, leaderboard."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

from perfsuite.cli import main  # noqa: E402
from perfsuite.generalization.threshold_model import correct, rebuild  # noqa: E402
from perfsuite.record import RecordError, load_record, validate_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """digits past its threshold: threshold 0.9, all 5 epochs (--all-epochs), so the last
    epoch's weights are not the threshold model's."""
    out = tmp_path_factory.mktemp("runs")
    opts = RunOptions(
        workload="digits",
        out=str(out),
        threshold=0.9,
        epochs=5,
        all_epochs=True,
        capture=False,
        progress=False,
        measure_peaks=False,
        threads=1,  # tiny ops: one thread is not slowed by a busy machine's other processes
    )
    return Path(run_workload(opts))


@pytest.fixture
def run_copy(run_dir, tmp_path):
    """A private copy, so tests that store results do not see each other's."""
    dst = tmp_path / run_dir.name
    shutil.copytree(run_dir, dst)
    return dst


def _save_folder(root: Path, images: np.ndarray, labels: np.ndarray, names: list[str]) -> None:
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
    for i, (img, lab) in enumerate(zip(images, labels, strict=True)):
        Image.fromarray(img[..., 0]).save(root / names[lab] / f"{i:04d}.png")


# -- the checkpoint ---------------------------------------------------------------------------


def test_checkpoint_is_the_model_that_first_met_the_threshold(run_dir):
    rec = load_record(run_dir)
    ck, tta = rec["checkpoint"], rec["time_to_accuracy"]
    assert ck["epoch"] == tta["epoch"] and ck["evaluation_index"] == tta["evaluation_index"]
    assert len(rec["evaluations"]) == 5 and tta["epoch"] < 5  # trained on past the threshold
    path = run_dir / ck["file"]
    assert path.stat().st_size == ck["size_bytes"] and rec["sidecars"]["checkpoint"] == ck["file"]
    assert not list(run_dir.glob(".*.tmp"))  # the atomic write left no temporary behind
    tm = rebuild(rec)
    own = tm.own_test(None)
    first = rec["evaluations"][ck["evaluation_index"]]["metrics"]["top1"]
    assert correct(own.logits, own.labels).mean() == pytest.approx(first, abs=1e-12)
    assert ck["value"] == first


def test_tampered_checkpoints_are_refused_naming_file_and_field(run_copy):
    rec = load_record(run_copy)
    path = run_copy / rec["checkpoint"]["file"]
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    with pytest.raises(RecordError, match=r"threshold_model.pt: field checkpoint.size_bytes"):
        rebuild(rec)
    path.write_bytes(data[:-10] + b"0123456789")
    with pytest.raises(RecordError, match=r"field checkpoint.sha256"):
        rebuild(rec)
    path.unlink()
    with pytest.raises(RecordError, match=r"field checkpoint.file: file not found"):
        rebuild(rec)
    bad = {k: v for k, v in rec.items() if not k.startswith("_")}
    bad["checkpoint"] = dict(bad["checkpoint"], file="../x.pt")
    with pytest.raises(RecordError, match=r"field checkpoint.file"):
        validate_record(bad, "r.json")


def test_no_checkpoint_when_the_threshold_is_never_met(tmp_path):
    opts = RunOptions(
        workload="digits",
        out=str(tmp_path),
        threshold=1.01,
        epochs=1,
        capture=False,
        progress=False,
        measure_peaks=False,
        threads=1,
    )
    rec = load_record(run_workload(opts))
    assert "checkpoint" not in rec and rec["status"] == "not_reached"
    assert main(["eval", "shift", rec["_dir"], "--corruptions"]) == 2


# -- shift ------------------------------------------------------------------------------------


def test_shift_on_a_relabeled_copy_has_the_expected_drop(run_copy, tmp_path, capsys):
    """The own test images saved as PNG (lossless): same accuracy. Then 30 correctly
    classified images moved to the next class's folder: exactly 30 more errors."""
    tm = rebuild(load_record(run_copy))
    own = tm.own_test(None)
    hits = correct(tm.logits(own.images), own.labels)
    labels = own.labels.copy()
    moved = np.flatnonzero(hits == 1)[:30]
    labels[moved] = (labels[moved] + 1) % 10
    _save_folder(tmp_path / "shifted" / "test", own.images, labels, tm.workload.classes())
    expected = (hits.sum() - 30) / len(hits)

    assert (
        main(["eval", "shift", str(run_copy), "--data-dir", str(tmp_path / "shifted"), "--json"])
        == 0
    )
    s = json.loads(capsys.readouterr().out)["shift"]
    assert s["shifted"]["top1"] == pytest.approx(expected, abs=1e-12)
    own_top1 = correct(own.logits, own.labels).mean()
    assert s["own_test"]["top1"] == pytest.approx(own_top1, abs=1e-12)
    assert s["drop"]["top1"] == pytest.approx(own_top1 - expected, abs=1e-12)
    lo, hi = s["drop"]["top1_ci95"]
    assert lo < s["drop"]["top1"] < hi and hi - lo < 0.2
    assert s["shifted"]["top5"] is not None and s["provenance"] == "measured"
    assert s["data_dir"].endswith("shifted/test") and s["seed"] == 0

    rec = load_record(run_copy)  # stored, valid, and a rerun replaces rather than appends
    assert rec["generalization"]["shift"][0]["shifted"]["top1"] == s["shifted"]["top1"]
    assert main(["eval", "shift", str(run_copy), "--data-dir", str(tmp_path / "shifted")]) == 0
    assert len(load_record(run_copy)["generalization"]["shift"]) == 1
    assert "drop (own - shifted)" in capsys.readouterr().out


def test_shift_errors_are_one_line(run_copy, tmp_path, capsys):
    (tmp_path / "bad" / "cat").mkdir(parents=True)
    assert main(["eval", "shift", str(run_copy), "--data-dir", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "class folder(s)" in err and str(tmp_path) in err
    assert main(["eval", "shift", str(run_copy)]) == 2
    assert "--corruptions" in capsys.readouterr().err


def test_corruptions_are_stored_and_repeatable(run_copy, capsys):
    args = [
        "eval",
        "shift",
        str(run_copy),
        "--corruptions",
        "--families",
        "contrast,gaussian_noise,saturate",
        "--limit",
        "100",
        "--json",
    ]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)["corruptions"]
    assert main(args) == 0
    again = json.loads(capsys.readouterr().out)["corruptions"]
    assert first["families"] == again["families"]  # same seed, same images, same accuracy
    assert set(first["families"]) == {"contrast", "gaussian_noise"}
    assert "saturate" in first["skipped"]  # digits are grey
    contrast = first["families"]["contrast"]["accuracy"]
    assert contrast[-1] < first["clean"]["top1"]  # severity 5 costs accuracy
    assert first["clean"]["n"] == 100 and first["limit"] == 100
    assert first["mean"] == pytest.approx(np.mean([v["mean"] for v in first["families"].values()]))
    assert load_record(run_copy)["generalization"]["corruptions"]["mean"] == first["mean"]


# -- probe ------------------------------------------------------------------------------------


def _two_class_folder(root: Path, seed: int, random_labels: bool = False) -> Path:
    """8x8 grey images: class `left` has a bright left half, `right` a bright right half,
    plus noise; with `random_labels` the images are noise and the labels coin flips."""
    g = np.random.default_rng(seed)
    for split, n in (("train", 60), ("test", 40)):
        labels = np.arange(n) % 2
        images = g.integers(0, 60, (n, 8, 8, 1)).astype(np.uint8)
        if random_labels:
            labels = g.integers(0, 2, n)
        else:
            for i, lab in enumerate(labels):
                images[i, :, (0 if lab == 0 else 4) : (4 if lab == 0 else 8)] += 150
        _save_folder(root / split, images, labels, ["left", "right"])
    return root


def test_probe_reaches_its_stated_accuracy_on_a_separable_folder(run_copy, tmp_path, capsys):
    folder = _two_class_folder(tmp_path / "halves", 0)
    assert main(["eval", "probe", str(run_copy), "--data-dir", str(folder), "--json"]) == 0
    p = json.loads(capsys.readouterr().out)["probe"]
    assert p["test"]["top1"] >= 0.95  # the stated bar: a linear head on frozen features
    assert p["test"]["n"] == 40 and p["n_train"] == 60 and p["classes"] == ["left", "right"]
    assert p["feature_dim"] == 128  # width 32 x 4 channels before the digits head
    assert load_record(run_copy)["generalization"]["probe"][0]["test"] == p["test"]


def test_probe_of_noise_stays_near_chance(run_copy, tmp_path, capsys):
    folder = _two_class_folder(tmp_path / "noise", 1, random_labels=True)
    assert (
        main(["eval", "probe", str(run_copy), "--data-dir", str(folder), "--json", "--no-store"])
        == 0
    )
    p = json.loads(capsys.readouterr().out)["probe"]
    assert p["test"]["top1"] < 0.8
    assert "generalization" not in load_record(run_copy)


def test_probe_against_a_reference_run(run_copy, tmp_path, capsys):
    ref = tmp_path / "ref"
    shutil.copytree(run_copy, ref)
    folder = _two_class_folder(tmp_path / "halves", 0)
    assert (
        main(["eval", "probe", str(run_copy), "--data-dir", str(folder), "--reference", str(ref)])
        == 0
    )
    out = capsys.readouterr().out
    assert "difference +0.00 pts [+0.00, +0.00]" in out  # the same weights: no difference
    assert load_record(ref)["generalization"]["probe"][0]["test"]["top1"] >= 0.95


def test_report_and_leaderboard_show_generalization(run_copy, tmp_path, capsys):
    from perfsuite.report.build import report_html

    assert (
        main(
            [
                "eval",
                "shift",
                str(run_copy),
                "--corruptions",
                "--families",
                "contrast",
                "--limit",
                "50",
            ]
        )
        == 0
    )
    capsys.readouterr()
    rec = load_record(run_copy)
    page = report_html([rec])
    assert 'id="generalization"' in page and "corruptions: mean over 1 families" in page
    assert main(["leaderboard", str(run_copy)]) == 0
    out = capsys.readouterr().out
    assert "corruption mean" in out
    mean = rec["generalization"]["corruptions"]["mean"]
    assert f"{100 * mean:.2f}%" in out


def test_workload_without_images_is_a_clear_error():
    from perfsuite.workloads.base import Workload

    with pytest.raises(NotImplementedError, match="its inputs are not images"):
        Workload().to_images(None)
