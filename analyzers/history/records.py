"""A run record's history rows: its series key, time, attributes and every metric it has.

One record gives one row per metric it holds (time to accuracy only when the run reached its
target; MFU only for a transformer FLOP model; fraction of roof only where the roofline has a
counted step and a roof). Repeats of one configuration (other seeds) share the series key, so
they are points of one series.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from perfsuite.analyzers.results.cost import cost_of
from perfsuite.analyzers.results.record_view import (
    batch_size_of,
    crossing,
    framework,
)
from perfsuite.analyzers.roofline.inputs import RooflineInputError
from perfsuite.analyzers.roofline.points import run_roofline
from perfsuite.flops.mfu import mfu
from perfsuite.history_store.series import Row
from perfsuite.pricing import builtin_prices
from perfsuite.record import qvalue

SERIES_FIELDS = ("task", "workload", "recipe", "switches", "framework", "precision", "device")
SERIES_FIELDS_ALL = (*SERIES_FIELDS, "device_count", "host")


class MissingMetric(ValueError):
    """A record lacks the metric asked for; the message names the record's field."""


def _precision(record: Mapping[str, Any]) -> str:
    math = record.get("math") or {}
    return str(math.get("autocast_dtype") or math.get("param_dtype") or "unknown")


def _switches(record: Mapping[str, Any]) -> str:
    """The switches the run was given (`run --switch`), else those its record names as given."""
    config = record.get("config") or {}
    given = config.get("switches")
    if not given:
        requested = (record.get("switches") or {}).get("requested") or {}
        given = requested.get("given") if isinstance(requested, Mapping) else requested
    return ",".join(sorted(str(s) for s in given or ())) or "none"


def _recipe(record: Mapping[str, Any]) -> str:
    """The named recipe and its `--set` overrides."""
    config = record.get("config") or {}
    overrides = ",".join(str(o) for o in config.get("overrides") or ())
    name = str(config.get("recipe") or "default")
    return f"{name}({overrides})" if overrides else name


def series_key(record: Mapping[str, Any]) -> dict[str, str]:
    """The configuration a record measured: the fields its series is named by."""
    task = record.get("task") or {}
    hardware = record.get("hardware") or {}
    env = record.get("environment") or {}
    return {
        "task": str(task.get("name") or "unknown"),
        "workload": str(task.get("workload") or task.get("name") or "unknown"),
        "recipe": _recipe(record),
        "switches": _switches(record),
        "framework": framework(record).split(" ")[0],
        "precision": _precision(record),
        "device": str(hardware.get("name") or "unknown"),
        "device_count": str(hardware.get("count") or 1),
        "host": str(hardware.get("instance_type") or env.get("host") or "unknown"),
    }


def series_name(key: Mapping[str, str]) -> str:
    """A readable, unique name: task[/workload]:recipe [switches] framework precision
    device x count @host (the workload only where it differs from the task)."""
    switches = "" if key["switches"] == "none" else f" [{key['switches']}]"
    workload = "" if key["workload"] == key["task"] else f"/{key['workload']}"
    return (
        f"{key['task']}{workload}:{key['recipe']}{switches} {key['framework']} "
        f"{key['precision']} {key['device']} x{key['device_count']} @{key['host']}"
    )


def attributes(record: Mapping[str, Any]) -> dict[str, str]:
    """What ran: the user's commit, perfsuite, framework, CUDA and driver versions, the batch
    and the threads (those the record names). The batch and the threads are attributes, not
    part of the series key: a nightly job whose batch or thread count changed is the same
    series, with a change to find."""
    env = record.get("environment") or {}
    frameworks = env.get("frameworks") or {}
    gpus = env.get("gpus") or []
    found = {
        "commit": env.get("git_commit"),
        "perfsuite": env.get("perfsuite_version") or env.get("perfsuite"),
        "torch": frameworks.get("torch") if isinstance(frameworks, Mapping) else None,
        "tensorflow": frameworks.get("tensorflow") if isinstance(frameworks, Mapping) else None,
        "cuda": env.get("cuda") or env.get("cuda_version"),
        "driver": (gpus[0] or {}).get("driver") if gpus and isinstance(gpus[0], Mapping) else None,
        "batch_size": batch_size_of(record),
        "threads": env.get("torch_threads"),
    }
    return {k: str(v) for k, v in found.items() if v not in (None, "")}


def record_key(record: Mapping[str, Any]) -> str:
    """The record's identity: run id and creation time (an imported entry's own date)."""
    text = json.dumps([record.get("run_id"), record.get("created_at")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@lru_cache(maxsize=1)
def _builtin_prices() -> dict[str, dict[str, Any]]:
    """The built-in price table, read once per process."""
    return builtin_prices()


def _roof_fraction(record: Mapping[str, Any]) -> float | None:
    """The whole run's fraction of its roofs: only the run's placement, not the per-op table
    (the per-op doubts never change this fraction)."""
    if not record.get("work") or not record.get("ceilings"):
        return None
    try:
        return run_roofline(record).frac_of_roof
    except RooflineInputError:
        return None


def metrics(
    record: Mapping[str, Any],
    metric: str | None = None,
    prices: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, float]:
    """Every history metric the record holds (see the module docstring), SI units; only
    `metric` when given, so that the roofline (which may read the run's trace) runs only for
    the roof fraction. `prices`: the table `perfsuite cost` prices with (built-in when None);
    a record is priced by its own `cost.usd_per_hour` first."""
    c = crossing(record)
    throughput = record.get("throughput") or {}
    m = mfu(record)
    # cost_of applies the consistency rule: an untrusted record is left out, with its reason,
    # and a run that reached its target is left out for nothing else
    cost = cost_of(record, _builtin_prices() if prices is None else prices)
    found = {
        "time_to_accuracy_s": c.time_s if c.reached and cost.left_out is None else None,
        "samples_per_s": qvalue(throughput.get("samples_per_s")),
        "tokens_per_s": m.tokens_per_s if m else None,
        "step_time_s": qvalue(throughput.get("step_time")),
        "mfu": m.mfu if m and m.mfu is not None and m.mfu <= 1 else None,
        "roof_fraction": _roof_fraction(record) if metric in (None, "roof_fraction") else None,
        "latency_s": cost.inference_latency_s,
        "cost_usd": cost.training_cost_usd,
        "energy_j": cost.energy_to_accuracy_j,
    }
    return {k: float(v) for k, v in found.items() if v is not None and metric in (None, k)}


def rows_of(
    record: Mapping[str, Any],
    metric: str | None = None,
    prices: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Row]:
    """The record's rows (only `metric`'s when given; MissingMetric when it lacks it);
    `prices` as for `metrics`."""
    values = metrics(record, metric, prices)
    if metric is not None and metric not in values:
        raise MissingMetric(f"field {metric}: the record has no value for it")
    key = series_key(record)
    name = series_name(key)
    ident = record_key(record)
    time = str(record.get("created_at") or "")
    attrs = attributes(record)
    source = str(record.get("_path") or record.get("run_id") or "")
    return [
        Row(ident, name, key, name_, time, value, attrs, source)
        for name_, value in sorted(values.items())
    ]
