"""Inference and energy inside a real run: the threshold model is the one measured (not the
last epoch's), a run that never met its threshold records no DAWNBench latency, and energy is
read at every epoch's edges (a fake NVML counter stands in for a GPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.runner.measure.energy import EnergyClock, NvmlEnergy  # noqa: E402
from tests.test_inference import FakeNvml  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_cache")]


def _run(tmp_path, **kw):
    opts = RunOptions(
        workload="digits",
        out=str(tmp_path / "runs"),
        progress=False,
        measure_peaks=False,
        profile_steps=0,
        threads=1,
        overrides=["width=8"],
        **kw,
    )
    return load_record(run_workload(opts))


@pytest.fixture
def fake_gpu_counter(monkeypatch):
    """Every energy clock of the run reads a fake NVML counter (1.5 J between two reads)."""

    def for_device(cls, gpu_index, **kwargs):
        return cls(NvmlEnergy(FakeNvml(), 0))

    monkeypatch.setattr(EnergyClock, "for_device", classmethod(for_device))


def test_the_threshold_model_is_measured_not_the_last_epochs(tmp_path, fake_gpu_counter):
    rec = _run(tmp_path, threshold=0.6, epochs=4, keep_going=True)
    ck, inf = rec["checkpoint"], rec["inference"]
    last = rec["evaluations"][-1]["metrics"]["top1"]
    assert rec["status"] == "reached" and ck["epoch"] < 4
    assert last != ck["value"]  # otherwise this test could not tell the two models apart
    assert inf["rule"] == "dawnbench" and inf["examples"] == inf["eval_size"] == 359
    assert inf["metrics"]["top1"] == ck["value"]
    assert inf["model"]["sha256"] == ck["sha256"] and inf["model"]["epoch"] == ck["epoch"]
    assert rec["inference_measurements"] == [inf]
    # energy: one start/stop pair per timed epoch, summed up to the threshold epoch
    energy = rec["energy"]
    assert energy["per_epoch_j"] == [1.5, 1.5, 1.5, 1.5]
    assert energy["to_accuracy"]["value"] == 1.5 * ck["epoch"]
    assert "NVML" in energy["to_accuracy"]["source"]
    assert inf["energy_per_10k"]["value"] == pytest.approx(1.5 / 359 * 10_000)

    # perfsuite infer on the same run: a partial measure is kept aside, a whole-set one replaces
    from perfsuite.cli import main

    run_dir = rec["_dir"]
    assert main(["infer", run_dir, "--limit", "20", "--json"]) == 0
    after = load_record(run_dir)
    assert after["inference"] == inf and after["inference_measurements"][-1]["partial"] is True
    assert after["inference_measurements"][-1]["examples"] == 20
    assert main(["infer", run_dir, "--json"]) == 0
    after = load_record(run_dir)
    assert (
        after["inference"]["by"] == "perfsuite infer" and len(after["inference_measurements"]) == 3
    )
    assert after["inference"]["metrics"] == inf["metrics"]


def test_not_reached_records_no_dawnbench_latency(tmp_path):
    rec = _run(tmp_path, threshold=0.999, epochs=1)
    inf = rec["inference"]
    assert rec["status"] == "not_reached" and "checkpoint" not in rec
    assert "latency" not in inf and "did not reach its threshold" in inf["not_measured"]
    assert any("no DAWNBench latency" in f for f in rec["flags"])
    assert rec["energy"]["to_accuracy"] is None
