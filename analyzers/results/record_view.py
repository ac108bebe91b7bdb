"""Derived values of a run record, computed in one place so every analyzer reads a record the
same way: where it crossed its threshold, and whether and when it reached it.

The crossing rule itself is `perfsuite.record.tta` (first evaluation at or past the
threshold, in the task's direction); this module decides which curve and threshold it applies
to.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from perfsuite.record.consistency import untrusted
from perfsuite.record.io import CAPTURE_INCOMPLETE
from perfsuite.record.tta import Crossing, record_crossing


def _finite_time(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def reached_time(record: Mapping[str, Any]) -> tuple[bool, float | None]:
    """(reached, time to accuracy in s) from the record's own `time_to_accuracy`.

    A run counts as reached only with a usable time: an imported "reached" without a time
    (or with a non-finite one) cannot be ranked, costed or averaged.
    """
    tta = record.get("time_to_accuracy") or {}
    time_s = _finite_time(tta.get("time_s"))
    reached = bool(tta.get("reached")) and time_s is not None
    return reached, (time_s if reached else None)


def crossing(
    record: Mapping[str, Any], metric: str | None = None, threshold: float | None = None
) -> Crossing:
    """Where a run reaches its target.

    Without overrides: the record's own `time_to_accuracy` (imported records may have no
    curve behind it, and MLPerf's time includes evaluation). With `metric` or `threshold`:
    recomputed from the curve by `perfsuite.record.tta.record_crossing`, in the task's direction.
    """
    if metric is not None or threshold is not None:
        return record_crossing(dict(record), threshold=threshold, metric=metric)
    task = record.get("task") or {}
    tta = record.get("time_to_accuracy") or {}
    reached, time_s = reached_time(record)
    return Crossing(
        str(tta.get("metric", task.get("metric"))),
        float(tta.get("threshold", task.get("threshold"))),
        reached,
        time_s,
        tta.get("epoch") if reached else None,
        tta.get("evaluation_index") if reached else None,
    )


def framework(record: Mapping[str, Any]) -> str:
    """The framework a run trained with, e.g. "pytorch 2.13.0+cpu" or "tensorflow 2.21.0":
    the record's `framework` (older records get it at load: perfsuite/record/migrate.py);
    "unknown" when it names none. Comparisons show it per run, since the framework alone can
    change time to accuracy (DAWNBench's TensorFlow vs PyTorch)."""
    return str(record.get("framework") or "unknown")


def faults_per_step(record: Mapping[str, Any]) -> float | None:
    """Minor page faults per training step: the median over the epochs after the first (all
    epochs when there is one) of `throughput.epoch_minor_faults` / `extra.steps_per_epoch`.

    Why: the fault rate is the allocator's state, not the model's; two runs of one workload
    with different rates ran different memory traffic (docs/record.md). None when the record
    lacks either field (records written without `epoch_minor_faults`, `perfsuite.track` runs).
    """
    faults = (record.get("throughput") or {}).get("epoch_minor_faults")
    steps = (record.get("extra") or {}).get("steps_per_epoch")
    if not faults or not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        return None
    return statistics.median(faults[1:] or faults) / steps


# The flags' opening words that the runner and the workloads write for a run that is not its
# task's benchmark: a smoke test on other data, or a subset of the training or evaluation set.
PARTIAL_RUN_FLAGS = ("SMOKE TEST", "trained on a subset", "evaluated on a subset")


def partial_run(record: Mapping[str, Any]) -> str | None:
    """The first such flag (up to its first ";"), or None. Why: a time to accuracy on fewer
    or other examples ranks with nothing on the task's board (DAWNBench entries included)."""
    for flag in record.get("flags") or []:
        if isinstance(flag, str) and flag.startswith(PARTIAL_RUN_FLAGS):
            return flag.split(";")[0]
    return None


# Final statuses: the run ended by itself (reached, ran out of epochs, diverged). A crashed,
# interrupted or still running run ended otherwise.
FINISHED = ("reached", "not_reached", "diverged")


def unfinished(reached: bool, status: Any) -> bool:
    """A run that crashed or is unfinished and has not reached its target: it says nothing
    about whether its configuration converges, so compare, stability and study leave it out
    (a run that reached before it ended keeps its measured time)."""
    return not reached and status not in FINISHED


# The status analyses give a record whose claims its evaluations do not bear out: not in
# FINISHED, so it is left out like an unfinished run, with `untrusted`'s reason as its error.
INCONSISTENT = "inconsistent"


def trusted_outcome(
    record: Mapping[str, Any], reached: bool, time_s: float | None
) -> tuple[str, bool, float | None, str | None]:
    """(status, reached, time, error) as analyses count a run: an inconsistent record is
    `INCONSISTENT`, not reached, without time, its reason the error."""
    bad = untrusted(record)
    if bad:
        return INCONSISTENT, False, None, bad
    error = record.get("error")
    return str(record.get("status")), reached, time_s, error if isinstance(error, str) else None


LEFT_OUT = {"crashed": "crashed", "interrupted": "interrupted", "running": "still running"}


def left_out(record: Mapping[str, Any]) -> str | None:
    """ "crashed", "interrupted" or "still running" for a run that ended otherwise than by
    itself without reaching its target, else None. Such a run is neither ranked nor DNC: a
    crash says nothing about converging (`stability`, `compare` and `study` leave it out;
    `cost` and `leaderboard` name it). A run that reached before it ended keeps its measured
    time. A record whose claims do not follow from its evaluations, or whose figures are out
    of bounds (`perfsuite.record.consistency`), is left out too, with the first problem."""
    return untrusted(record) or ended_early(record)


def ended_early(record: Mapping[str, Any]) -> str | None:
    """`left_out`'s answer for a record already found consistent: "crashed", "interrupted" or
    "still running" for a run that ended otherwise than by itself without reaching its target,
    else None."""
    status = record.get("status")
    if not unfinished(reached_time(record)[0], status):
        return None
    return LEFT_OUT.get(str(status), f"status {status}")


def batch_size_of(record: Mapping[str, Any]) -> Any:
    """The batch a step ran on, for telling configurations apart (compare's FLOP check,
    stability's grouping): the counted step's, else the recipe in force, else the config's
    (a user loop's `batch_size`, an MLPerf log's `global_batch_size`); None if none says."""
    config = record.get("config") or {}
    for value in (
        (record.get("work") or {}).get("batch_size"),
        (config.get("recipe_values") or {}).get("batch_size")
        if isinstance(config.get("recipe_values"), Mapping)
        else None,
        config.get("batch_size"),
        config.get("global_batch_size"),
    ):
        if value is not None:
            return value
    return None


def mlperf_round(rec: Mapping[str, Any]) -> str | None:
    """The MLPerf round ("5.1") an imported MLPerf record was scored by, else None."""
    if (rec.get("source") or {}).get("kind") != "mlperf":
        return None
    info = (rec.get("extra") or {}).get("mlperf")
    rnd = info.get("round") if isinstance(info, Mapping) else None
    return rnd if isinstance(rnd, str) and rnd else None


def accelerator_seconds(rec: Mapping[str, Any], seconds: float | None) -> float | None:
    """`seconds` x the record's accelerator count (None where the count is unknown)."""
    count = (rec.get("hardware") or {}).get("count")
    if seconds is None or isinstance(count, bool) or not isinstance(count, int) or count < 1:
        return None
    return seconds * count


def task_direction(record: Mapping[str, Any]) -> str:
    """The record's task.direction: "higher" (default) or "lower" (error rates, perplexity)."""
    return str((record.get("task") or {}).get("direction") or "higher")


def why_absent(record: Mapping[str, Any], section: str) -> str:
    """Why a record has no `data`, `switches` or `energy` section, from what it says about its
    writer: an import's source never measures them, `perfsuite.track` runs the user's own loop
    (no switches), capture off reads no energy, a run that ended before its first timed epoch
    has no input stall; else the perfsuite that wrote it (named, with the record's schema
    version when it was migrated) did not record the section."""
    kind = (record.get("source") or {}).get("kind") or "perfsuite"
    if kind != "perfsuite":
        return f"not recorded by this record's source (imported from {kind})"
    config = record.get("config") or {}
    if section == "switches" and str(config.get("source", "")).startswith("perfsuite.track"):
        return "none: perfsuite.track runs the user's own loop (switches are `run --switch`)"
    if section == "energy" and config.get("capture") is False:
        return "not measured: capture was off"
    if section == "data" and not (record.get("throughput") or {}).get("epoch_times_s"):
        return f"not recorded: no timed epoch ended (status {record.get('status')})"
    version = (record.get("environment") or {}).get("perfsuite")
    writer = f"perfsuite {version}" if version else "the perfsuite version that wrote it"
    made = str(record.get("created_at") or "")[:10]
    when = f" on {made}" if made else ""
    schema = record.get("_migrated_from")
    if schema is not None:  # the version string alone may equal today's
        return (
            f"not recorded: written by {writer}{when} at record schema version {schema}, "
            "before this section was written"
        )
    return f"not recorded by {writer}{when}, which did not write this section"


def capture_incomplete(record: Mapping[str, Any]) -> str | None:
    """The record's "capture incomplete: ..." flag (a run killed after training ended, before
    its threshold checkpoint, profile window or inference latency finished), else None. Its
    time to accuracy stands and is ranked; rankings show the flag beside it."""
    flags = record.get("flags")
    for flag in flags if isinstance(flags, list) else []:
        if isinstance(flag, str) and flag.startswith(CAPTURE_INCOMPLETE):
            return flag
    return None
