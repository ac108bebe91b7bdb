"""`perfsuite run ... --profiler nsys`: refused before training, saying why, where nsys or a
GPU is missing; where both are there, the child it profiles replays the run's window."""

from __future__ import annotations

from pathlib import Path

from perfsuite.cli import main
from perfsuite.runner.options import RunOptions
from perfsuite.runner.routes.nsys_profile import REPORT, profile_command, why_not


def test_without_nsys_the_run_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["run", "digits", "--profiler", "nsys", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "--profiler nsys: cannot record a profile: nsys (Nsight Systems) is not on PATH"
    )
    assert not any(tmp_path.iterdir())  # nothing trained, nothing written


def test_on_a_cpu_the_run_is_refused(tmp_path, capsys, monkeypatch):
    fake = tmp_path / "nsys"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert (
        why_not("cpu", "pytorch") == "it profiles NVIDIA GPUs; this run is on cpu (--device cuda)"
    )
    assert why_not("cuda", "tensorflow").endswith("not tensorflow")
    assert why_not("cuda:0", "pytorch") is None
    assert main(["run", "digits", "--profiler", "nsys", "--device", "cpu"]) == 2
    assert "this run is on cpu" in capsys.readouterr().err


def test_the_profiled_child_replays_the_window():
    opts = RunOptions("cifar10", device="cuda", seed=3, profile_steps=4, profiler="nsys")
    cmd = profile_command(opts, Path("/runs/r1"), 4)
    assert cmd[:8] == [
        "nsys",
        "profile",
        "--trace",
        "cuda,nvtx",
        "--force-overwrite",
        "true",
        "--output",
        f"/runs/r1/{REPORT}",
    ]
    child = cmd[cmd.index("perfsuite") + 1 :]
    assert child[:2] == ["run", "cifar10"] and child[-2:] == ["--replay-window", "4"]
    assert "--profiler" not in child  # the child records no profile of its own
