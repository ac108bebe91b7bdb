"""Run records for the history tests, written as `perfsuite run` writes them (valid against
the schema): a nightly series of one configuration with a planted change."""

from __future__ import annotations

from pathlib import Path

from perfsuite.record import new_record, quantity, write_record
from tests.conftest import settle


def nightly_record(i: int, tta_s: float, step_s: float, run_id: str | None = None) -> dict:
    """Night `i`: reaches top1 0.9 at `tta_s`, steps of `step_s`, commit c<i>."""
    rec = new_record(
        run_id=run_id or f"digits-night{i:03d}",
        task={"name": "digits", "workload": "digits", "metric": "top1", "threshold": 0.9},
    )
    rec["created_at"] = f"2026-10-{1 + i // 24:02d}T{i % 24:02d}:00:00Z"
    rec["evaluations"] = [
        {"epoch": 1, "train_time_s": tta_s * 0.5, "metrics": {"top1": 0.5}},
        {"epoch": 2, "train_time_s": tta_s, "metrics": {"top1": 0.95}},
    ]
    rec["throughput"] = {"step_time": quantity(step_s, "s", "measured", "median epoch / steps")}
    rec["environment"] = {"host": "nightly-box", "git_commit": f"{i:040x}"}
    rec["hardware"] = {"name": "Test CPU", "accelerator": "cpu", "count": 1}
    rec["status"] = "reached"
    return settle(rec)


def write_nightly(root: Path, times: list[float], step_s: float = 0.01) -> list[Path]:
    """One run folder per night under `root`, time to accuracy `times[i]`."""
    return [
        write_record(root / f"night{i:03d}", nightly_record(i, t, step_s)).parent
        for i, t in enumerate(times)
    ]
