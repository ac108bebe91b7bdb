"""Older run records in the current shape: one migration, run by the loader on every record.

A record names its `schema_version`. `load_record` passes each record through `migrate`
before validating it against the current schema, so every reader (analyzers, CLI, report,
API) sees one shape and carries no branch for older ones. Each step turns version N into N+1
and is documented in docs/record.md ("Versions and migration") and CHANGELOG.md. A record
newer than this code is refused (`newer_problem`) in one line naming the file and the field.

Steps are frozen: they say what an older writer meant, so they never change once released.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from perfsuite.record.maths import assumed_math
from perfsuite.record.model import SCHEMA_VERSION

# Which rule an inference latency follows (`inference.rule`): runner/measure/inference.py measures
# by
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


# The Tensor-Core float precisions of a chip by compute capability, as the counters capture of
# version 2 knew them: a section without `tensor_unmeasured` left unmeasured the ones of these
# whose totals are null. Volta/Turing fp16 only; Ampere fp16, bf16, tf32, plus fp64 on 8.0 and
# fp8 from 8.9; other or unknown chips all five.
_V2_TENSOR_FLOAT = ("fp16", "bf16", "tf32", "fp8", "fp64")


def _v2_chip_precisions(cc: Any) -> tuple[str, ...]:
    try:
        major, minor = (int(x) for x in str(cc).split(".")[:2])
    except ValueError:
        return _V2_TENSOR_FLOAT
    if major == 7:
        return ("fp16",)
    if major == 8:
        extra = ("fp64",) if minor == 0 else ("fp8",) if minor >= 9 else ()
        return ("fp16", "bf16", "tf32", *extra)
    return _V2_TENSOR_FLOAT


def _framework_text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, dict) and value.get("name"):
        version = value.get("version")
        return f"{value['name']} {version}" if version else str(value["name"])
    return None


def _v2_framework(record: dict[str, Any]) -> str | None:
    """What a version-2 reader took for the framework: `environment.framework` (a string or
    `{name, version}`), else the record's `framework`, else the one training framework in
    `environment.frameworks`."""
    env = record.get("environment") or {}
    text = _framework_text(env.get("framework")) or _framework_text(record.get("framework"))
    if text:
        return text
    libs = env.get("frameworks") or {}
    keys = (("pytorch", "pytorch"), ("torch", "pytorch"), ("tensorflow", "tensorflow"))
    found: dict[str, str] = {}
    for key, name in keys:
        if isinstance(libs, dict) and libs.get(key):
            found.setdefault(name, f"{name} {libs[key]}")
    return next(iter(found.values())) if len(found) == 1 else None


def _v2_to_v3(record: dict[str, Any]) -> None:
    """Version 2 -> 3: every record says its framework, its math and what its counters left
    unmeasured.

    - `framework`: null or absent in records written before the runner set it, which named it
      in `environment.framework` (which readers preferred) or only as a library version in
      `environment.frameworks`; set from those (null where none names one framework).
    - `math`: absent in records written before the runner read it (and in imports); filled with
      PyTorch's defaults for the torch version the record names, labeled assumed
      (`perfsuite.record.maths.assumed_math`).
    - `counters.tensor_unmeasured`: absent in counter sections written before the capture
      stored it; filled with the chip's Tensor-Core precisions whose totals are null.
    - `counters.calibrated.basis`: absent where the capture marked any chip of the reference's
      compute capability calibrated; set to say so.
    """
    record["framework"] = _v2_framework(record)
    if not isinstance(record.get("math"), dict):
        record["math"] = assumed_math(record)
    counters = record.get("counters")
    if isinstance(counters, dict) and counters and "tensor_unmeasured" not in counters:
        totals = (counters.get("totals") or {}).get("flops_tensor_by_precision") or {}
        chip = _v2_chip_precisions((counters.get("device") or {}).get("cc"))
        counters["tensor_unmeasured"] = [p for p in chip if p in totals and totals[p] is None]
    calibrated = counters.get("calibrated") if isinstance(counters, dict) else None
    if isinstance(calibrated, dict) and calibrated and calibrated.get("basis") is None:
        name = (counters.get("device") or {}).get("name") or "an unnamed chip"
        calibrated["basis"] = (
            f"marked by an older rule (formulas checked on H100 GEMMs, any cc "
            f"{calibrated.get('device_cc')} chip); this capture is from {name}"
        )


# The math of each dtype name a version-3 `ceilings.dtype` used (the roof its `peak_flops` is),
# as version 3's readers mapped it (perfsuite.devices.maths then).
_V3_DTYPE_MATH = {
    "float64": "fp64", "fp64": "fp64", "double": "fp64",
    "float32": "fp32", "fp32": "fp32", "float": "fp32",
    "tf32": "tf32",
    "bfloat16": "bf16", "bf16": "bf16", "amp_bf16": "bf16",
    "float16": "fp16", "fp16": "fp16", "half": "fp16", "amp_fp16": "fp16", "amp": "fp16",
    "fp8": "fp8", "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "int8": "int8",
}  # fmt: skip
# A measured roof's source text named its thread count this way before `measured_under`.
_V3_SOURCE_THREADS = re.compile(r"threads (\d+)")


def _v3_math(dtype: Any) -> str | None:
    d = str(dtype or "float32").strip().lower().removeprefix("torch.")
    return _V3_DTYPE_MATH.get(d)


def _v3_threads(q: Any) -> None:
    """A measured quantity without `measured_under.threads` gets the count its source names."""
    if not isinstance(q, dict) or q.get("provenance") != "measured":
        return
    under = q.get("measured_under")
    if isinstance(under, dict) and "threads" in under:
        return
    m = _V3_SOURCE_THREADS.search(str(q.get("source") or ""))
    if m:
        q["measured_under"] = {**(under if isinstance(under, dict) else {}), "threads": int(m[1])}


def _v3_to_v4(record: dict[str, Any]) -> None:
    """Version 3 -> 4: every `ceilings` section has its roofs per math, and every measured
    roof says the threads it was measured with.

    - `ceilings.roofs`: absent in records written before the capture kept a roof per math,
      which had one `peak_flops` (the roof of `ceilings.dtype`) and `memory_bandwidth`; those
      become the roofs of that math and of memory (where `roofs` lacks them). Set (possibly
      empty) in every non-empty `ceilings`; every writer of version 4 writes it.
    - `measured_under.threads`: absent in measured quantities written before the capture
      stored `measured_under`, whose source text named the threads ("threads N"); set from it.
    """
    ceil = record.get("ceilings")
    if not isinstance(ceil, dict) or not ceil:
        return
    roofs = ceil.get("roofs") if isinstance(ceil.get("roofs"), dict) else {}
    peak, bw = ceil.get("peak_flops"), ceil.get("memory_bandwidth")
    math = _v3_math(ceil.get("dtype"))
    if math and isinstance(peak, dict) and peak.get("value") and math not in roofs:
        roofs[math] = {"peak_flops": dict(peak)}
    if isinstance(bw, dict) and bw.get("value") and "memory" not in roofs:
        roofs["memory"] = {"bandwidth": dict(bw)}
    ceil["roofs"] = roofs
    for q in (peak, bw, *(x for r in roofs.values() if isinstance(r, dict) for x in r.values())):
        _v3_threads(q)


# version -> the step that turns a record of that version into the next one
STEPS: dict[int, Callable[[dict[str, Any]], None]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


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
