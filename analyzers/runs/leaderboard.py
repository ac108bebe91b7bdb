"""DAWNBench-style leaderboards over any mix of records (ours, DAWNBench, MLPerf imports).

One board per task (name, metric, threshold: the task's own target), ranked by one of four
quantities. Entries that finished without reaching the target are listed as DNC below the ranked
ones; entries whose value cannot be computed (e.g. no price), and runs that crashed or are
unfinished without reaching it (`perfsuite.analyzers.results.record_view.left_out`: neither ranked
nor DNC, as `stability` and `compare` leave them out), are listed unranked (n/a) with the reason; so
are records whose claims do not follow from their evaluations (`perfsuite.record.consistency`).
Runs on synthetic data are listed unranked: their accuracy is chance; so are smoke tests and
runs on a subset of the training or evaluation data (`record_view.partial_run`). Our runs and
imported DAWNBench/MLPerf entries share a board when they name the same task, metric and
threshold (`imagenet` top5 0.93, `squad` f1 0.75, `cifar10` top1 0.94).

Imported MLPerf results get one board per benchmark and round (`extra.mlperf.round`: a round's
rules, data and reference code are its own), and their rows carry time x accelerators
(`Row.accelerator_s`, from the hardware count the import read from the submission's
`systems/<system>.json`), so that systems of different sizes compare.

Costs are priced by `perfsuite.analyzers.results.cost` (the record's own price, else the price table
for its instance type, else `instance_type` for records that name none; not where the table says
that instance is other hardware, nor `instance_type` where the record's hardware cannot be checked
against it). A perfsuite run's own `mllog.txt` imported with `perfsuite import mlperf` is the same
run as the run's record: a board lists it once, as the run's record, and its notes say which import
was left off and on what evidence (`same_runs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite import stats
from perfsuite.analyzers.results.cost import Cost, cost_of, measured_elsewhere
from perfsuite.analyzers.results.generalization import headline
from perfsuite.analyzers.results.inference import OLDER_RULE, energy_view, inference_view
from perfsuite.analyzers.results.record_view import (
    accelerator_seconds,
    capture_incomplete,
    left_out,
    mlperf_round,
    partial_run,
    reached_time,
    task_direction,
)
from perfsuite.analyzers.runs.stability import hardware_label, is_inference_only
from perfsuite.record.consistency import untrusted
from perfsuite.task_metrics import items, metric_info, metric_text, target_text

BY = ("training-time", "training-cost", "inference-latency", "inference-cost")
UNITS = {
    "training-time": "s",
    "training-cost": "USD",
    "inference-latency": "s",
    "inference-cost": "USD per 10,000 items",
}


def unit_of(by: str, task: str) -> str:
    """The ranked quantity's unit on `task`'s board: inference cost per 10,000 of its items."""
    return UNITS[by].replace("items", items(task))


@dataclass(frozen=True)
class Row:
    """One entry. `rank` is None for unranked rows; `status` is "ranked", "DNC" or "n/a"."""

    rank: int | None
    status: str
    run_id: str
    value: float | None
    provenance: str | None
    model: str | None
    hardware: str
    framework: str | None
    source: str
    note: str | None = None
    generalization: dict[str, Any] | None = (
        None  # perfsuite.analyzers.results.generalization.headline
    )
    energy_j: float | None = None  # energy to accuracy (training boards) or per 10,000 (inference)
    accelerator_s: float | None = None  # ranked training time x accelerators (GPU-seconds)


@dataclass(frozen=True)
class Duplicate:
    """An imported record left off a board: the same run as `same_as`, listed instead."""

    run_id: str
    same_as: str
    evidence: str


@dataclass(frozen=True)
class Board:
    task: str
    metric: str
    threshold: float
    by: str
    unit: str
    rows: list[Row]
    notes: list[str] = field(default_factory=list)
    direction: str = "higher"  # task.direction: "lower" for error rates, perplexity, FID
    target: str = ""  # as the task states it: "top-5 >= 93%", "F1 >= 0.75"
    instance_type: str | None = None  # prices records that name none (cost rankings)
    duplicates: list[Duplicate] = field(default_factory=list)
    round: str | None = None  # MLPerf round ("5.1") of an imported MLPerf board


def _inference_qualifies(rec: Mapping[str, Any], metric: str, threshold: float) -> bool:
    """Served metric at or above the target (at or below it for a lower-is-better task);
    without one, the trained model's crossing."""
    value = ((rec.get("inference") or {}).get("metrics") or {}).get(metric)
    if value is not None:
        if task_direction(rec) == "lower":
            return float(value) <= threshold
        return float(value) >= threshold
    return reached_time(rec)[0]


def _joined(*parts: str | None) -> str | None:
    return "; ".join(p for p in parts if p) or None


def _entry(
    rec: Mapping[str, Any],
    by: str,
    prices: Mapping[str, Mapping[str, Any]],
    instance_type: str | None = None,
) -> tuple[str, float | None, str | None, str | None] | None:
    """(status, value, provenance, note) of a record on this board, or None if not an entry."""
    task = rec.get("task") or {}
    metric, threshold = str(task.get("metric")), float(task.get("threshold"))
    target = target_text(metric, threshold, task_direction(rec))
    bad = untrusted(rec)
    if bad:  # claims that do not follow from the record's evaluations: never ranked
        if by.startswith("training") and is_inference_only(rec):
            return None
        if not by.startswith("training") and not (rec.get("inference") or {}).get("latency"):
            return None
        return "n/a", None, None, bad
    if (rec.get("data") or {}).get("kind") == "synthetic":
        return "n/a", None, None, "synthetic data: throughput only, accuracy is chance"
    partial = partial_run(rec)
    if partial:
        return "n/a", None, None, f"not the task's benchmark: {partial}"
    if by.startswith("training"):
        if is_inference_only(rec):
            return None
        tta = rec.get("time_to_accuracy") or {}
        reached, time_s = reached_time(rec)
        if rec.get("status") == "running":
            return "n/a", None, None, "still running"
        gone = left_out(rec)
        if gone:
            return "n/a", None, None, f"{gone} before reaching the target"
        if not reached or time_s is None:
            return "DNC", None, None, f"{rec.get('status')}: did not reach {target}"
        incomplete = capture_incomplete(rec)
        if by == "training-time":
            return "ranked", time_s, tta.get("provenance"), incomplete
        c = cost_of(rec, prices, instance_type)
        if c.training_cost_usd is None:
            return "n/a", None, None, _unpriced(c)
        note = _joined(f"price: {c.price.source}", *c.price_notes, incomplete)
        return "ranked", c.training_cost_usd, c.training_cost_provenance, note
    inf = rec.get("inference") or {}
    if not inf.get("latency"):
        return None
    if not _inference_qualifies(rec, metric, threshold):
        if task_direction(rec) == "lower":
            return (
                "DNC",
                None,
                None,
                f"{metric_info(metric).label} above {metric_text(metric, threshold)}",
            )
        return "DNC", None, None, f"accuracy below {target}"
    if by == "inference-latency":
        lat = inf["latency"]
        if lat.get("value") is None:
            return "n/a", None, None, "latency not measured"
        return "ranked", float(lat["value"]), lat.get("provenance"), _latency_note(rec)
    c = cost_of(rec, prices, instance_type)
    notes = c.price_notes  # the price's origin, what was ignored
    if c.inference_cost_per_10k_usd is None:
        if c.price.usd_per_hour is None:
            return "n/a", None, None, _unpriced(c)
        return "n/a", None, None, measured_elsewhere(rec) or "latency not measured"
    if c.inference_cost_provenance != "derived":  # the record's own cost per item
        notes = []
    return (
        "ranked",
        c.inference_cost_per_10k_usd,
        c.inference_cost_provenance,
        _joined(_latency_note(rec), *notes),
    )


def _unpriced(c: Cost) -> str:
    """ "price unknown (WHY)": the note of the price rule that says why there is no price."""
    return "price unknown" + (f" ({c.price.why})" if c.price.why else "")


def _latency_note(rec: Mapping[str, Any]) -> str | None:
    """Which rule the latency follows: the DAWNBench mean (with p50/p90/p99), or older."""
    v = inference_view(rec)
    if v.rule == OLDER_RULE:
        return "older rule (median of a few batch-1 calls)"
    if v.p50_s is None:
        return None
    ms = "/".join(f"{1e3 * x:.3g}" for x in (v.p50_s, v.p90_s, v.p99_s) if x is not None)
    return f"mean of {v.examples} batch-1 ({v.mode}, {v.precision}); p50/p90/p99 {ms} ms"


def _row(rec: Mapping[str, Any], entry: tuple, rank: int | None, by: str) -> Row:
    status, value, prov, note = entry
    return Row(
        rank=rank,
        status=status,
        run_id=str(rec.get("run_id")),
        value=value,
        provenance=prov,
        model=rec.get("model"),
        hardware=hardware_label(rec),
        framework=rec.get("framework"),
        source=str((rec.get("source") or {}).get("kind")),
        note=note,
        generalization=headline(rec),
        energy_j=(
            energy_view(rec).to_accuracy_j
            if by.startswith("training")
            else inference_view(rec).energy_per_10k_j
        ),
        accelerator_s=accelerator_seconds(rec, value) if by == "training-time" else None,
    )


def _origin_run_id(rec: Mapping[str, Any]) -> str | None:
    """The perfsuite run an MLPerf import is a log of: the run id the importer read from the
    run.json beside the log (`extra.mlperf.perfsuite_run.run_id`), else None."""
    if (rec.get("source") or {}).get("kind") != "mlperf":
        return None
    mlperf = (rec.get("extra") or {}).get("mlperf")
    origin = mlperf.get("perfsuite_run") if isinstance(mlperf, Mapping) else None
    run_id = origin.get("run_id") if isinstance(origin, Mapping) else None
    return run_id if isinstance(run_id, str) else None


def same_runs(records: Sequence[Mapping[str, Any]]) -> dict[int, tuple[Mapping[str, Any], str]]:
    """Imported records that are a perfsuite run's own mllog.txt, by `id()` of the import:
    (the run's record, the evidence). The evidence is the run id that the importer read from
    the run.json beside the log (`extra.mlperf.perfsuite_run.run_id`), naming a perfsuite
    record of the same task among `records`; when it names none, the import is of no run
    here. A log copied away from its run.json before the import names no run.
    """
    natives = {
        r.get("run_id"): r for r in records if (r.get("source") or {}).get("kind") == "perfsuite"
    }
    out: dict[int, tuple[Mapping[str, Any], str]] = {}
    for rec in records:
        run_id = _origin_run_id(rec)
        native = natives.get(run_id) if run_id is not None else None
        name = (rec.get("task") or {}).get("name")
        if native is not None and (native.get("task") or {}).get("name") == name:
            out[id(rec)] = (native, "the run.json beside its log names that run")
    return out


def _one_listing(
    entries: list[tuple[Mapping[str, Any], tuple]],
    same: Mapping[int, tuple[Mapping[str, Any], str]],
) -> tuple[list[tuple[Mapping[str, Any], tuple]], list[Duplicate], list[str]]:
    """A board's entries less the imports of a run that is listed on it too, those imports,
    and the notes: one per import left off, and one per import of a run whose record is on
    another board (imported against another target: listed, said to be that run)."""
    listed = {id(r) for r, _ in entries}
    duplicates, notes, kept = [], [], []
    for r, e in entries:
        native, evidence = same.get(id(r), (None, ""))
        if native is None:
            kept.append((r, e))
        elif id(native) in listed:
            duplicates.append(Duplicate(str(r.get("run_id")), str(native.get("run_id")), evidence))
        else:
            kept.append((r, e))
            t = native.get("task") or {}
            own = target_text(
                str(t.get("metric")), float(t.get("threshold")), task_direction(native)
            )
            notes.append(
                f"{r.get('run_id')} is an import of {native.get('run_id')}'s own mllog.txt, the "
                f"same run ({evidence}), against another target: {native.get('run_id')} is on "
                f"the {own} board"
            )
    duplicates.sort(key=lambda d: (d.run_id, d.same_as))
    notes[:0] = [
        f"{d.run_id} is an import of {d.same_as}'s own mllog.txt, the same run "
        f"({d.evidence}): listed once, as {d.same_as}"
        for d in duplicates
    ]
    return kept, duplicates, notes


def leaderboard(
    records: Sequence[Mapping[str, Any]],
    by: str = "training-time",
    prices: Mapping[str, Mapping[str, Any]] | None = None,
    task: str | None = None,
    instance_type: str | None = None,
) -> list[Board]:
    """Boards sorted by task name then threshold; rows: ranked (ties share a rank), DNC, n/a.

    `instance_type` prices the cost rankings' records that name none
    (`perfsuite.analyzers.results.cost`). An import of a perfsuite run's own log is left off when
    its run is on the same board (`same_runs`); `Board.duplicates` and the notes say so.
    """
    if by not in BY:
        raise ValueError(f"unknown ranking {by!r}; expected one of {', '.join(BY)}")
    prices = prices or {}
    costed = instance_type if by.endswith("cost") else None
    tasks: dict[tuple[str, str, float, str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        t = rec.get("task") or {}
        if task is not None and t.get("name") != task:
            continue
        key = (
            str(t.get("name")),
            str(t.get("metric")),
            float(t.get("threshold")),
            task_direction(rec),
            mlperf_round(rec) or "",
        )
        tasks.setdefault(key, []).append(rec)
    same = same_runs([r for recs in tasks.values() for r in recs])

    boards = []
    for (name, metric, threshold, direction, rnd), recs in sorted(tasks.items()):
        entries = [(r, e) for r in recs if (e := _entry(r, by, prices, costed)) is not None]
        if not entries:
            continue
        entries, duplicates, notes = _one_listing(entries, same)
        # "#n" keeps keys unique if the same run id is given twice; ties then sort by run id.
        keyed = {f"{r.get('run_id')}#{n}": (r, e) for n, (r, e) in enumerate(entries)}
        if len({r.get("run_id") for r, _ in entries}) < len(entries):
            notes.append("duplicate run ids: was the same record given twice?")
        if costed:
            notes.append(
                f"--instance-type {costed}: the price of records that name no instance type and "
                "carry no price of their own, unless the price table lists other hardware for "
                "it or their hardware cannot be checked against it (then n/a, saying why)"
            )
        ranked = [(k, e[1]) for k, (_, e) in keyed.items() if e[0] == "ranked"]
        rows = [_row(*keyed[k], rank, by) for k, _, rank in stats.competition_ranks(ranked)]
        for status in ("DNC", "n/a"):
            rows += [_row(*keyed[k], None, by) for k in sorted(keyed) if keyed[k][1][0] == status]
        boards.append(
            Board(
                name,
                metric,
                threshold,
                by,
                unit_of(by, name),
                rows,
                notes,
                direction,
                target_text(metric, threshold, direction),
                costed,
                duplicates,
                rnd or None,
            )
        )
    return boards
