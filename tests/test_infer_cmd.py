"""`perfsuite infer RUN` on real (tiny) runs: the run's precision and memory format are kept,
data-dependent models (squad) and synthetic runs are rebuilt as the run built them, what
differs from the run is said, bad input is one line, and RUN may be a group folder."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")

from perfsuite.cli import main  # noqa: E402
from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _torch_threads():
    """`infer --threads N` sets torch's process-wide count: put it back for other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _run(root, **kw):
    base = dict(
        out=str(root / "runs"),
        progress=False,
        measure_peaks=False,
        profile_steps=0,
        threads=1,
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PERFSUITE_CACHE_DIR", str(root / "cache"))
        return load_record(run_workload(RunOptions(**{**base, **kw})))


@pytest.fixture(scope="module")
def bf16_run(tmp_path_factory):
    """A digits run with bf16 autocast and a channels_last model that meets its threshold."""
    root = tmp_path_factory.mktemp("bf16")
    rec = _run(
        root,
        workload="digits",
        switches=["bf16,channels_last"],
        overrides=["width=8"],
        threshold=0.5,
        epochs=4,
    )
    assert rec["status"] == "reached" and rec["inference"]["precision"] == "bf16"
    return rec


def _copy(rec, dest):
    return str(shutil.copytree(rec["_dir"], dest))


def _infer(capsys, *argv):
    capsys.readouterr()
    code = main(["infer", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_infer_keeps_the_runs_precision_and_memory_format(bf16_run, tmp_path, capsys):
    from perfsuite.generalization.threshold_model import rebuild

    tm = rebuild(bf16_run)
    # a conv with several input channels (the first has one, so both layouts coincide)
    conv = [m for m in tm.model.modules() if isinstance(m, torch.nn.Conv2d)][-1]
    assert conv.in_channels > 1
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert not conv.weight.is_contiguous()  # NHWC, not NCHW
    assert tm.switches.precision == "bf16" and tm.switches.channels_last

    run_dir = _copy(bf16_run, tmp_path / "run")
    code, out, _ = _infer(capsys, run_dir, "--threads", "1", "--json")
    assert code == 0
    entry = json.loads(out)["inference"]
    assert entry["precision"] == "bf16" and entry["notes"] == []
    # the same model in the same precision: the run's own batch-1 predictions, scored alike
    assert entry["metrics"] == bf16_run["inference"]["metrics"]
    assert load_record(run_dir)["inference"]["precision"] == "bf16"

    # another precision on purpose: measured and stored, and the entry says it differs
    code, out, _ = _infer(capsys, run_dir, "--threads", "1", "--precision", "fp32", "--json")
    assert code == 0
    stored = load_record(run_dir)["inference"]
    assert stored["precision"] == "fp32" and stored["by"] == "perfsuite infer"
    (note,) = stored["notes"]
    assert note.startswith("precision fp32 given by --precision") and note.endswith("in bf16")


def test_other_hardware_and_threads_are_said(bf16_run, monkeypatch, capsys):
    from perfsuite.backends.pytorch import TorchBackend

    monkeypatch.setattr(
        TorchBackend, "hardware", lambda self: {"name": "Other CPU", "accelerator": "cpu"}
    )
    code, out, _ = _infer(capsys, bf16_run["_dir"], "--threads", "2", "--no-store")
    assert code == 0
    assert "measured on Other CPU (host " in out and "threads 2)" in out
    notes = [line for line in out.splitlines() if line.startswith("note: measured")]
    hardware = next(n for n in notes if n.startswith("note: measured on Other CPU"))
    assert f"training hardware {bf16_run['hardware']['name']}" in hardware
    assert any("with 2 threads; the run used 1" in n for n in notes)
    assert load_record(bf16_run["_dir"])["inference_measurements"] == [bf16_run["inference"]]


def test_cost_notes_are_printed_as_perfsuite_cost_prints_them(bf16_run, capsys):
    code, out, _ = _infer(
        capsys, bf16_run["_dir"], "--limit", "5", "--no-store", "--instance-type", "m5.xlarge"
    )
    assert code == 0
    rid = bf16_run["run_id"]
    note = next(line for line in out.splitlines() if line.startswith(f"note: {rid}: "))
    assert "instance type m5.xlarge" in note and "not recorded" in note


@pytest.mark.parametrize("threads", ["-1", "0"])
def test_threads_must_be_a_positive_integer(threads, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["infer", str(tmp_path), "--threads", threads])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--threads" in err and f"{threads} is not >= 1" in err


def test_a_group_folder_holding_one_run_is_measured_and_two_are_listed(bf16_run, tmp_path, capsys):
    group = tmp_path / "group"
    _copy(bf16_run, group / "a")
    code, out, _ = _infer(capsys, str(group), "--limit", "3", "--no-store", "--json")
    assert code == 0 and json.loads(out)["inference"]["examples"] == 3
    _copy(bf16_run, group / "b")
    code, _, err = _infer(capsys, str(group), "--limit", "3", "--no-store")
    assert code == 2 and err.count("\n") == 1
    assert "holds 2 runs; give one of them" in err


def test_a_synthetic_run_is_measured_on_its_synthetic_data(tmp_path, capsys):
    """cifar10 --synthetic has no data folder: the run's synthetic source (same seed) is
    measured, so the accuracy is the run's own."""
    rec = _run(
        tmp_path,
        workload="cifar10",
        synthetic=True,
        recipe="cpu",
        overrides=["width=0.125", "train_limit=64"],
        batch_size=32,
        threshold=0.0,
        epochs=1,
    )
    code, out, err = _infer(capsys, rec["_dir"], "--threads", "1", "--no-store", "--json")
    assert code == 0, err
    entry = json.loads(out)["inference"]
    assert entry["examples"] == entry["eval_size"] == rec["inference"]["eval_size"] == 64
    assert entry["metrics"] == rec["inference"]["metrics"]
    assert "(tta_flip)" in entry["latency"]["source"]


def test_squad_loads_its_data_before_its_model_and_bad_data_is_one_line(tmp_path, capsys):
    from tests.test_squad_workload import tiny_squad

    data = tmp_path / "squad"
    data.mkdir()
    tiny_squad(data / "dev-v1.1.json", articles=5)
    rec = _run(
        tmp_path,
        workload="squad",
        data_dir=str(data),
        overrides=[
            "smoke_split=0.6",
            "d_model=16",
            "heads=2",
            "layers=1",
            "model_layers=1",
            "max_question=12",
        ],
        batch_size=8,
        threshold=0.0,
        epochs=1,
    )
    code, out, err = _infer(capsys, rec["_dir"], "--threads", "1", "--no-store", "--json")
    assert code == 0, err
    entry = json.loads(out)["inference"]
    assert entry["examples"] == rec["inference"]["examples"] == 16  # 2 articles x 8 questions
    assert entry["metrics"] == rec["inference"]["metrics"]

    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = _infer(capsys, rec["_dir"], "--data-dir", str(empty), "--no-store")
    assert code == 2 and err.count("\n") == 1
    assert "dev-v1.1.json: file not found" in err
