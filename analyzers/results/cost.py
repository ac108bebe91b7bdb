"""Training and inference cost in USD, with where the hourly price came from.

DAWNBench cost rules: training cost = time to accuracy (h) x price (USD/h); inference cost per
10,000 items = latency (s per item, batch 1, items served one after another; the mean over the
evaluation set by the DAWNBench rule, perfsuite.analyzers.results.inference) x 10,000 / 3600 x price
(USD/h), unless the record carries its own imported cost per item. A price is never guessed: the
record's own `cost.usd_per_hour`, else the price table entry for its instance type, else
"unknown" and no cost. A run that crashed or is unfinished without reaching its target has no
training cost and is not DNC either (`record_view.left_out`): it says nothing about converging.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite.analyzers.results.hardware_match import instance_mismatch
from perfsuite.analyzers.results.inference import energy_view, inference_view
from perfsuite.analyzers.results.record_view import ended_early, reached_time, task_direction
from perfsuite.pricing import ITEMS, inference_cost_per_10k_usd, training_cost_usd
from perfsuite.record import qvalue
from perfsuite.record.consistency import untrusted
from perfsuite.task_metrics import items, target_text

TAIL = 2.0  # a latency mean this many times its median is said: a heavy tail


@dataclass(frozen=True)
class Price:
    """An hourly price and its origin: from = "record" | "price-table" | "unknown"."""

    usd_per_hour: float | None
    origin: str
    provenance: str | None  # the quantity provenance: imported / spec / None when unknown
    source: str
    instance_type: str | None
    why: str | None = None  # no price: the note of the price rule that says why


@dataclass(frozen=True)
class Cost:
    """One record's costs. None where an input is missing; `notes` says which."""

    run_id: str
    task: str
    entry_type: str
    instance_type: str | None
    price: Price
    reached: bool
    training_time_s: float | None
    training_cost_usd: float | None
    training_cost_provenance: str | None
    inference_latency_s: float | None
    inference_cost_per_10k_usd: float | None
    inference_cost_provenance: str | None
    notes: list[str] = field(default_factory=list)
    # perfsuite.analyzers.results.inference: the latency's rule, its percentiles, and energy (J)
    # where measured
    inference_rule: str | None = None
    inference_p50_s: float | None = None
    inference_p90_s: float | None = None
    inference_p99_s: float | None = None
    energy_to_accuracy_j: float | None = None
    energy_per_10k_j: float | None = None
    energy_source: str | None = None
    target: str = ""  # the task's target as it states it: "top-5 >= 93%", "F1 >= 0.75"
    items: str = "items"  # what inference cost is per 10,000 of: "images", "questions"
    price_notes: list[str] = field(default_factory=list)  # the price rule's notes (in `notes`)
    # "crashed" / "interrupted" / "still running": left out without reaching (not DNC)
    left_out: str | None = None


def find_price(
    record: Mapping[str, Any],
    prices: Mapping[str, Mapping[str, Any]],
    instance_type: str | None = None,
) -> tuple[Price, list[str]]:
    """The record's hourly price: its own, else the table's for its instance type, else unknown.

    `instance_type` (from the command line) is only used for records that name none: a run's
    measured time belongs to the hardware it ran on, so it is never re-priced as another one.
    For the same reason a table price is not used when the table says that instance is other
    hardware than the record's (`instance_mismatch`), whether the type was recorded or given,
    nor for a given type when the record's hardware cannot be checked against it: no price
    then, and a note (`Price.why`) says why.
    """
    notes: list[str] = []
    own = (record.get("cost") or {}).get("usd_per_hour")
    recorded_type = (record.get("hardware") or {}).get("instance_type")
    if instance_type and recorded_type and instance_type != recorded_type:
        notes.append(f"--instance-type {instance_type} ignored: the record ran on {recorded_type}")
    itype = recorded_type or instance_type
    given = bool(instance_type and not recorded_type)
    value = qvalue(own)
    if value is not None:
        if given:
            notes.append(
                f"--instance-type {instance_type} not used: the record carries its own price"
            )
        src = own.get("source") or "the record's cost.usd_per_hour"
        return Price(value, "record", own.get("provenance"), src, itype), notes
    if itype and itype in prices:
        entry = prices[itype]
        why = instance_mismatch(record, itype, entry, recorded=not given)
        if why:
            notes.append(why)
            return Price(None, "unknown", None, "unknown", None if given else itype, why), notes
        if given:
            notes.append(f"instance type {itype} given on the command line, not recorded")
        price = Price(float(entry["usd_per_hour"]), "price-table", "spec", entry["source"], itype)
        return price, notes
    if itype:
        why = f"instance type {itype} is not in the price table; pass --prices FILE"
    else:
        why = "no price: the record has no cost and no hardware.instance_type"
    notes.append(why)
    return Price(None, "unknown", None, "unknown", itype, why), notes


def measured_elsewhere(record: Mapping[str, Any]) -> str | None:
    """Why the record's price cannot price its latency, or None: `perfsuite infer` measured
    it on other hardware than the run trained on, and the price is the training hardware's."""
    entry = (record.get("inference") or {}).get("hardware") or {}
    here, trained = entry.get("name"), (record.get("hardware") or {}).get("name")
    if not here or not trained or here == trained:
        return None
    return (
        f"inference measured on {here}, the price is for the run's hardware {trained}: no "
        "inference cost (re-measure it there, or price that machine with a record of its own)"
    )


def cost_of(
    record: Mapping[str, Any],
    prices: Mapping[str, Mapping[str, Any]],
    instance_type: str | None = None,
) -> Cost:
    """Training and inference cost of one record (see the module docstring for the rules)."""
    price, notes = find_price(record, prices, instance_type)
    price_notes = list(notes)
    task = record.get("task") or {}
    entry_type = (record.get("source") or {}).get("entry_type") or "training"
    reached, time_s = reached_time(record)
    bad = untrusted(record)  # claims the evaluations do not bear out: priced nowhere
    gone = bad or (ended_early(record) if entry_type != "inference" else None)
    if bad:
        reached, time_s = False, None

    train_cost, train_prov = None, None
    if entry_type != "inference" and not bad:
        train_cost, train_prov = _training_cost(price, reached, time_s, gone, notes)
    inf = record.get("inference") or {}
    latency = qvalue(inf.get("latency"))
    inf_cost, inf_prov = _inference_cost(record, price, latency, bad, notes)
    view, energy = inference_view(record), energy_view(record)
    if view.note:
        notes.append(view.note)
    if view.latency_s and view.p50_s and view.latency_s > TAIL * view.p50_s:
        notes.append(
            f"latency mean {view.latency_s / view.p50_s:.1f}x its median: a few calls were far "
            "slower (a contended machine, first calls); the mean (DAWNBench's figure) and "
            "the cost from it carry them"
        )
    if energy.note and entry_type != "inference":
        notes.append(f"energy to accuracy: {energy.note}")
    return Cost(
        run_id=str(record.get("run_id")),
        task=str(task.get("name")),
        entry_type=entry_type,
        instance_type=price.instance_type,
        price=price,
        reached=reached,
        training_time_s=time_s,
        training_cost_usd=train_cost,
        training_cost_provenance=train_prov,
        inference_latency_s=latency,
        inference_cost_per_10k_usd=inf_cost,
        inference_cost_provenance=inf_prov,
        notes=notes,
        inference_rule=view.rule,
        inference_p50_s=view.p50_s,
        inference_p90_s=view.p90_s,
        inference_p99_s=view.p99_s,
        energy_to_accuracy_j=energy.to_accuracy_j,
        energy_per_10k_j=view.energy_per_10k_j,
        energy_source=energy.source or (inf.get("energy") or {}).get("source"),
        target=_target(task, record),
        items=items(str(task.get("name"))),
        price_notes=price_notes,
        left_out=gone,
    )


def _training_cost(
    price: Price, reached: bool, time_s: float | None, gone: str | None, notes: list[str]
) -> tuple[float | None, str | None]:
    """(training cost in USD, its provenance) of a trusted training record: priced only when
    it reached the threshold, with a price and a time; else (None, None) and the reason is
    appended to `notes` (a run left out is not DNC: it says nothing about converging)."""
    if gone:
        notes.append(
            f"{gone} before reaching the threshold: no training cost (left out, not DNC: "
            "it says nothing about converging)"
        )
    elif not reached:
        notes.append("did not reach the threshold: no training cost (DNC)")
    elif price.usd_per_hour is not None and time_s is not None:
        return training_cost_usd(time_s, price.usd_per_hour), "derived"
    return None, None


def _inference_cost(
    record: Mapping[str, Any],
    price: Price,
    latency: float | None,
    bad: str | None,
    notes: list[str],
) -> tuple[float | None, str | None]:
    """(inference cost per ITEMS items in USD, its provenance): the record's own cost per item
    where it has one, else derived from the mean latency and the hourly price, unless the
    latency was measured on another machine than the price's; None for an untrusted record
    (`bad`). A reason for no cost is appended to `notes`."""
    inf = record.get("inference") or {}
    per_item = qvalue(inf.get("cost_per_item"))
    if bad:
        notes.append(f"{bad}: no cost (left out)")
    elif per_item is not None:
        return per_item * ITEMS, (inf.get("cost_per_item") or {}).get("provenance") or "imported"
    elif latency is not None and price.usd_per_hour is not None:
        elsewhere = measured_elsewhere(record)
        if elsewhere:
            notes.append(elsewhere)
        else:
            return inference_cost_per_10k_usd(latency, price.usd_per_hour), "derived"
    return None, None


def _target(task: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    if task.get("metric") is None or task.get("threshold") is None:
        return "n/a"
    return target_text(str(task["metric"]), float(task["threshold"]), task_direction(record))


def costs(
    records: Sequence[Mapping[str, Any]],
    prices: Mapping[str, Mapping[str, Any]],
    instance_type: str | None = None,
) -> list[Cost]:
    """`cost_of` for every record, in input order."""
    return [cost_of(r, prices, instance_type) for r in records]
