"""The DAWNBench inference rule (runner/measure/inference.py) and the energy readers
(runner/measure/energy.py).

A tiny digits CNN is trained in-process for a second; the runner tests (marked slow) train a
few epochs through the real loop with the profile window off.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from perfsuite.analyzers.results.cost import cost_of  # noqa: E402
from perfsuite.analyzers.results.inference import OLDER_RULE, inference_view  # noqa: E402
from perfsuite.analyzers.runs.leaderboard import leaderboard  # noqa: E402
from perfsuite.backends import torch_backend  # noqa: E402
from perfsuite.record import quantity  # noqa: E402
from perfsuite.runner.measure import inference  # noqa: E402
from perfsuite.runner.measure.energy import (  # noqa: E402
    EnergyClock,
    EnergyUnavailable,
    NvmlEnergy,
    RaplEnergy,
    training_energy,
)
from perfsuite.stats import percentile  # noqa: E402
from perfsuite.workloads.digits.workload import DigitsWorkload  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def tiny():
    """(workload, data, model): a width-4 digits CNN after two epochs (about a second)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: no spinning intra-op pool on a busy machine
    torch.manual_seed(0)
    wl = DigitsWorkload()
    recipe = wl.default_recipe()
    recipe.extra["width"] = 4
    wl.configure(recipe)
    data = wl.load_data(None, "cpu")
    model = wl.build_model(recipe)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator().manual_seed(0)
    for _ in range(2):
        for b in data.train_batches(64, g):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(*b.inputs), b.target).backward()
            opt.step()
    yield wl, data, model.eval()
    torch.set_num_threads(threads)


def _batch1_top1(model, data, predict):
    """Top-1 of one-at-a-time predictions, computed here without the workload's evaluate."""
    with torch.no_grad():
        hits = [
            int(predict(model, data.test_x[i : i + 1]).argmax(1).item() == data.test_y[i].item())
            for i in range(data.num_eval)
        ]
    return sum(hits) / len(hits)


def test_rule_uses_the_whole_set_and_states_that_models_accuracy(tiny):
    wl, data, model = tiny
    entry = inference.measure(wl, model, data, torch_backend("cpu"))
    assert entry["rule"] == "dawnbench"
    assert entry["examples"] == data.num_eval == 359 and entry["eval_size"] == 359
    assert entry["partial"] is False and entry["batch_size"] == 1
    assert entry["warmup_examples"] == inference.WARMUP_EXAMPLES
    expected = _batch1_top1(model, data, lambda m, x: m(x))
    assert entry["metrics"]["top1"] == expected
    assert 0.2 < expected < 1.0  # a real, partly trained model, not chance or perfect
    lat = entry["latency"]
    assert lat["unit"] == "s" and lat["provenance"] == "measured" and lat["value"] > 0
    assert "all 359" in lat["source"]
    assert entry["latency_p50_s"] <= entry["latency_p90_s"] <= entry["latency_p99_s"]
    assert entry["mode"] == "eager" and entry["precision"] == "fp32"


def test_predict_with_test_time_augmentation_is_timed_once_per_example(tiny):
    """The workload's own predict (here with a flip TTA) is what is timed and scored."""
    _, data, model = tiny

    class Flipped(DigitsWorkload):
        calls = 0

        def predict(self, model, *inputs):
            type(self).calls += 1
            (x,) = inputs
            return model(x) + model(x.flip(3))

    wl = Flipped()
    wl.configure(tiny[0].recipe)
    entry = inference.measure(wl, model, data, torch_backend("cpu"), warmup=3)
    assert Flipped.calls == 3 + data.num_eval
    assert entry["metrics"]["top1"] == _batch1_top1(model, data, wl.predict)
    assert "predict" not in vars(wl)  # the timed stand-in is removed afterwards


def test_limit_is_partial_and_never_the_dawnbench_figure(tiny):
    wl, data, model = tiny
    entry = inference.measure(wl, model, data, torch_backend("cpu"), limit=25)
    assert entry["examples"] == 25 and entry["eval_size"] == 359 and entry["partial"] is True
    assert "partial" in entry["latency"]["source"]
    with torch.no_grad():  # the first 25 examples' accuracy, batched, computed here
        top1 = int((model(data.test_x[:25]).argmax(1) == data.test_y[:25]).sum()) / 25
    assert entry["metrics"]["top1"] == top1
    record = {"inference": {"rule": "dawnbench", "latency": quantity(1.0, "s", "measured")}}
    inference.store(record, entry)
    assert record["inference"]["latency"]["value"] == 1.0  # unchanged by a partial measure
    assert record["inference_measurements"] == [entry]
    with pytest.raises(inference.InferenceError, match="--limit must be >= 1"):
        inference.measure(wl, model, data, torch_backend("cpu"), limit=0)


def test_timed_predictions_run_without_autograd(tiny):
    """A workload whose evaluate does not disable autograd itself: the warm-up and the timed
    calls must both run under the backend's no_grad (and score what they scored before)."""
    _, data, model = tiny
    grad = []

    class NoGradFree(DigitsWorkload):
        def evaluate(self, model, data, batch_size=1024):
            hits = 0
            for b in data.eval_batches(batch_size):
                hits += int((self.predict(model, *b.inputs).argmax(1) == b.target).sum())
            return {"top1": hits / data.num_eval}

        def predict(self, model, *inputs):
            grad.append(torch.is_grad_enabled())
            return model(*inputs)

    wl = NoGradFree()
    wl.configure(tiny[0].recipe)
    entry = inference.measure(wl, model, data, torch_backend("cpu"), limit=20, warmup=3)
    assert len(grad) == 3 + 20 and entry["examples"] == 20
    assert grad == [False] * 23  # none of the 20 timed calls records an autograd graph
    assert torch.is_grad_enabled()  # left as it was


def test_the_source_says_what_predict_includes():
    """The latency source names test-time augmentation only where the run's recipe had it."""
    digits = DigitsWorkload()
    digits.configure(digits.default_recipe())
    assert "tta_flip" in inference.predict_text(digits)  # names what it looked for
    assert "augmentation included" not in inference.predict_text(digits)
    digits.tta = "6 views: the image and its mirror, each at 3 translations"  # its own predict
    text = inference.predict_text(digits)
    assert text.startswith("workload.predict") and text.endswith(": " + digits.tta)
    wl = DigitsWorkload()
    wl.configure(wl.default_recipe())
    wl.recipe.extra["tta_flip"] = True
    assert inference.predict_text(wl).endswith("included (tta_flip)")
    wl.recipe.extra["tta_level"] = 2
    assert "included (tta_flip, level 2)" in inference.predict_text(wl)
    wl.recipe.extra["tta_level"] = 0  # cifar10_fast: level 0 is no augmentation
    assert "test-time augmentation off" in inference.predict_text(wl)
    wl.recipe.extra.update(tta_flip=False, tta_level=2)
    assert "test-time augmentation off" in inference.predict_text(wl)


def test_the_entry_says_where_and_with_how_many_threads_it_was_measured(tiny):
    import socket

    wl, data, model = tiny
    backend = torch_backend("cpu")
    entry = inference.measure(wl, model, data, backend, limit=5, warmup=1)
    assert entry["host"] == socket.gethostname()
    assert entry["threads"] == torch.get_num_threads() == 1  # the fixture's one thread
    hw = entry["hardware"]
    assert hw["accelerator"] == "cpu" and hw["name"].endswith(" CPUs)")
    assert hw["name"] in entry["latency"]["source"] and "threads 1" in entry["latency"]["source"]
    assert "test-time augmentation included" not in entry["latency"]["source"]  # digits
    assert entry["notes"] == []


def test_differences_from_the_run_are_named():
    entry = {"precision": "fp32", "hardware": {"name": "NVIDIA H100"}, "threads": 4}
    record = {
        "config": {"framework": "pytorch", "threads": None},
        "environment": {"torch_threads": 2},
        "hardware": {"name": "AMD EPYC (2 CPUs)"},
    }
    notes = inference.differences(record, entry, "bf16")
    precision, hardware, threads = notes  # one note per difference, in this order
    assert precision.startswith("precision fp32 ") and precision.endswith("bf16")
    assert hardware.index("NVIDIA H100") < hardware.index("AMD EPYC (2 CPUs)")
    assert threads == "measured with 4 threads; the run used 2"
    same = {"precision": "bf16", "hardware": {"name": "AMD EPYC (2 CPUs)"}, "threads": 2}
    assert inference.differences(record, same, "bf16") == []
    record["config"] = {"framework": "tensorflow", "threads": 1}  # TensorFlow: its --threads
    (threads,) = inference.differences(record, {**same, "threads": None}, "bf16")
    assert "default threads" in threads and threads.endswith("the run used 1")


def test_cudagraphs_on_cpu_is_a_one_line_cli_error(tmp_path, capsys):
    from perfsuite.cli import main

    assert main(["infer", str(tmp_path), "--mode", "cudagraphs"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "cudagraphs needs a CUDA device" in err and "cpu" in err


def test_unknown_mode_and_precision_are_refused():
    dev = torch_backend("cpu").device
    with pytest.raises(inference.InferenceError, match="unknown inference mode 'fast'"):
        inference.check_mode("fast", "fp32", dev)
    with pytest.raises(inference.InferenceError, match="unknown precision 'int8'"):
        inference.check_mode("eager", "int8", dev)


def test_percentile_interpolates_between_order_statistics():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0]
    assert percentile(xs, 50) == 3.0
    assert percentile(xs, 90) == pytest.approx(4.6)
    assert percentile(xs, 99) == pytest.approx(4.96)
    assert percentile([], 50) is None


# -- energy readers ----------------------------------------------------------------------


def _rapl_domain(root, name, energy, span, label):
    d = root / name
    d.mkdir(parents=True)
    (d / "energy_uj").write_text(f"{energy}\n")
    (d / "max_energy_range_uj").write_text(f"{span}\n")
    (d / "name").write_text(f"{label}\n")
    return d


def test_rapl_sums_packages_ignores_subdomains_and_handles_wrap(tmp_path):
    p0 = _rapl_domain(tmp_path, "intel-rapl:0", 900_000, 1_000_000, "package-0")
    _rapl_domain(tmp_path, "intel-rapl:0:0", 5, 1_000_000, "core")  # inside package 0
    p1 = _rapl_domain(tmp_path, "intel-rapl:1", 2_000_000, 10_000_000, "package-1")
    meter = RaplEnergy(tmp_path)
    assert [n for _, _, n in meter.domains] == ["package-0", "package-1"]
    clock = EnergyClock(meter)
    clock.start()
    (p0 / "energy_uj").write_text("150000\n")  # wrapped: 100,000 to the top + 150,000
    (p1 / "energy_uj").write_text("2500000\n")  # 500,000 uJ
    assert clock.stop() == pytest.approx(0.25 + 0.5)
    assert meter.wrap_j == 1.0
    assert "package-0, package-1" in meter.source


def test_rapl_absent_gives_the_reason(tmp_path):
    clock = EnergyClock.for_device(None, powercap=tmp_path / "powercap")
    assert not clock.available and "exposes no RAPL" in clock.reason
    clock.start()
    assert clock.stop() is None
    section = training_energy(clock, reached_epoch=1)
    assert section["available"] is False and section["to_accuracy"] is None
    assert "exposes no RAPL" in section["reason"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(EnergyUnavailable, match="no intel-rapl:N package domains"):
        RaplEnergy(tmp_path / "empty")


class FakeNvml:
    """pynvml's calls used by NvmlEnergy: a counter in mJ that grows 1,500 mJ per read."""

    def __init__(self, supported=True):
        self.supported = supported
        self.mj = 10_000

    def nvmlInit(self):
        return None

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("gpu", index)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.supported:
            raise RuntimeError("Not Supported")
        self.mj += 1_500
        return self.mj


def test_nvml_reads_the_total_energy_counter():
    clock = EnergyClock.for_device(0, pynvml=FakeNvml())
    assert clock.available and "nvmlDeviceGetTotalEnergyConsumption" in clock.describe()["source"]
    for _ in range(3):
        clock.start()
        clock.stop()
    assert clock.intervals_j == [1.5, 1.5, 1.5]
    section = training_energy(clock, reached_epoch=2)
    assert section["to_accuracy"]["value"] == 3.0 and section["to_accuracy"]["unit"] == "J"
    assert section["to_accuracy"]["provenance"] == "measured"
    assert section["train_total"]["value"] == 4.5
    assert training_energy(clock, None)["to_accuracy"] is None


def test_nvml_without_counter_and_a_failing_counter_never_raise():
    clock = EnergyClock.for_device(0, pynvml=FakeNvml(supported=False))
    assert not clock.available and "no energy counter for GPU 0" in clock.reason
    fake = FakeNvml()
    clock = EnergyClock(NvmlEnergy(fake, 0))
    clock.start()
    fake.supported = False  # the counter stops answering mid-run
    assert clock.stop() is None
    assert not clock.available and "stopped answering" in clock.reason


# -- old records and the views ------------------------------------------------------------


def test_older_median_records_are_shown_as_older_rule(make_record):
    # a version-1 record measured this way is migrated to it at load (test_record_migrate.py)
    rec = make_record([(1, 10.0, 0.95)], threshold=0.9)
    rec["inference"] = {"latency": quantity(0.002, "s", "measured"), "metrics": {"top1": 0.95}}
    rec["inference"]["rule"] = OLDER_RULE
    rec["cost"] = {"usd_per_hour": quantity(3.6, "USD/h", "spec", "test")}
    view = inference_view(rec)
    assert view.rule == OLDER_RULE and "older rule" in view.note
    c = cost_of(rec, {})
    assert c.inference_rule == OLDER_RULE and c.inference_p50_s is None
    assert c.inference_cost_per_10k_usd == pytest.approx(0.002 * 10_000 / 3600 * 3.6)
    (board,) = leaderboard([rec], "inference-latency")
    assert board.rows[0].note.startswith("older rule")


def test_not_measured_inference_is_no_entry(make_record):
    rec = make_record([(1, 10.0, 0.5)], threshold=0.9)
    rec["inference"] = inference.not_measured("did not reach its threshold")
    assert cost_of(rec, {}).inference_latency_s is None
    assert leaderboard([rec], "inference-latency") == []


def test_run_refuses_a_nonpositive_inference_limit_before_training(tmp_path):
    from perfsuite.runner import RunOptions, run_workload

    opts = RunOptions(workload="digits", out=str(tmp_path / "runs"), inference_limit=0)
    with pytest.raises(ValueError, match="--inference-limit must be >= 1, got 0"):
        run_workload(opts)
    assert not (tmp_path / "runs").exists()


def _dawnbench_record(make_record, energy=None):
    rec = make_record([(1, 10.0, 0.95)], threshold=0.9)
    rec["time_to_accuracy"] = {"reached": True, "time_s": 10.0, "epoch": 1}
    rec["cost"] = {"usd_per_hour": quantity(3.6, "USD/h", "spec", "test")}
    rec["inference"] = {
        "rule": "dawnbench",
        "latency": quantity(0.004, "s", "measured", "mean"),
        "latency_p50_s": 0.001,
        "latency_p90_s": 0.002,
        "latency_p99_s": 0.05,
        "examples": 359,
        "mode": "eager",
        "precision": "fp32",
        "metrics": {"top1": 0.95},
        "energy_per_10k": quantity(12.0, "J", "measured", "NVML") if energy else None,
        "energy": {"available": bool(energy), "reason": None if energy else "no RAPL here"},
    }
    rec["energy"] = energy or {"available": False, "reason": "no RAPL here"}
    return rec


def test_cost_and_report_show_mean_percentiles_and_energy(make_record):
    from perfsuite.cli.cost_cmd import render
    from perfsuite.report.inference_section import energy_rows, inference_rows

    energy = {"available": True, "source": "NVML", "to_accuracy": quantity(300.0, "J", "measured")}
    rec = _dawnbench_record(make_record, energy)
    c = cost_of(rec, {})
    assert c.inference_cost_per_10k_usd == pytest.approx(0.004 * 10_000 / 3600 * 3.6)
    assert (c.inference_p50_s, c.inference_p90_s, c.inference_p99_s) == (0.001, 0.002, 0.05)
    assert c.energy_to_accuracy_j == 300.0 and c.energy_per_10k_j == 12.0
    text = render([c])
    assert "p50 / p90 / p99" in text and "1 ms / 2 ms / 50 ms" in text
    assert "300 J" in text and "12 J" in text and "older rule" not in text
    rows = dict(map(tuple, inference_rows(rec)))
    assert rows["latency (mean, batch 1)"] == "4 ms" and rows["rule"] == "dawnbench"
    assert dict(map(tuple, energy_rows(rec)))["energy to accuracy"] == "300 J"
    (board,) = leaderboard([rec], "training-time")
    assert board.rows[0].energy_j == 300.0
    (board,) = leaderboard([rec], "inference-latency")
    assert board.rows[0].energy_j == 12.0 and "p50/p90/p99 1/2/50 ms" in board.rows[0].note


def test_absent_energy_shows_its_reason(make_record):
    from perfsuite.cli.cost_cmd import render
    from perfsuite.report.inference_section import energy_rows

    rec = _dawnbench_record(make_record)
    c = cost_of(rec, {})
    assert c.energy_to_accuracy_j is None and c.energy_per_10k_j is None
    assert any("energy to accuracy: no RAPL here" in n for n in c.notes)
    assert "energy to acc." not in render([c])  # no column without a measured value
    rows = dict(map(tuple, energy_rows(rec)))
    assert "no RAPL here" in rows["energy to accuracy"]
    assert "no RAPL here" in rows["energy per 10,000 inferences"]
