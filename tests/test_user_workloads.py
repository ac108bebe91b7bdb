"""A user's own workload file and training loop (`perfsuite.track`): full records, detours
taken out of the clock's CPU time and page faults, the threshold model kept."""

from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from perfsuite.hostinfo import low_precision_note, native_on_cpu  # noqa: E402
from perfsuite.record import load_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("private_cache")


def test_user_workload_file_runs_through_the_cli(tmp_path, capsys, monkeypatch):
    from perfsuite.__main__ import main

    monkeypatch.chdir(ROOT)  # the file is named relative to the working directory
    run = ["run", "examples/my_workload.py:TinyDigits", "--out", str(tmp_path / "runs")]
    assert main([*run, "--quiet", "--no-peaks", "--no-capture"]) == 0
    rec = load_record(Path(capsys.readouterr().out.strip().splitlines()[-1]))
    assert rec["task"]["workload"] == "tiny-digits"
    assert rec["model"] == "tiny conv net (8 channels)"
    assert rec["config"]["recipe_values"]["batch_size"] == 128
    assert main(["run", "examples/nope.py:X"]) != 0
    err = capsys.readouterr().err
    assert "no such file examples/nope.py" in err
    assert len(err.strip().splitlines()) == 1


def test_user_loop_example_writes_a_full_record(tmp_path):
    from perfsuite.__main__ import main

    # roofs set by hand in the test's cache: the example measures none mid-run (seconds of
    # micro-benchmarks that nothing below reads)
    assert main(["peaks", "--set", "float32=5e12", "--set", "bandwidth=1e12"]) == 0
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import user_loop
    finally:
        sys.path.pop(0)
    rec = load_record(user_loop.main(str(tmp_path / "runs")))
    assert rec["status"] in ("reached", "not_reached")
    assert rec["task"]["workload"] == "user loop"
    assert len(rec["evaluations"]) >= 1
    # FLOPs of the user's step: two Linear layers, forward 2*B*(64*128 + 128*10)
    fwd = sum(
        r["flops"]
        for r in rec["work"]["per_op"]
        if r["op"] in ("aten::mm", "aten::addmm")
        and r.get("phase") in (None, "unphased", "forward")
    )
    assert fwd >= 2 * 64 * (64 * 128 + 128 * 10)
    assert rec["timeline"]["ops"] and rec["timeline"]["measured_step_time"]["value"] > 0
    assert rec["data"]["kind"] == "user loader"
    # CPU time and page faults on the clock's edges, one per epoch, detours taken out
    walls = rec["throughput"]["epoch_times_s"]
    cpu, faults = rec["throughput"]["epoch_cpu_times_s"], rec["throughput"]["epoch_minor_faults"]
    assert len(cpu) == len(faults) == len(walls)
    assert all(0 <= c <= w * (os.cpu_count() or 1) + 0.05 for c, w in zip(cpu, walls, strict=True))
    assert all(f >= 0 for f in faults)
    assert rec["throughput"]["step_time"]["value"] > 0


def _touch_fresh_pages(size: int) -> None:
    buf = mmap.mmap(-1, size)  # fresh anonymous memory: every first write is a page fault
    for offset in range(0, size, mmap.PAGESIZE):
        buf[offset] = 1
    buf.close()


def test_track_takes_its_detours_out_of_cpu_time_and_page_faults(tmp_path):
    import perfsuite

    torch.manual_seed(0)
    model = torch.nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 256)

    def step(xb):
        loss = sum((model(xb) @ torch.randn(256, 256)).pow(2).mean() for _ in range(2))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    with perfsuite.track(
        "detours", metric="top1", threshold=0.99, model=model, optimizer=opt, epochs=1,
        batch_size=256, profile_steps=40, out=str(tmp_path / "runs"), progress=False,
        measure_peaks=False,
    ) as run:  # fmt: skip
        for xb in run.epoch([x, x, x]):  # 3 timed steps; the window calls the step 42 times
            run.step(step, xb)
        run.evaluate(top1=0.5)
        # a detour's fresh pages are counted as paused, not as the epoch's
        before = run.engine._paused.faults
        run.off_clock(_touch_fresh_pages, 16 * 2**20)
        fresh = run.engine._paused.faults - before
        assert fresh >= 16 * 2**20 // mmap.PAGESIZE // 512  # THP: 512/fault
    rec = load_record(run.run_dir)
    (wall,), (cpu,) = rec["throughput"]["epoch_times_s"], rec["throughput"]["epoch_cpu_times_s"]
    # Without the detours taken out, CPU time would hold the window's 42 steps (at least one
    # busy thread for its whole wall time); the bound below can fail only if the window is
    # longer than it, which the first assertion checks (steps slow alike under contention).
    bound = wall * (os.cpu_count() or 1) + 0.05
    assert rec["extra"]["setup_s"]["profile_window_s"] > bound
    assert cpu <= bound
    assert rec["throughput"]["epoch_minor_faults"][0] >= 0


def test_user_loop_under_bf16_autocast_records_its_math_and_the_cpu_note(tmp_path):
    import perfsuite

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(256, 16), torch.randint(0, 4, (256,))

    def step(xb, yb):
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    batches = [(x[i : i + 32], y[i : i + 32]) for i in range(0, 256, 32)]
    with perfsuite.track(
        "bf16-loop", metric="top1", threshold=0.99, model=model, optimizer=opt, epochs=1,
        batch_size=32, out=str(tmp_path / "runs"), progress=False, measure_peaks=False,
    ) as run:  # fmt: skip
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for xb, yb in run.epoch(batches):
                run.step(step, xb, yb)
        run.evaluate(top1=0.5)
    rec = load_record(run.run_dir)
    assert rec["math"]["autocast_dtype"] == "bfloat16"
    note = low_precision_note("bfloat16", native_on_cpu("bfloat16"))  # None with bf16 instructions
    assert (
        (note in rec["flags"]) if note else not any("autocast on a CPU" in f for f in rec["flags"])
    )


def test_track_keeps_the_model_that_first_met_the_threshold(tmp_path):
    """perfsuite.track saves the threshold model like `perfsuite run`: the weights at the first
    evaluation at or above the threshold, not the last epoch's."""
    import perfsuite
    from perfsuite.runner.record.checkpoint import load_threshold_model

    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.tensor([0, 1] * 4)
    snapshots = []
    with perfsuite.track(
        "toy", threshold=0.5, model=model, optimizer=opt, out=tmp_path, capture=False
    ) as run:
        for metric in (0.2, 0.6, 0.9):  # reached at the second evaluation
            for xb, yb in run.epoch([(x, y)]):
                loss = torch.nn.functional.cross_entropy(model(xb), yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
            snapshots.append(model.weight.detach().clone())
            run.evaluate(top1=metric)
    rec = load_record(run.run_dir)
    assert rec["checkpoint"]["epoch"] == 2 and rec["checkpoint"]["value"] == 0.6
    assert rec["checkpoint"]["evaluation_index"] == 1
    state = load_threshold_model(rec)
    assert torch.equal(state["weight"], snapshots[1])
    assert not torch.equal(state["weight"], snapshots[2])
