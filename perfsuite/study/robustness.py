"""A study's generalization checks: each finished run's threshold model on the common
corruptions, stored in that run's record like `perfsuite eval shift --corruptions` does.

Run after the run, never inside it: the evaluation is not training time and must not share
the CPU with a timed run of the same study (see `run_study`). A run that did not reach the
threshold has no threshold model and is skipped with the reason; one already evaluated with the
same settings is not evaluated again (resume).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfsuite.generalization.section import store
from perfsuite.generalization.shift import evaluate_corruptions
from perfsuite.generalization.threshold_model import rebuild
from perfsuite.record import load_record
from perfsuite.study.spec import EvalSettings


def already_done(record: dict[str, Any], settings: EvalSettings) -> bool:
    """True when the record holds corruptions measured with these settings."""
    c = (record.get("generalization") or {}).get("corruptions") or {}
    if not c:
        return False
    families = sorted(settings.families) if settings.families else None
    done = sorted(c.get("families") or {})
    return c.get("limit") == settings.limit and (families is None or families == done)


def evaluate_run(run_dir: str | Path, settings: EvalSettings, device: str, seed: int = 0) -> str:
    """Evaluate one run folder; returns a one-line outcome for the progress display. Every
    run of a study uses the same `seed`, so all configurations see the same corrupted images."""
    record = load_record(run_dir)
    if record.get("status") != "reached" or not record.get("checkpoint"):
        return "corruptions skipped: no threshold model (the run did not reach the threshold)"
    if already_done(record, settings):
        return "corruptions already measured"
    tm = rebuild(record, device)
    own = tm.own_test((record.get("config") or {}).get("data_dir"))
    result = evaluate_corruptions(
        tm,
        own,
        seed,
        device,
        (record.get("config") or {}).get("data_dir"),
        settings.families or None,
        limit=settings.limit,
    )
    store(tm.record, "corruptions", result)
    return f"mean corruption accuracy {100 * result['mean']:.2f}%"
