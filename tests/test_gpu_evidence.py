"""`python -m bench gpu_evidence --dry-run`: every section runs at toy size on a CPU, the results
files have their structure, and what a CPU cannot measure says why instead of a number."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import gpu_evidence as ge

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = [
    "setup",
    "cifar10_airbench",
    "cifar10_airbench_muon",
    "resnet50_training",
    "latency",
    "energy",
    "ncu_counters",
    "gpt",
]


# Session scope: a module fixture is rebuilt when a parallel worker interleaves files.
@pytest.fixture(scope="session")
def dry_tmpdir(tmp_path_factory) -> Path:
    """The TMPDIR of the dry run: its scratch folder goes there."""
    return tmp_path_factory.mktemp("evidence-tmpdir")


@pytest.fixture(scope="session")
def dry(tmp_path_factory, dry_tmpdir) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("evidence")
    argv = ["gpu_evidence", "--dry-run", "--device", "cpu", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *argv],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(dry_tmpdir)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (js,) = out.glob("*-dry-run.json")
    (md,) = out.glob("*-dry-run.md")
    return json.loads(js.read_text()), md.read_text()


def test_the_scratch_folder_is_removed(dry, dry_tmpdir):
    """The CIFAR-10 copy and the sections' runs (about 100 MB) do not outlive the command."""
    assert list(dry_tmpdir.iterdir()) == []


def _section(doc: dict, name: str) -> dict:
    return next(s for s in doc["sections"] if s["name"] == name)


def test_results_json_structure(dry):
    doc, _ = dry
    assert doc["schema"] == ge.SCHEMA and doc["dry_run"] is True
    env = doc["environment"]
    assert env["device"] == "cpu" and env["torch"] and "driver" in env and "cuda" in env
    assert doc["source"]["commit"] and "gpu_evidence --dry-run" in doc["command"]
    assert [s["name"] for s in doc["sections"]] == SECTIONS
    for s in doc["sections"]:
        assert s["status"] in ("measured", "partial", "not measured", "skipped", "failed"), s
        assert s["status"] != "failed", s["reasons"]
        if s["status"] in ("not measured", "skipped"):
            assert s["reasons"], f"{s['name']} gives no reason"
        for f in s["figures"]:
            assert {"name", "unit", "n", "source"} <= set(f), f
            if "values" in f:
                assert f["n"] == len(f["values"])


def test_sections_ran_at_toy_size(dry):
    doc, _ = dry
    for name in ("cifar10_airbench", "cifar10_airbench_muon"):
        sec = _section(doc, name)
        assert sec["status"] == "measured", sec["reasons"]
        figs = {f["name"].split(" top-1")[0]: f for f in sec["figures"]}
        assert figs["time to 0.0%"]["n"] == 1 and figs["time to 0.0%"]["mean"] > 0
        assert figs["fraction reaching"]["value"] == 1.0
        assert any("precision fp32" in n and "for GPUs" in n for n in sec["notes"])
    resnet = _section(doc, "resnet50_training")
    assert [f["name"] for f in resnet["figures"]] == ["ResNet-50 training, TF32 eager"]
    assert all(f["mean"] > 0 for f in resnet["figures"])
    assert any("TF32 applies to NVIDIA GPUs only" in r for r in resnet["reasons"])
    assert any("+ compile: not run in the dry run" in r for r in resnet["reasons"])
    rows = _section(doc, "latency")["table"]
    assert {(r["mode"], r["precision"]) for r in rows} == {("eager", "fp32")}
    assert {r["model"].split(" ")[0] for r in rows} == {"cifar10", "ResNet-50"}
    assert all(r["partial"] and r["n"] == 3 and r["mean_s"] > 0 for r in rows)
    from perfsuite.workloads import workload_names

    if "gpt" in workload_names():  # its toy run finishes well inside the section's budget
        gpt = _section(doc, "gpt")
        assert gpt["status"] == "measured", gpt["reasons"]
        figs = {f["name"]: f for f in gpt["figures"]}
        assert figs["tokens_per_s"]["n"] == 1 and figs["tokens_per_s"]["mean"] > 0
        assert 0 < figs["mfu"]["mean"] <= 1 if "mfu" in figs else "mfu" in gpt["reasons"][0]


def test_unmeasurable_sections_say_why(dry):
    doc, md = dry
    lat = _section(doc, "latency")["reasons"]
    assert any("cudagraphs" in r and "CUDA device" in r for r in lat)
    ncu = _section(doc, "ncu_counters")
    assert ncu["status"] == "not measured" and "NVIDIA GPUs only" in ncu["reasons"][0]
    assert not ncu["table"]
    energy = _section(doc, "energy")
    if energy["status"] == "not measured":  # no RAPL here; where there is, it is measured
        assert all("not measured:" in r for r in energy["reasons"])
    gpt = _section(doc, "gpt")
    from perfsuite.workloads import workload_names

    if "gpt" not in workload_names():
        assert gpt["status"] == "skipped" and "not registered" in gpt["reasons"][0]
    assert "DRY RUN" in md and "not measured" in md
    for s in doc["sections"]:
        assert f"## {s['title']}" in md


def test_spread_and_gpt_lookup():
    f = ge.spread("t", [2.0, 4.0], "s", "x")
    assert (f["n"], f["mean"], f["min"], f["max"]) == (2, 3.0, 2.0, 4.0)
    assert f["cov"] == pytest.approx(2**0.5 / 3)
    assert ge.spread("t", [1.0], "s", "x")["cov"] is None
    rec = {"model_flops": {"tokens_per_s": {"value": 1e5}, "mfu": {"value": 0.4}}}
    found = ge.gpt_figures(rec)
    assert found["tokens_per_s"]["value"] == 1e5 and found["mfu"]["value"] == 0.4
    assert found["mfu"]["from"] == "model_flops.mfu" and found["missing"] == []
    absent = {"model_flops": {"tokens_per_s": 3.0, "mfu": {"value": None, "source": "no peak"}}}
    assert ge.gpt_figures(absent)["missing"] == ["mfu (no peak)"]
    assert ge.gpt_figures({})["missing"] == ["tokens_per_s", "mfu"]


def test_compile_cudagraphs_mode_is_gpu_only():
    from perfsuite.backends import parse_device
    from perfsuite.runner.measure.inference import InferenceError, check_mode

    with pytest.raises(InferenceError, match="compile-cudagraphs needs a CUDA device"):
        check_mode("compile-cudagraphs", "fp16", parse_device("cpu"))
    check_mode("compile", "fp16", parse_device("cpu"))


def test_only_and_the_overall_budget(tmp_path):
    """Sections not selected, and sections that find no time left, say so; none is faked."""
    argv = ["--dry-run", "--device", "cpu", "--only", "ncu_counters"]
    md = ge.main([*argv, "--out", str(tmp_path / "a")])
    doc = json.loads(md.with_suffix(".json").read_text())
    status = {s["name"]: s["status"] for s in doc["sections"]}
    assert status["ncu_counters"] == "not measured"
    assert status["cifar10_airbench"] == "skipped"
    assert _section(doc, "cifar10_airbench")["reasons"] == ["not selected (--only)"]
    # 14.9 s less the 10 s kept for writing leaves under 5 s: every selected section is skipped
    doc = json.loads(
        ge.main([*argv, "--budget", "14.9", "--out", str(tmp_path / "b")])
        .with_suffix(".json")
        .read_text()
    )
    ncu = _section(doc, "ncu_counters")
    assert ncu["status"] == "skipped" and "no time left" in ncu["reasons"][0]


# -- the GPU plan: what `make gpu-evidence` runs, pinned ---------------------------------------


def _gpu_plan(tmp_path: Path, monkeypatch) -> dict[str, list[list[str]]]:
    """Every `perfsuite` command the GPU run's sections issue, by section, with the process
    call replaced by a recorder (no GPU, nothing run): the dry run's changes cannot reach it."""
    calls: dict[str, list[list[str]]] = {}

    def record(self, section, args):
        calls.setdefault(section.name, []).append(list(args))
        entry = {
            "latency": {"value": 1e-3},
            "latency_p50_s": 1e-3,
            "latency_p90_s": 1e-3,
            "latency_p99_s": 1e-3,
            "examples": 10,
            "partial": False,
        }
        out = json.dumps({"inference": entry}) if args[0] == "infer" else "{}"
        return subprocess.CompletedProcess(args, 0, out, "")

    monkeypatch.setattr(ge.Context, "perfsuite", record)
    monkeypatch.setenv("PERFSUITE_NCU", "/bin/true")
    ctx = ge.Context(dry=False, device="cuda", gpu=True, work=tmp_path, runs=5, deadline=1e12)
    ctx.data_dir = "/data/cifar10"
    ctx.section_deadline = 1e12
    sec = lambda name: ge.Section(name, name)  # noqa: E731
    ge.cifar(ctx, sec("cifar10_airbench"), "airbench")
    ge.cifar(ctx, sec("cifar10_airbench_muon"), "airbench_muon")
    ge.resnet50(ctx, sec("resnet50_training"))
    reached = {"time_to_accuracy": {"reached": True}, "_dir": "/runs/c"}
    ctx.records = {"cifar10_airbench_muon": [reached], "resnet50_training": [{"_dir": "/runs/r"}]}
    ge.latency(ctx, sec("latency"))
    ge.ncu(ctx, sec("ncu_counters"))
    ge.gpt(ctx, sec("gpt"))
    return calls


def test_the_gpu_plan_is_unchanged(tmp_path, monkeypatch):
    """The commands of a GPU run, argument by argument: a dry-run change that leaked into them
    would change what the evidence measures."""
    w = str(tmp_path)
    plan = _gpu_plan(tmp_path, monkeypatch)
    cifar = ["--device", "cuda", "--out"]
    tail = ["--repeats", "5", "--quiet", "--no-peaks", "--profile-steps", "0"]
    tail += ["--inference-limit", "1", "--data-dir", "/data/cifar10", "--threshold", "0.905"]
    for recipe in ("airbench", "airbench_muon"):
        name = f"cifar10_{recipe}"
        assert plan[name] == [["run", "cifar10", "--recipe", recipe, *cifar, f"{w}/{name}", *tail]]
    base = ["run", "imagenet", "--synthetic", "--device", "cuda", "--threshold", "0", "--quiet"]
    base += ["--no-capture", "--inference-limit", "1", "--epochs", "2", "--batch-size", "256"]
    base += ["--set", "train_limit=3840", "--set", "eval_limit=5000"]
    assert plan["resnet50_training"] == [
        [*base, "--out", f"{w}/resnet50-{folder}", "--switch", switches]
        for folder, switches in (
            ("tf32on", "tf32=on"),
            ("bf16-channels_last", "bf16,channels_last"),
            ("bf16-channels_last-compile", "bf16,channels_last,compile"),
        )
    ]
    modes = [("eager", "fp32"), ("eager", "bf16"), ("compile", "fp16"), ("cudagraphs", "fp16")]
    modes += [("cudagraphs", "bf16"), ("compile-cudagraphs", "fp16")]
    modes += [("compile-cudagraphs", "bf16")]
    assert plan["latency"] == [
        ["infer", run, "--mode", m, "--precision", p, "--device", "cuda", "--json", "--no-store"]
        + (["--limit", "2000"] if m == "eager" else [])
        for run in ("/runs/c", "/runs/r")
        for m, p in modes
    ]
    ncu = ["run", "cifar10", "--recipe", "airbench", "--device", "cuda", "--epochs", "1"]
    ncu += ["--counters", "ncu", "--no-peaks", "--inference-limit", "1", "--quiet"]
    ncu += ["--out", f"{w}/ncu", "--threshold", "0", "--data-dir", "/data/cifar10"]
    assert plan["ncu_counters"] == [ncu]  # no record: roofline is not reached
    from perfsuite.workloads import workload_names

    if "gpt" in workload_names():
        text = ["--data-dir", str(ge.GPT_TEXT)] if ge.GPT_TEXT.is_file() else ["--synthetic"]
        gpt = ["run", "gpt", "--device", "cuda", "--out", f"{w}/gpt", "--quiet", "--no-peaks"]
        assert plan["gpt"] == [[*gpt, "--recipe", "fast", "--epochs", "1", *text]]
    assert (ge.BUDGET_S, ge.RESERVE_S, ge.THRESHOLD) == (720.0, 10.0, 0.905)
    assert ge.BUDGETS == {
        "setup": 90,
        "cifar10_airbench": 100,
        "cifar10_airbench_muon": 180,
        "resnet50_training": 130,
        "latency": 110,
        "energy": 5,
        "ncu_counters": 70,
        "gpt": 30,
    }


def test_the_dry_run_shares_one_process_and_the_gpu_run_does_not(tmp_path):
    """A dry run's commands go to one `perfsuite` process in turn; a GPU run's each start one."""
    sec = ge.Section("s", "s")
    for dry in (True, False):
        end = time.monotonic() + 120
        ctx = ge.Context(dry=dry, device="cpu", gpu=False, work=tmp_path, runs=1, deadline=end)
        ctx.section_deadline = end
        try:
            helped = ctx.perfsuite(sec, ["run", "--help"])
            first = ctx.worker
            failed = ctx.perfsuite(sec, ["validate", str(tmp_path / "absent")])
            assert ctx.worker is first and (first is not None) == dry
        finally:
            if ctx.worker is not None:
                ctx.worker.close()
        assert helped.returncode == 0 and "--threshold" in helped.stdout
        assert failed.returncode != 0 and "absent" in failed.stdout + failed.stderr
    assert sec.commands == ["perfsuite run --help", f"perfsuite validate {tmp_path}/absent"] * 2


def test_a_dry_run_command_past_its_time_is_killed():
    worker = ge.Worker({**os.environ, "PYTHONPATH": str(ROOT)})
    with pytest.raises(subprocess.TimeoutExpired):
        worker.call(["run", "digits", "--epochs", "1"], limit=0.2)
    assert worker.proc.poll() is not None  # the process group was killed
