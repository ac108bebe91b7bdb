"""Repeated runs as DataFrames: one row per run plus the stability summary of each group.

Why one object for "a folder of runs": `perfsuite stability` groups whatever it is given (by
`group.id`, else task, model, hardware and configuration), so a folder of five repeats is one
group and a folder of two configurations is two; the tables carry a `group` column either way.
Every number is `perfsuite.analyzers.runs.stability`'s, with the CLI's defaults.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from perfsuite.analyzers.runs.stability import (
    DEFAULT_MAX_CI_REL,
    DEFAULT_MAX_COV,
    GroupStability,
    stability,
    training_records,
)
from perfsuite.api.figures import GroupFigures
from perfsuite.api.frames import Spec, frame, of_child
from perfsuite.api.run import Run, cost_frame
from perfsuite.record import RecordError, find_records, load_record

# Rows are (GroupStability, RunOutcome) pairs.
RUNS: Spec = [
    ("group", lambda pair: pair[0].label),
    *of_child(
        [
            ("run_id", "run_id"),
            ("seed", "seed"),
            ("status", "status"),
            ("reached", "reached"),
            ("time_to_accuracy_s", "time_s"),
            ("epochs_to_threshold", "epochs"),
            ("time_per_epoch_s", "time_per_epoch_s"),
            ("epoch_time_cov", "epoch_time_cov"),
            ("epoch_times_from", "epoch_times_from"),
            ("path", "path"),
        ]
    ),
]
# The three statistics of a group, with the unit of their values.
STATISTICS = (
    ("time_to_accuracy", "s"),
    ("epochs_to_threshold", "epoch"),
    ("time_per_epoch", "s"),
)
SUMMARY_FIELDS = ("n", "mean", "std", "cov", "ci_low", "ci_high", "ci_half_width_rel", "min", "max")
GROUPS: Spec = [
    ("group", "label"),
    ("key", "key"),
    ("metric", "metric"),
    ("threshold", "threshold"),
    ("direction", "direction"),
    ("n_runs", "n_runs"),
    ("n_reached", "n_reached"),
    ("reached_fraction", "reached_fraction"),
    ("time_to_accuracy_mean_s", "time_to_accuracy.mean"),
    ("time_to_accuracy_cov", "time_to_accuracy.cov"),
    ("time_to_accuracy_ci_low_s", "time_to_accuracy.ci_low"),
    ("time_to_accuracy_ci_high_s", "time_to_accuracy.ci_high"),
    ("epochs_to_threshold_mean", "epochs_to_threshold.mean"),
    ("time_per_epoch_mean_s", "time_per_epoch.mean"),
    ("olympic_mean_s", "olympic_mean.value"),
    ("olympic_mean_reason", "olympic_mean.reason"),
    ("olympic_rule", "olympic_rule"),
    ("warnings", lambda g: len(g.warnings)),
]


class Group:
    """Runs loaded from files or folders, analyzed as `perfsuite stability` would.

    `metric`, `threshold`, `max_cov`, `max_ci` and `seed` are the command's options.
    """

    def __init__(
        self,
        records: Sequence[dict[str, Any]],
        *,
        metric: str | None = None,
        threshold: float | None = None,
        max_cov: float = DEFAULT_MAX_COV,
        max_ci: float = DEFAULT_MAX_CI_REL,
        seed: int = 0,
    ):
        if not records:
            raise RecordError("no run records to group")
        self.records = list(records)
        self._options = {
            "metric": metric,
            "threshold": threshold,
            "max_cov": max_cov,
            "max_ci_rel": max_ci,
            "seed": seed,
        }

    @classmethod
    def load(cls, *paths: str | Path, **options: Any) -> Group:
        """Every run.json under `paths` (folders searched recursively), in path order."""
        files = list(find_records(paths))
        if not files:
            raise RecordError(f"{' '.join(map(str, paths))}: no run.json found")
        return cls([load_record(f) for f in files], **options)

    def __repr__(self) -> str:
        return (
            f"<perfsuite.Group {len(self.records)} runs in {len(self.stability_groups)} group(s)>"
        )

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs_list)

    def __getitem__(self, key: int | str) -> Run:
        """A member run by position or run_id."""
        if isinstance(key, int):
            return self.runs_list[key]
        for r in self.runs_list:
            if r.run_id == key:
                return r
        raise KeyError(key)

    @cached_property
    def runs_list(self) -> list[Run]:
        """The member runs as Run objects (each analyzed lazily, on first use)."""
        return [Run(rec) for rec in self.records]

    @cached_property
    def skipped(self) -> list[str]:
        """Run ids left out of the statistics: inference-only records have no training run."""
        return [str(r.get("run_id")) for r in training_records(self.records)[1]]

    @cached_property
    def stability_groups(self) -> list[GroupStability]:
        """The analyzer's own results, one per group (what `stability --json` prints)."""
        kept, _ = training_records(self.records)
        if not kept:
            raise RecordError("no training records to analyze (inference-only records)")
        return stability(kept, **self._options)

    @cached_property
    def runs(self) -> pd.DataFrame:
        """One row per run: reached or not, time to accuracy, epochs, time per epoch."""
        pairs = [(g, r) for g in self.stability_groups for r in g.runs]
        return frame(pairs, RUNS)

    @cached_property
    def stability(self) -> pd.DataFrame:
        """Per group and statistic: n, mean, sample std, CoV, bootstrap CI, min, max."""
        rows = []
        for g in self.stability_groups:
            for name, unit in STATISTICS:
                s = getattr(g, name)
                row = {"group": g.label, "statistic": name, "unit": unit}
                row.update({f: getattr(s, f) for f in SUMMARY_FIELDS})
                rows.append(row)
        cols = ["group", "statistic", "unit", *SUMMARY_FIELDS]
        return pd.DataFrame(rows, columns=cols).infer_objects()

    @cached_property
    def groups(self) -> pd.DataFrame:
        """One row per group: target, reached fraction, headline statistics, olympic mean."""
        return frame(self.stability_groups, GROUPS)

    @property
    def warnings(self) -> list[str]:
        """The stability warnings (spread too wide, too few runs...), prefixed by group."""
        return [f"{g.label}: {w}" for g in self.stability_groups for w in g.warnings]

    @cached_property
    def epochs(self) -> pd.DataFrame:
        """Every run's curve (Run.epochs) stacked, with a run_id column first."""
        parts = [r.epochs.assign(run_id=r.run_id) for r in self.runs_list]
        df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        return df[["run_id", *[c for c in df.columns if c != "run_id"]]]

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Each run's Run.summary as a row (the compare table, transposed)."""
        return pd.DataFrame([r.summary for r in self.runs_list]).set_index("run_id")

    def cost(self, prices: str | None = None, instance_type: str | None = None) -> pd.DataFrame:
        """`perfsuite cost` over every record (inference-only ones included), one row each."""
        return cost_frame(self.records, prices, instance_type)

    @cached_property
    def figures(self) -> GroupFigures:
        """Plotly figures of these runs (accuracy curves), drawn by the report's code."""
        return GroupFigures(self.records)
