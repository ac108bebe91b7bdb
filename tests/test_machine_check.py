"""The machine check next to the profile window: the roofs' own benchmarks, repeated, say how
fast the machine ran while the ops were timed; a contended window is said, and a check that
beats its roof names that roof as too low when a point sits above it."""

from __future__ import annotations

import html

import pytest

from perfsuite.analyzers.roofline.machine_speed import window_speeds
from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.ceilings.probe import check_section, probe_plan, run_probe
from perfsuite.record import quantity
from perfsuite.record.io import validate_record
from perfsuite.runner.engine.capture import MachineCheck
from tests.helpers import cpu_record

QUIET = {"threads": 2, "size": 2048, "mode": "quick", "busy": False, "cpus": 2}


def _ceilings(peak=1e11, bw=2e10, n=2048, copy_bytes=64 << 20, provenance="measured"):
    pk = quantity(peak, "FLOP/s", provenance, "matmul")
    pk["measured_under"] = {**QUIET, "size": n}
    bq = quantity(bw, "byte/s", provenance, "copy")
    bq["measured_under"] = {**QUIET, "size": copy_bytes}
    return {"dtype": "float32", "peak_flops": pk, "memory_bandwidth": bq}


def _with_check(rec, matmul, copy, n=2048):
    plan, _ = probe_plan({**rec["ceilings"], **_ceilings(n=n)})
    rec["timeline"]["machine_check"] = check_section(
        plan, {"matmul": matmul[0], "copy": copy[0]}, {"matmul": matmul[1], "copy": copy[1]}
    )
    return rec


def test_plan_repeats_the_measured_roofs_sizes():
    plan, why = probe_plan(_ceilings(n=1024, copy_bytes=32 << 20))
    assert why == "" and plan == {
        "matmul": {"dtype": "float32", "n": 1024},
        "copy": {"bytes": 32 << 20},
    }
    plan, why = probe_plan(_ceilings(provenance="spec"))
    assert plan is None and "no measured roof" in why


def test_timed_calls_warm_up_once_then_repeat_or_stop_at_the_budget():
    from perfsuite.ceilings.measure import timed_calls

    calls = []
    times = timed_calls(lambda: calls.append(1), lambda: None, 3)  # the probe: exactly 3
    assert len(times) == 3 and len(calls) == 4
    calls.clear()
    times = timed_calls(lambda: calls.append(1), lambda: None, 10, budget_s=0.0)  # peaks
    assert len(times) == 2 and len(calls) == 3  # at least two, then the budget is spent


def test_probe_measures_both_benchmarks_on_cpu():
    out = run_probe("cpu", {"matmul": {"dtype": "float32", "n": 64}, "copy": {"bytes": 1 << 20}})
    assert set(out) == {"matmul", "copy"}
    assert out["matmul"] > 1e6 and out["copy"] > 1e6  # a CPU does more than 1 MFLOP/s, 1 MB/s


def test_section_is_valid_record_json(make_record):
    rec = _with_check(cpu_record(make_record, peak=1e11), (9e10, 7e10), (2e10, 1.8e10))
    check = rec["timeline"]["machine_check"]
    assert check["matmul"]["before"]["value"] == 9e10
    assert check["matmul"]["after"]["provenance"] == "measured"
    assert check["copy"]["bytes"] == 64 << 20
    validate_record(rec, "run.json")
    rec["timeline"]["machine_check"]["matmul"]["n"] = 0
    with pytest.raises(Exception, match="machine_check"):
        validate_record(rec, "run.json")


def test_contended_window_is_said_with_its_speed(make_record):
    rec = cpu_record(make_record, QUIET, peak=1e11)
    rec["ceilings"]["memory_bandwidth"]["measured_under"] = {**QUIET, "size": 64 << 20}
    rec = _with_check(rec, (6e10, 7e10), (1e10, 1.2e10))  # roofs: 1e11 FLOP/s, 1e10 byte/s
    speeds = {s.kind: s for s in window_speeds(rec, rec["ceilings"]["roofs"])}
    assert speeds["matmul"].ratio == pytest.approx(0.65)
    assert speeds["matmul"].same_benchmark is True
    assert speeds["copy"].ratio == pytest.approx(1.1)  # against the record's 1e10 bandwidth
    notes = roofline(rec).notes
    slow = next(n for n in notes if n.startswith("machine contended"))
    assert all(v in slow for v in ("65%", "fp32 roof", "60%", "70%"))  # mean, before, after
    assert "fp32-roof ops" in slow and "memory-bound" not in slow  # whose fractions it affects
    assert [n for n in notes if "copy ran at 110%" in n and "memory roof" in n]


def test_quiet_window_adds_no_note(make_record):
    rec = _with_check(cpu_record(make_record, QUIET, peak=1e11), (9.5e10, 1e11), (9.8e9, 1e10))
    assert not [n for n in roofline(rec).notes if n.startswith("machine")]


def test_check_above_the_roof_is_the_first_cause_of_a_point_above_it(make_record):
    # aten::mm reaches 3.2e10 FLOP/s against a 1e10 roof; the check ran the roof's own
    # matmul at 2.5e10: the roof was measured too low, and the flag says so first.
    rec = _with_check(cpu_record(make_record, QUIET, peak=1e10), (2.4e10, 2.6e10), (1e10, 1e10))
    mm = next(o for o in roofline(rec).ops if o.op == "aten::mm").placement
    assert mm.frac_of_roof is None
    assert "measured peak is too low" in mm.flag and "250%" in mm.flag
    (low,) = [n for n in roofline(rec).notes if "that roof is too low" in n]
    assert "`perfsuite peaks --refresh`" in low  # says how to fix it


def test_other_benchmark_size_is_marked_rough(make_record):
    rec = _with_check(cpu_record(make_record, QUIET, peak=1e11), (5e10, 5e10), (1e10, 1e10), 512)
    (mm,) = [s for s in window_speeds(rec, rec["ceilings"]["roofs"]) if s.kind == "matmul"]
    assert mm.same_benchmark is False
    assert "(the roof was measured at another size)" in mm.text()


def test_failed_check_is_a_note_not_a_lost_run(monkeypatch):
    import perfsuite.ceilings.probe as probe

    def boom(*a, **k):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(probe, "run_probe", boom)
    check = MachineCheck("cpu", _ceilings())
    check.before()
    check.after()
    section = check.section()
    assert list(section) == ["note"]  # only a note, naming the error
    note = section["note"]
    assert note.startswith("machine check failed: ") and "RuntimeError: CUDA out of memory" in note
    assert MachineCheck("cpu", None).section()["note"].startswith("no measured roof")


@pytest.mark.slow
@pytest.mark.usefixtures("private_cache")
def test_run_records_the_check_around_its_window(tmp_path, monkeypatch, capsys):
    """A real digits run: both sides measured, next to the window, off the clock."""
    pytest.importorskip("torch")
    from perfsuite.record import load_record
    from perfsuite.runner import RunOptions, run_workload
    from perfsuite.runner.engine import capture

    ceil = _ceilings(peak=1e15, bw=1e15, n=64, copy_bytes=1 << 20)  # tiny, fast benchmarks
    ceil["roofs"] = {
        "fp32": {"peak_flops": ceil["peak_flops"]},
        "memory": {"bandwidth": ceil["memory_bandwidth"]},
    }
    ceil.update(device="Test CPU", spec=None)
    monkeypatch.setattr(capture, "resolve_ceilings", lambda *a: (ceil, ""))
    opts = RunOptions(
        workload="digits",
        out=str(tmp_path / "runs"),
        progress=False,
        epochs=1,
        inference_repeats=0,
        profile_seconds=0.0,
    )
    run_dir = run_workload(opts)
    rec = load_record(run_dir)
    check = rec["timeline"]["machine_check"]
    assert check["matmul"]["n"] == 64 and check["copy"]["bytes"] == 1 << 20
    for side in ("before", "after"):
        assert check["matmul"][side]["value"] > 0 and check["copy"][side]["value"] > 0
    assert rec["extra"]["setup_s"]["machine_check_s"] > 0
    # against a 1 PFLOP/s roof any CPU is "contended": the roofline says so, with its speed
    notes = roofline(rec).notes
    assert [n for n in notes if n.startswith("machine contended ")]
    from perfsuite.cli import main

    capsys.readouterr()
    assert main(["roofline", str(run_dir)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("machine check"))
    assert "matmul at " in line and "of the fp32 roof (before " in line
    assert "copy at " in line and "of the memory roof" in line
    # the report's roofline section says the same line
    from perfsuite.report.build import report_html

    page = report_html([rec])
    assert html.escape(line) in page


class FakeDevice:
    """A fake clock and a device whose call takes `call_s` and whose sync costs `sync_s`
    (the H100 copy: ~194 us a 256 MiB copy, ~11 us launch+sync per timing)."""

    def __init__(self, call_s: float = 194e-6, sync_s: float = 11e-6) -> None:
        self.now, self.call_s, self.sync_s = 0.0, call_s, sync_s

    def perf_counter(self) -> float:
        return self.now

    def call(self) -> None:
        self.now += self.call_s

    def sync(self) -> None:
        self.now += self.sync_s


def _fake_copy(monkeypatch, module, dev: FakeDevice) -> None:
    import types

    from perfsuite.ceilings import measure

    monkeypatch.setattr(measure, "time", types.SimpleNamespace(perf_counter=dev.perf_counter))
    monkeypatch.setattr(module, "device_sync", lambda device: dev.sync)
    monkeypatch.setattr(module, "copy_benchmark", lambda device, size: (dev.call, 2.0 * size))


def test_gpu_copy_is_timed_in_batches_between_one_pair_of_syncs(monkeypatch):
    from perfsuite.ceilings import measure

    dev = FakeDevice()
    _fake_copy(monkeypatch, measure, dev)
    m = measure.measure_bandwidth("cuda:0", mode="quick")
    # sizing call 205 us -> batch ceil(20 ms / 205 us) = 98; a sample is 98 x 194 us + 11 us,
    # so the call time is 194 us + 11/98 us (one sync per call would say 205 us, 5.4% slow)
    assert m.batch == 98 and m.size == 256 << 20
    assert m.best_s == pytest.approx((98 * 194e-6 + 11e-6) / 98, rel=1e-9)
    assert m.value == pytest.approx(2 * (256 << 20) * 98 / (98 * 194e-6 + 11e-6), rel=1e-9)
    assert "98 calls per timing" in m.describe()


def test_cpu_copy_is_still_timed_one_call_per_sample(monkeypatch):
    from perfsuite.ceilings import measure

    dev = FakeDevice(call_s=6e-3, sync_s=0.0)
    _fake_copy(monkeypatch, measure, dev)
    m = measure.measure_bandwidth("cpu", mode="quick")
    assert m.batch == 1 and m.best_s == pytest.approx(6e-3, rel=1e-9)  # as before batching
    assert m.value == pytest.approx(2 * (64 << 20) / 6e-3, rel=1e-9)
    assert m.describe() == "copy 64 MiB, 2*size/t, best of 5 (quick)"


def test_gpu_machine_check_copy_is_batched_like_the_roof(monkeypatch):
    from perfsuite.ceilings import probe

    dev = FakeDevice()
    _fake_copy(monkeypatch, probe, dev)
    out = probe.run_probe("cuda:0", {"copy": {"bytes": 256 << 20}})
    assert out["copy"] == pytest.approx(2 * (256 << 20) * 98 / (98 * 194e-6 + 11e-6), rel=1e-9)
