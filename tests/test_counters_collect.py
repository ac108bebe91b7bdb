"""Collector choice and the ncu runner, with a fake `ncu` script that prints a real H100 capture."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from perfsuite.counters import collect
from tests.conftest import shared_path

GEMM_FLOP = 2 * 4096**3


def _fake_ncu(tmp_path, monkeypatch, csv_path, rc=0):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "ncu"
    args = tmp_path / "ncu-args.txt"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > "{args}"\n'
        "echo '==PROF== Connected to process 1'\n"
        f'cat "{csv_path}"\n'
        f"echo 'ncu: fake failure' >&2\nexit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(collect.NCU_ENV, raising=False)
    return args


def test_cupti_probe_on_cpu_torch_says_why():
    collect.cupti_range_profiler_available.cache_clear()
    ok, why = collect.cupti_range_profiler_available()
    torch = pytest.importorskip("torch")
    if torch.version.cuda is None:
        assert ok is False and why.startswith("CPU-only torch build")
    assert collect.cupti_range_profiler_available() == (ok, why)  # cached


def test_cupti_probe_child_failure_is_a_reason_not_an_exception():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    ok, why = collect._probe_range_profiler("x", timeout_s=120)  # the child needs CUDA
    assert ok is False and why.startswith("CUPTI range-profiler probe failed (status 1): ")


def test_choose_collector(monkeypatch):
    monkeypatch.setattr(collect, "cupti_range_profiler_available", lambda: (False, "no kineto"))
    monkeypatch.setattr(collect, "find_ncu", lambda: "/opt/ncu")
    assert collect.choose_collector("cupti", True) == (
        "ncu",
        "no kineto; using Nsight Compute instead (/opt/ncu)",
    )
    assert collect.choose_collector("ncu", True) == ("ncu", "Nsight Compute at /opt/ncu")
    tool, why = collect.choose_collector("ncu", False)
    assert tool is None and "need an NVIDIA GPU" in why
    monkeypatch.setattr(collect, "find_ncu", lambda: None)
    tool, why = collect.choose_collector("cupti", True)
    assert tool is None and why.startswith("no kineto; and no ncu found")
    tool, why = collect.choose_collector("ncu", True)
    assert tool is None and why.startswith("ncu not found")
    assert collect.choose_collector("papi", True)[0] is None
    monkeypatch.setattr(collect, "cupti_range_profiler_available", lambda: (True, "fine"))
    assert collect.choose_collector("cupti", True) == ("cupti", "fine")


def test_find_ncu_env_and_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(collect, "_NCU_GLOBS", ())
    monkeypatch.delenv(collect.NCU_ENV, raising=False)
    assert collect.find_ncu() is None
    exe = tmp_path / "my-ncu"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv(collect.NCU_ENV, str(exe))
    assert collect.find_ncu() == str(exe)


def test_collect_ncu_with_fake_ncu(tmp_path, monkeypatch):
    csv = shared_path("gpu", "h100-resnet9-2steps-tf32.ncu.csv")
    args_file = _fake_ncu(tmp_path, monkeypatch, csv)
    out = tmp_path / "run"
    replay = ["run", "cifar10", "--device", "cuda", "--replay-window", "2"]
    sec, why = collect.collect_ncu(replay, out)
    assert sec is not None, why
    argv = args_file.read_text().splitlines()
    i = argv.index("--nvtx-include")
    assert argv[i + 1] == "perfsuite.steps" and "--nvtx" in argv
    assert argv[-len(replay) - 3 :] == [sys.executable, "-m", "perfsuite", *replay]
    assert sec["window_steps"] == 2 and sec["nvtx_range"] == "perfsuite.steps"
    assert sec["file"] == "counters-ncu.csv" and (out / "counters-ncu.csv").is_file()
    assert sec["per_step"]["flops_tensor"] == 1_168_231_104_512
    assert sec["has_backward"] is True
    assert why == "ncu profiled 336 kernel launches"


def test_collect_ncu_failures_never_raise(tmp_path, monkeypatch):
    csv = shared_path("gpu", "h100-gemm4096.ncu.csv")
    _fake_ncu(tmp_path, monkeypatch, csv, rc=3)
    sec, why = collect.collect_ncu(["run", "x"], tmp_path / "o")
    assert sec is None and why.startswith("ncu exited with status 3: ncu: fake failure")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    (tmp_path / "bin" / "ncu").unlink()
    (tmp_path / "bin").rmdir()
    _fake_ncu(tmp_path, monkeypatch, empty)
    sec, why = collect.collect_ncu(["run", "x"], tmp_path / "o2")
    assert sec is None and "column Kernel Name: no ncu CSV header" in why
    monkeypatch.setattr(collect, "find_ncu", lambda: None)
    assert collect.collect_ncu(["run"], tmp_path / "o3")[0] is None


def test_calibrate_without_gpu_is_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    from perfsuite.cli import main

    assert main(["counters", "--calibrate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "perfsuite: error: calibration not run: calibration needs an NVIDIA GPU with CUDA "
        "PyTorch; none is visible here"
    )
    assert main(["counters"]) == 2
    assert "give a SOURCE file, or --calibrate" in capsys.readouterr().err


def test_ncu_rep_falls_back_to_ncu_csv_export(tmp_path, monkeypatch):
    from perfsuite.counters import load_counters

    monkeypatch.setitem(sys.modules, "ncu_report", None)  # the module does not import
    args_file = _fake_ncu(tmp_path, monkeypatch, shared_path("gpu", "h100-gemm4096.ncu.csv"))
    rep = tmp_path / "gemm.ncu-rep"
    rep.write_bytes(b"\0binary")
    sec = load_counters(rep)
    assert args_file.read_text().splitlines() == [
        "-i", str(rep), "--csv", "--page", "raw", "--print-units", "base",
    ]  # fmt: skip
    assert sec["totals"]["flops_tensor"] == 3 * GEMM_FLOP
    assert sec["notes"][0] == (
        "read through the ncu CSV export of the report (ncu_report not importable)"
    )
