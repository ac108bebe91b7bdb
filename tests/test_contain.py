"""Instrumentation never breaks the user's run (perfsuite/runner/engine/contain.py): a failure
injected
into each collector (FLOP count, a FLOP formula, profile window, telemetry, checkpoint), through
both routes (`perfsuite run` and `perfsuite.track`), leaves a finished run whose record says
what was lost and whose perfsuite.log holds the traceback."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import perfsuite  # noqa: E402
from perfsuite.flops import register  # noqa: E402
from perfsuite.flops.registry import lookup  # noqa: E402
from perfsuite.record import load_record  # noqa: E402
from perfsuite.runner import RunOptions, run_workload  # noqa: E402
from perfsuite.workloads import register_workload  # noqa: E402
from perfsuite.workloads.digits.workload import DigitsWorkload  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")


class Boom(RuntimeError):
    pass


def _raise(*_a, **_k):
    raise Boom("injected failure")


class _LinearDigits(DigitsWorkload):
    """digits with a linear model: a run of a few seconds."""

    name = "linear-digits"

    def build_model(self, recipe=None):
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))

    def model_name(self, recipe):
        return "linear"


def _run_route(tmp_path):
    register_workload("linear-digits", _LinearDigits)
    opts = RunOptions(
        workload="linear-digits", out=str(tmp_path / "runs"), progress=False,
        measure_peaks=False, inference_repeats=0, epochs=1, threshold=0.05,
        telemetry_interval_s=0.01, profile_steps=1, profile_seconds=0.0,
    )  # fmt: skip
    return load_record(run_workload(opts))


def _track_route(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))

    def step(x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    with perfsuite.track(
        "t", threshold=0.5, model=model, optimizer=opt, out=tmp_path / "runs",
        telemetry_interval_s=0.01, profile_steps=1, measure_peaks=False,
    ) as run:  # fmt: skip
        for xb, yb in run.epoch([(x, y)] * 6):
            run.step(step, xb, yb)
        run.evaluate(top1=1.0)
    return load_record(run.run_dir)


ROUTES = {"run": _run_route, "track": _track_route}


def _inject(monkeypatch, collector):
    from perfsuite.flops import torch_counter
    from perfsuite.runner.engine.profile_window import ProfileWindow
    from perfsuite.runner.measure import telemetry
    from perfsuite.runner.record import checkpoint

    target = {
        "FLOP count": (torch_counter.OpCounter, "__enter__"),
        "profile window": (ProfileWindow, "step"),
        "telemetry": (telemetry.TelemetrySampler, "_take"),
        "checkpoint": (checkpoint, "save_threshold_model"),
    }[collector]
    monkeypatch.setattr(*target, _raise)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("collector", ["FLOP count", "profile window", "telemetry", "checkpoint"])
def test_a_failing_collector_is_contained(tmp_path, monkeypatch, route, collector):
    _inject(monkeypatch, collector)
    rec = ROUTES[route](tmp_path)
    assert rec["status"] == "reached"  # the run finished, as without the failure
    (failure,) = rec["capture_failures"]
    assert failure["collector"] == collector
    assert failure["error"] == "Boom: injected failure"
    assert failure["lost"]
    assert any(f.startswith(f"{collector} failed (Boom: injected failure)") for f in rec["flags"])
    log = (tmp_path / "runs" / rec["run_id"] / rec["sidecars"]["log"]).read_text()
    assert "Traceback (most recent call last)" in log and "Boom: injected failure" in log
    lost_section = {
        "FLOP count": "work",
        "profile window": "timeline",
        "checkpoint": "checkpoint",
    }.get(collector)
    if lost_section:
        assert not rec.get(lost_section)
    if collector == "telemetry":
        stopped = next(n for n in rec["telemetry"]["notes"] if "sampling stopped" in n)
        assert stopped.endswith("Boom: injected failure")  # the exception, named
    else:  # the others were measured as usual
        assert rec["telemetry"]["samples"] >= 1
    if collector != "FLOP count":
        assert rec["work"]["flops_per_step"]["value"] > 0
    if collector != "profile window":
        assert rec["timeline"]["ops"]
    assert not torch._C._autograd._profiler_enabled()  # a failed window closed its profiler


@pytest.fixture
def broken_addmm():
    """aten::addmm's formula raises (Linear's forward); the built-in is put back after."""
    old = lookup("aten::addmm")
    register("aten::addmm", family="matmul")(_raise)
    yield
    register("aten::addmm", family=old.family, composite=old.composite)(old.formula)


@pytest.mark.parametrize("route", ROUTES)
def test_a_raising_formula_leaves_its_op_not_modeled(tmp_path, route, broken_addmm):
    rec = ROUTES[route](tmp_path)
    assert rec["status"] == "reached"
    work = rec["work"]
    errors = [u for u in work["unknown_ops"] if u.get("error")]
    assert [(u["op"], u["error"]) for u in errors] == [
        ("aten::addmm", "formula error: Boom: injected failure")
    ]
    assert errors[0]["calls"] >= 1
    assert "aten::addmm" not in {r["op"] for r in work["per_op"]}
    assert work["flops_per_step"]["value"] > 0  # the other ops are still counted
    incomplete = next(f for f in rec["flags"] if f.startswith("FLOP count incomplete:"))
    assert "formula raised: aten::addmm x" in incomplete
    log = (tmp_path / "runs" / rec["run_id"] / rec["sidecars"]["log"]).read_text()
    assert "FLOP formula of aten::addmm raised" in log and "Boom: injected failure" in log
    assert "capture_failures" not in rec  # the count itself finished
