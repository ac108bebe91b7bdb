"""Shared fixtures: where the shared real data lives, and records built in memory."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PERFSUITE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data; skips the test when absent, fails instead in CI.

    CI sets PERFSUITE_REQUIRE_SHARED=1 so that a missing data folder cannot turn tests into
    silent skips.
    """
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        reason = f"shared data not found: {path}"
        if os.environ.get("PERFSUITE_REQUIRE_SHARED") == "1":
            pytest.fail(reason + " (PERFSUITE_REQUIRE_SHARED=1)")
        pytest.skip(reason)
    return path


def extract_h100_run(dest: Path) -> Path:
    """The shared real H100 cifar10 run folder, extracted under `dest` (skips when absent)."""
    tar = shared_path("gpu", "h100-cifar10-run.tar.gz")
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return next(dest.glob("*/run.json")).parent


@pytest.fixture
def make_record():
    """Build a minimal valid record with the given curve (list of (epoch, time_s, metric))."""
    from perfsuite.record import new_record

    def _make(curve=(), metric="top1", threshold=0.9, run_id="r1", **fields):
        rec = new_record(
            run_id=run_id, task={"name": "toy", "metric": metric, "threshold": threshold}
        )
        rec["evaluations"] = [
            {"epoch": e, "train_time_s": t, "metrics": {metric: m}} for e, t, m in curve
        ]
        rec.update(fields)
        return rec

    return _make


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A per-test perfsuite cache (peaks, decoded datasets), so runs never share state."""
    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
