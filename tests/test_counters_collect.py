"""Collector choice and the ncu runner, with a fake `ncu` script that prints a real H100 capture."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from perfsuite.counters import collect, ncu_binary
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
    monkeypatch.delenv(ncu_binary.NCU_ENV, raising=False)
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
    assert ok is False and "CUPTI" in why and "(status 1)" in why


def test_choose_collector(monkeypatch):
    monkeypatch.setattr(collect, "cupti_range_profiler_available", lambda: (False, "no kineto"))
    monkeypatch.setattr(ncu_binary, "find_ncu", lambda: "/opt/ncu")
    tool, why = collect.choose_collector("cupti", True)
    assert tool == "ncu" and why.startswith("no kineto") and "(/opt/ncu)" in why
    assert collect.choose_collector("ncu", True) == ("ncu", "Nsight Compute at /opt/ncu")
    tool, why = collect.choose_collector("ncu", False)
    assert tool is None and "need an NVIDIA GPU" in why
    monkeypatch.setattr(ncu_binary, "find_ncu", lambda: None)
    tool, why = collect.choose_collector("cupti", True)
    assert tool is None and why.startswith("no kineto; and no ncu found")
    tool, why = collect.choose_collector("ncu", True)
    assert tool is None and why.startswith("ncu not found")
    assert collect.choose_collector("papi", True)[0] is None
    monkeypatch.setattr(collect, "cupti_range_profiler_available", lambda: (True, "fine"))
    assert collect.choose_collector("cupti", True) == ("cupti", "fine")


def test_find_ncu_env_and_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu_binary, "_NCU_GLOBS", ())
    monkeypatch.delenv(ncu_binary.NCU_ENV, raising=False)
    assert ncu_binary.find_ncu() is None
    exe = tmp_path / "my-ncu"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv(ncu_binary.NCU_ENV, str(exe))
    assert ncu_binary.find_ncu() == str(exe)


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
    assert sec is None and "status 3" in why and "fake failure" in why
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    (tmp_path / "bin" / "ncu").unlink()
    (tmp_path / "bin").rmdir()
    _fake_ncu(tmp_path, monkeypatch, empty)
    sec, why = collect.collect_ncu(["run", "x"], tmp_path / "o2")
    assert sec is None and "column Kernel Name: no ncu CSV header" in why
    monkeypatch.setattr(ncu_binary, "find_ncu", lambda: None)
    assert collect.collect_ncu(["run"], tmp_path / "o3")[0] is None


def test_calibrate_without_gpu_is_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    from perfsuite.cli import main

    assert main(["counters", "--calibrate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("perfsuite: error: calibration not run") and "NVIDIA GPU" in err[-1]
    assert main(["counters"]) == 2
    assert "give a SOURCE file, or --calibrate" in capsys.readouterr().err


def test_calibration_is_per_chip_and_kept_for_later_sections(
    tmp_path, monkeypatch, private_cache, capsys
):
    """The H100 GEMM capture renamed to an H200 (same cc 9.0, same die): its Tensor-Core
    counters are not "calibrated" on that chip until `perfsuite counters --calibrate` ran there;
    then every section from a chip of that name says so, with when and the verdict."""
    torch = pytest.importorskip("torch")
    from perfsuite.analyzers.roofline.measured import calibration_text
    from perfsuite.cli import main
    from perfsuite.counters import calibration_cache, load_counters

    capture = tmp_path / "h200-gemm.csv"
    text = shared_path("gpu", "h100-gemm4096.ncu.csv").read_text()
    capture.write_text(text.replace("NVIDIA H100 80GB HBM3", "NVIDIA H200"))
    reference = load_counters(shared_path("gpu", "h100-gemm4096.ncu.csv"))["calibrated"]
    calibrated = {"fp16": True, "bf16": True, "tf32": True, "fp8": False, "fp64": False}
    assert reference["precisions"] == calibrated  # fp8/fp64: formulas never checked
    assert "reference chip" in reference["basis"] and "H100 80GB" in reference["basis"]
    before = load_counters(capture)["calibrated"]
    assert before["device_name"] == "NVIDIA H200" and before["device_cc"] == "9.0"
    assert not any(before["precisions"].values()) and before["local"] is None
    assert (
        "not calibrated on NVIDIA H200" in before["basis"]
        and "not the same chip" in before["basis"]
    )
    # --calibrate on "the H200": the fake ncu prints the renamed capture
    _fake_ncu(tmp_path, monkeypatch, capture)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert main(["counters", "--calibrate"]) == 0
    out = capsys.readouterr()
    assert "calibration passed" in out.out and "kept for NVIDIA H200" in out.err
    kept = calibration_cache.entry_for("NVIDIA H200")
    assert kept["ok"] and kept["precisions"]["tf32"]["measured"] == GEMM_FLOP
    after = load_counters(capture)
    assert after["calibrated"]["precisions"] == calibrated
    assert "fp16, bf16, tf32 calibrated" in calibration_text(after)
    # a failed calibration is kept as failed: nothing is marked calibrated by it
    data = calibration_cache.load()
    data["chips"]["NVIDIA H200"]["ok"] = False
    data["chips"]["NVIDIA H200"]["precisions"]["tf32"]["ok"] = False
    calibration_cache.cache_path().write_text(__import__("json").dumps(data))
    failed = load_counters(capture)["calibrated"]
    assert failed["precisions"]["tf32"] is False and failed["precisions"]["bf16"] is True
    assert failed["basis"].endswith("FAILED")
    # a misshapen cache is an empty one, never half-trusted
    calibration_cache.cache_path().write_text('{"version": 1, "chips": []}')
    assert load_counters(capture)["calibrated"]["local"] is None


def test_older_sections_say_their_rule(tmp_path):
    from perfsuite.analyzers.roofline.measured import calibration_text
    from perfsuite.record.migrate import migrate

    cal = {"precisions": {"tf32": True, "fp8": False}, "device_cc": "9.0"}
    old = {"device": {"name": "NVIDIA H200", "cc": "9.0"}, "calibrated": cal}
    old = migrate({"schema_version": 2, "counters": old})["counters"]  # as loaded
    text = calibration_text(old)
    assert text.startswith("calibration: tf32 calibrated;") and "older rule" in text
    assert "cc 9.0" in text and text.endswith("NVIDIA H200")
    assert calibration_text({"kernels": []}) is None


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
    note = sec["notes"][0]
    assert "ncu CSV export" in note and "ncu_report: not installed" in note


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--no-capture"], "--counters ncu needs capture: drop --no-capture"),
        (["--framework", "tensorflow"], "--counters: PyTorch runs only"),
    ],
)
def test_counters_requests_that_would_collect_nothing_are_refused(extra, said, capsys):
    """Without capture there is no window to replay, and the replay child runs the PyTorch
    workload: either would leave the record without counters and without a word."""
    from perfsuite.cli import main

    assert main(["run", "digits", "--device", "cuda", "--counters", "ncu", *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
