"""A study folder (`study.json` + one folder of runs per configuration) as DataFrames.

Every number is `perfsuite.analyzers.runs.study`'s, read through the same loader as `perfsuite study
show`, so `configs` and `runs` equal that command's `--json` (the tests check it).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from perfsuite.api.frames import Spec, frame, of_child
from perfsuite.record import RecordError
from perfsuite.study.folder import analyze_folder
from perfsuite.study.spec import StudyError

_STATS = (
    ("time_to_accuracy", "time_to_accuracy", "_s"),
    ("epochs_to_threshold", "epochs_to_threshold", ""),
    ("epoch_time", "epoch_time", "_s"),
    ("samples_per_s", "samples_per_s", ""),
    ("tokens_per_s", "tokens_per_s", ""),  # transformer runs (perfsuite.flops.mfu); else NaN
    ("mfu", "mfu", ""),
)

# Rows are perfsuite.analyzers.runs.study.ConfigResult.
CONFIGS: Spec = [
    ("index", "index"),
    ("config", "name"),
    ("description", "description"),
    ("switches", lambda c: ",".join(c.switches)),
    ("batch_size", "batch_size"),
    ("n_runs", "n_runs"),
    ("n_reached", "n_reached"),
    ("n_diverged", "n_diverged"),
    ("n_unfinished", "n_unfinished"),
    ("converged_fraction", "converged_fraction"),
    ("status", "status"),
    *[
        (f"{col}_{stat}{unit if stat != 'cov' else ''}", f"{attr}.{stat}")
        for col, attr, unit in _STATS
        for stat in ("mean", "std", "cov")
    ],
    ("best", "best"),
    ("best_mean", "best_mean"),
    ("epochs_x_epoch_time_s", "epochs_x_epoch_time"),
    ("tta_speedup", "tta_speedup"),
    ("throughput_speedup", "throughput_speedup"),
    ("nproc", "nproc"),
    ("comm_share_mean", "comm_share.mean"),
    ("tta_efficiency", "tta_efficiency"),
    ("throughput_efficiency", "scaling_efficiency"),
    ("corruption_accuracy_mean", "corruption_accuracy.mean"),
    ("corruption_accuracy_std", "corruption_accuracy.std"),
    ("corruption_delta", "corruption_delta"),
]
# Rows are (ConfigResult, RunPoint) pairs.
RUNS: Spec = [
    ("config", lambda pair: pair[0].name),
    *of_child(
        [
            ("run_id", "run_id"),
            ("seed", "seed"),
            ("status", "status"),
            ("reached", "reached"),
            ("time_to_accuracy_s", "time_s"),
            ("epochs_to_threshold", "epochs"),
            ("epochs_run", "epochs_run"),
            ("best", "best"),
            ("epoch_time_s", "epoch_time_s"),
            ("samples_per_s", "samples_per_s"),
            ("nproc", "nproc"),
            ("comm_share", "comm_share"),
            ("corruption_accuracy", "corruption_accuracy"),
            ("tokens_per_s", "tokens_per_s"),
            ("mfu", "mfu"),
        ]
    ),
]


class Study:
    """`configs`: one row per configuration (statistics over its repeats, speed-ups against
    the reference); `runs`: one row per run; `result`: the analyzer's StudyResult;
    `records`: the run records by configuration name."""

    def __init__(self, folder: Path, result: Any, records: dict[str, list[dict]]) -> None:
        self.folder = folder
        self.result = result
        self.records = records

    @classmethod
    def load(cls, path: str | Path) -> Study:
        try:
            result, records = analyze_folder(path)
        except StudyError as exc:
            raise RecordError(str(exc)) from None
        return cls(Path(path), result, records)

    @cached_property
    def configs(self) -> pd.DataFrame:
        return frame(self.result.configs, CONFIGS)

    @cached_property
    def runs(self) -> pd.DataFrame:
        return frame(((c, r) for c in self.result.configs for r in c.runs), RUNS)

    def __repr__(self) -> str:
        r = self.result
        return f"<perfsuite Study {r.study_id}: {r.kind} of {r.workload}, {len(r.configs)} configs>"
