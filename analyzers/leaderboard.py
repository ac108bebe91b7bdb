"""DAWNBench-style leaderboards over any mix of records (ours, DAWNBench, MLPerf imports).

One board per task (name, metric, threshold: the task's own target), ranked by one of four
quantities. Entries that did not reach the target are listed as DNC below the ranked ones;
entries whose value cannot be computed (e.g. no price) are listed unranked with the reason.
Runs on synthetic data are listed unranked: their accuracy is chance; so are smoke tests and
runs on a subset of the training or evaluation data (`record_view.partial_run`). Our runs and
imported DAWNBench/MLPerf entries share a board when they name the same task, metric and
threshold (`imagenet` top5 0.93, `squad` f1 0.75, `cifar10` top1 0.94).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzers import stats
from analyzers.cost import cost_of
from analyzers.generalization import headline
from analyzers.inference import OLDER_RULE, energy_view, inference_view
from analyzers.record_view import partial_run, reached_time
from analyzers.stability import hardware_label, is_inference_only, task_direction
from analyzers.tasks import items, metric_info, metric_text, target_text

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
    generalization: dict[str, Any] | None = None  # analyzers.generalization.headline
    energy_j: float | None = None  # energy to accuracy (training boards) or per 10,000 (inference)


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


def _inference_qualifies(rec: Mapping[str, Any], metric: str, threshold: float) -> bool:
    """Served metric at or above the target (at or below it for a lower-is-better task);
    without one, the trained model's crossing."""
    value = ((rec.get("inference") or {}).get("metrics") or {}).get(metric)
    if value is not None:
        if task_direction(rec) == "lower":
            return float(value) <= threshold
        return float(value) >= threshold
    return reached_time(rec)[0]


def _no_price(notes: Sequence[str]) -> str:
    return "price unknown" + (f" ({notes[0]})" if notes else "")


def _entry(
    rec: Mapping[str, Any], by: str, prices: Mapping[str, Mapping[str, Any]]
) -> tuple[str, float | None, str | None, str | None] | None:
    """(status, value, provenance, note) of a record on this board, or None if not an entry."""
    task = rec.get("task") or {}
    metric, threshold = str(task.get("metric")), float(task.get("threshold"))
    target = target_text(metric, threshold, task_direction(rec))
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
        if rec.get("status") == "interrupted" and not reached:
            return "n/a", None, None, "interrupted before reaching the target"
        if not reached or time_s is None:
            return "DNC", None, None, f"{rec.get('status')}: did not reach {target}"
        if by == "training-time":
            return "ranked", time_s, tta.get("provenance"), None
        c = cost_of(rec, prices)
        if c.training_cost_usd is None:
            return "n/a", None, None, _no_price(c.notes)
        return "ranked", c.training_cost_usd, c.training_cost_provenance, f"price: {c.price.source}"
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
    c = cost_of(rec, prices)
    if c.inference_cost_per_10k_usd is None:
        return "n/a", None, None, _no_price(c.notes)
    return "ranked", c.inference_cost_per_10k_usd, c.inference_cost_provenance, _latency_note(rec)


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
    )


def leaderboard(
    records: Sequence[Mapping[str, Any]],
    by: str = "training-time",
    prices: Mapping[str, Mapping[str, Any]] | None = None,
    task: str | None = None,
) -> list[Board]:
    """Boards sorted by task name then threshold; rows: ranked (ties share a rank), DNC, n/a."""
    if by not in BY:
        raise ValueError(f"unknown ranking {by!r}; expected one of {', '.join(BY)}")
    prices = prices or {}
    tasks: dict[tuple[str, str, float, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        t = rec.get("task") or {}
        if task is not None and t.get("name") != task:
            continue
        key = (
            str(t.get("name")),
            str(t.get("metric")),
            float(t.get("threshold")),
            task_direction(rec),
        )
        tasks.setdefault(key, []).append(rec)

    boards = []
    for (name, metric, threshold, direction), recs in sorted(tasks.items()):
        entries = [(r, e) for r in recs if (e := _entry(r, by, prices)) is not None]
        if not entries:
            continue
        # "#n" keeps keys unique if the same run id is given twice; ties then sort by run id.
        keyed = {f"{r.get('run_id')}#{n}": (r, e) for n, (r, e) in enumerate(entries)}
        notes = []
        if len({r.get("run_id") for r, _ in entries}) < len(entries):
            notes.append("duplicate run ids: was the same record given twice?")
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
            )
        )
    return boards
