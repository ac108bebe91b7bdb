"""Older run records in the current shape: one migration, run by the loader on every record.

A record names its `schema_version`. `load_record` passes each record through `migrate`
before validating it against the current schema, so every reader (analyzers, CLI, report,
API) sees one shape and carries no branch for older ones. Each step turns version N into N+1
and is documented in docs/record.md ("Versions and migration") and CHANGELOG.md. A record
newer than this code is refused (`newer_problem`) in one line naming the file and the field.

Steps are frozen: they say what an older writer meant, so they never change once released.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfsuite.record.model import SCHEMA_VERSION

# Which rule an inference latency follows (`inference.rule`): runner/inference.py measures by
# the DAWNBench rule; records written before version 2 measured the median of a few batch-1
# calls of the last model; imported results follow their own benchmark's rule.
INFERENCE_RULES = ("dawnbench", "older rule", "imported")
OLDER_INFERENCE_RULE = "older rule"
IMPORTED_INFERENCE_RULE = "imported"
# MLPerf's result summarizer drops this many runs at each end (a literal of its scoring code
# when version 1 was current: 4 for unet3d, 1 for every other benchmark).
_V1_MLPERF_DROPPED = {"unet3d": 4}


def newer_problem(record: dict[str, Any], origin: str) -> str | None:
    """The one-line refusal of a record newer than this code, else None."""
    version = record.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        return (
            f"{origin}: field schema_version: {version} is newer than this perfsuite reads "
            f"({SCHEMA_VERSION}); upgrade perfsuite"
        )
    return None


def _v1_to_v2(record: dict[str, Any]) -> None:
    """Version 1 -> 2: the facts readers had to guess become fields.

    - `inference.rule`: absent in version 1 outside the DAWNBench rule. A perfsuite record
      without it measured by the older rule ("older rule"); an imported one follows its
      benchmark's rule ("imported").
    - `extra.mlperf.dropped_each_end`: an MLPerf import without it is scored by the result
      summarizer's rule for its benchmark (4 runs at each end for unet3d, 1 otherwise).
    """
    source_kind = (record.get("source") or {}).get("kind", "perfsuite")
    inference = record.get("inference")
    if isinstance(inference, dict) and inference and not inference.get("rule"):
        imported = source_kind != "perfsuite"
        inference["rule"] = IMPORTED_INFERENCE_RULE if imported else OLDER_INFERENCE_RULE
    mlperf = (record.get("extra") or {}).get("mlperf")
    if source_kind == "mlperf" and isinstance(mlperf, dict) and "dropped_each_end" not in mlperf:
        name = str((record.get("task") or {}).get("name"))
        mlperf["dropped_each_end"] = _V1_MLPERF_DROPPED.get(name, 1)


# version -> the step that turns a record of that version into the next one
STEPS: dict[int, Callable[[dict[str, Any]], None]] = {1: _v1_to_v2}


def migrate(record: Any) -> Any:
    """`record` in the current shape (changed in place and returned).

    A value that is no record, names no integer version or a newer one (`newer_problem`
    refuses it first) is returned as it is: validation then says what is wrong, naming the
    field.
    """
    if not isinstance(record, dict):
        return record
    version = record.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return record
    while version < SCHEMA_VERSION and version in STEPS:
        STEPS[version](record)
        version += 1
        record["schema_version"] = version
    return record
