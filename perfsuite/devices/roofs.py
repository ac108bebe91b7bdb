"""Roofs per math: one peak FLOP/s for each way a device can compute, plus memory bandwidth.

Why: one "peak FLOP/s" per run cannot judge a run whose convolutions ran in TF32 on Tensor
Cores and whose elementwise ops ran on CUDA cores. `ceilings.roofs` keeps a roof per math
(fp32 CUDA core, tf32, bf16, fp16, fp8...), each labeled measured or spec. Torch-free: the
analyzers read roofs from a record's `ceilings` and from a `perfsuite peaks --json` file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfsuite.devices.maths import DTYPE_MATH
from perfsuite.devices.specs import normalize_dtype
from perfsuite.safeio import InputError, load_json

# `perfsuite peaks --json` row fields carried into a measured roof's `measured_under`.
_UNDER_ROW = ("mode", "load_before", "load_after", "cpus", "busy_limit", "busy")
UNIT = {"fp64": "fp64 (Tensor Core where the part has one)", "fp32": "fp32 CUDA core"}


def env_key(torch_version: str | None, threads: int | None, gpu: bool = False) -> str:
    """The on-disk key of a measurement's software environment. CPU peaks depend on the thread
    count; GPU peaks do not (the host threads only launch kernels), so GPU keys leave it out:
    "torch <v>|gpu". GPU entries keyed with a thread count (an older key form) are not read
    (each is measured again). The "|" form must stay, or older CPU caches would not be found."""
    if gpu:
        return f"torch {torch_version or 'none'}|gpu"
    return f"torch {torch_version or 'none'}|threads {threads if threads else 'n/a'}"


def env_text(key: str) -> str:
    """An `env_key` as users read it: "torch 2.13.0+cpu|threads 2" -> "torch 2.13.0+cpu,
    2 threads". Anything not in the key's form is returned unchanged."""
    torch_part, sep, threads_part = key.partition("|")
    if sep and threads_part == "gpu":
        return f"{torch_part}, GPU (any thread count)"
    if not sep or not threads_part.startswith("threads "):
        return key
    n = threads_part.removeprefix("threads ")
    threads = "1 thread" if n == "1" else f"{n} threads" if n.isdigit() else "threads n/a"
    return f"{torch_part}, {threads}"


class PeaksFileError(InputError):
    """A peaks file that cannot be used; the message names the file and the field."""


def _q(value: float | None, unit: str, provenance: str, source: str) -> dict[str, Any]:
    return {"value": value, "unit": unit, "provenance": provenance, "source": source}


def roof(value: float, provenance: str, source: str) -> dict[str, Any]:
    return {"peak_flops": _q(float(value), "FLOP/s", provenance, source)}


def bandwidth_roof(value: float, provenance: str, source: str) -> dict[str, Any]:
    return {"bandwidth": _q(float(value), "byte/s", provenance, source)}


def spec_roofs(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """Roofs from a spec-table entry (or user values shaped like one), labeled spec."""
    if not spec:
        return {}
    src = f"{spec.get('source', 'spec table')} ({spec.get('id', '?')})"
    out: dict[str, Any] = {}
    for dtype, v in (spec.get("flops") or {}).items():
        math = DTYPE_MATH.get(normalize_dtype(dtype))
        if math and v:
            out[math] = roof(v, "spec", src)
    if spec.get("memory_bandwidth"):
        out["memory"] = bandwidth_roof(spec["memory_bandwidth"], "spec", src)
    return out


def peaks_file_roofs(path: str | Path) -> dict[str, Any]:
    """Roofs from `perfsuite peaks --json` output: measured where measured, else user, else spec."""
    p = Path(path)
    data = load_json(p, PeaksFileError, max_bytes=16 * 1024 * 1024, max_depth=16)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise PeaksFileError(
            f"{p}: field rows: missing or not a list (expected `perfsuite peaks --json` output)"
        )
    who = f"{data.get('device_name', '?')}, {env_text(str(data.get('env', '?')))}"
    threads = re.search(r"threads (\d+)", str(data.get("env") or ""))
    out: dict[str, Any] = {}
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise PeaksFileError(f"{p}: field rows[{i}]: expected an object")
        name = str(row.get("quantity", ""))
        if name == "memory bandwidth":
            key, unit = "memory", "byte/s"
        elif name.startswith("peak "):
            key, unit = DTYPE_MATH.get(normalize_dtype(name[5:])), "FLOP/s"
        else:
            raise PeaksFileError(
                f"{p}: field rows[{i}].quantity: {name!r} is not 'peak DTYPE' or 'memory bandwidth'"
            )
        if key is None:
            continue
        for field, prov in (("measured", "measured"), ("user", "spec"), ("spec", "spec")):
            v = row.get(field)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                raise PeaksFileError(
                    f"{p}: field rows[{i}].{field}: {v!r} is not a positive number"
                )
            detail = (row.get("detail") or "") if field == "measured" else ""
            src = f"peaks file {p.name} ({field}; {who}{'; ' + detail if detail else ''})"
            q = _q(float(v), unit, prov, src)
            if data.get("device_name"):  # whose roof it is: a run is judged by its own machine's
                q["device"] = str(data["device_name"])
            if field == "measured":
                # what the analyzers doubt a peak by: its threads, and (CPU) the load then
                under = _row_under(row, f"{p}: field rows[{i}]")
                if threads:
                    under["threads"] = int(threads.group(1))
                if under:
                    q["measured_under"] = under
            out[key] = {"bandwidth": q} if key == "memory" else {"peak_flops": q}
            break
    return out


def _row_under(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The row's load fields (`perfsuite peaks --json`), checked; one-line error otherwise."""
    out: dict[str, Any] = {}
    for k in _UNDER_ROW:
        v = row.get(k)
        if v is None:
            continue
        if k == "busy":
            ok = isinstance(v, bool)
        elif k == "mode":
            ok = isinstance(v, str)
        elif k == "cpus":
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 1
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if not ok:
            raise PeaksFileError(f"{where}.{k}: {v!r} is not a valid {k}")
        out[k] = v
    return out


def merge_roofs(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Roofs by priority: the first layer that has a math wins for that math."""
    out: dict[str, Any] = {}
    for layer in layers:
        for k, v in (layer or {}).items():
            out.setdefault(k, v)
    return out


def record_roofs(
    ceilings: Mapping[str, Any] | None, peaks: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The roofs an analysis uses: a user's peaks file, then `ceilings.roofs`, then its spec
    entry. (Records whose `ceilings` predate `roofs` get them at load: perfsuite.record.migrate.)"""
    ceil = ceilings or {}
    return merge_roofs(peaks, ceil.get("roofs"), spec_roofs(ceil.get("spec")))
