"""The profile window ends whatever --profile-steps asks: at a step, time or memory bound,
named in the timeline's notes, with the steps it recorded."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from perfsuite.runner.engine import profile_window as pw  # noqa: E402


def _window(tmp_path, active):
    backend = SimpleNamespace(device=SimpleNamespace(is_gpu=False), sync=lambda: None)
    return pw.ProfileWindow(tmp_path, backend, wait=1, warmup=1, active=active)


def _run(window, pause=0.0, limit=10_000):
    x = torch.randn(16, 16)
    n = 0
    for _ in range(min(window.total_steps, limit)):
        (x @ x).sum()
        time.sleep(pause)
        n += 1
        window.step()
        if window.done:
            break
    window.close()
    return n, window.result()


def test_steps_beyond_the_bound_are_capped_and_said(tmp_path, monkeypatch):
    monkeypatch.setattr(pw, "MAX_WINDOW_STEPS", 4)
    n, result = _run(_window(tmp_path, 100_000))
    assert n == 6 and result["steps"] == 4  # wait 1 + warmup 1 + 4 active
    (note,) = result["notes"]
    assert note.startswith("profile window capped at 4 steps (100000 asked)")
    assert "MAX_WINDOW_STEPS" in note


def test_the_time_bound_cuts_the_window_with_the_steps_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(pw, "MAX_WINDOW_S", 0.3)
    n, result = _run(_window(tmp_path, 500), pause=0.05)
    assert n < 20 and result is not None
    assert 1 <= result["steps"] == n - 2
    (note,) = result["notes"]
    assert note.startswith(f"profile window cut at {result['steps']} of 500 steps")
    assert "time bound" in note
    assert (tmp_path / pw.TRACE_NAME).is_file()


def test_the_memory_bound_cuts_the_window(tmp_path, monkeypatch):
    monkeypatch.setattr(pw, "MAX_WINDOW_BYTES", -1)  # any growth (none, even) is too much
    n, result = _run(_window(tmp_path, 500))
    assert result["steps"] == 1 and n == 3
    assert "the memory bound" in result["notes"][0]
