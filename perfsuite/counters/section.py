"""Build the record's `counters` section from per-launch metric values (any collection tool)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from perfsuite.counters.metrics import derive, missing_notes


class CountersError(ValueError):
    """A counter file that cannot be used; the message is one line naming file and field."""


@dataclass
class Launch:
    """One kernel launch with the raw metric values measured for it."""

    name: str
    values: dict[str, float | None]
    op: str | None = None
    time_s: float | None = None


@dataclass
class _Group:
    name: str
    op: str | None
    calls: int = 0
    time_s: float | None = 0.0
    raw: dict[str, float | None] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)

    def add(self, launch: Launch) -> None:
        self.calls += 1
        if self.time_s is not None:
            self.time_s = None if launch.time_s is None else self.time_s + launch.time_s
        first = self.calls == 1
        for k in set(self.raw) | set(launch.values):
            v = launch.values.get(k)
            if v is None or k in self.missing or (k not in self.raw and not first):
                # once any launch lacks a metric (None or absent), the group's sum is unknown:
                # it stays None rather than becoming a partial sum of the other launches
                self.missing.add(k)
                self.raw[k] = None
            else:
                self.raw[k] = float(v) + (self.raw.get(k) or 0.0)


_SUMMED = ("time_s", "flops", "flops_tensor", "dram_bytes", "l2_bytes")


def _sum_or_none(values: Iterable[float | None]) -> float | None:
    vals = list(values)
    if not vals or any(v is None for v in vals):
        return None
    return float(sum(v for v in vals if v is not None))


def build_section(
    launches: Sequence[Launch],
    *,
    tool: str,
    file: str,
    metrics: Sequence[str],
    notes: Sequence[str] = (),
    window_steps: int | None = None,
) -> dict[str, Any]:
    """Aggregate launches by (kernel name, op) into the `counters` record section.

    Kernels are sorted by total FLOP (CUDA-core + Tensor-Core), then DRAM bytes, descending.
    A total is None when any kernel lacks that quantity (a partial sum would mislead).
    """
    groups: dict[tuple[str, str | None], _Group] = {}
    for launch in launches:
        key = (launch.name, launch.op)
        groups.setdefault(key, _Group(launch.name, launch.op)).add(launch)
    kernels = []
    for g in groups.values():
        d = derive(g.raw)
        kernels.append(
            {
                "name": g.name,
                "op": g.op,
                "calls": g.calls,
                "time_s": g.time_s,
                "flops": d["flops"],
                "flops_tensor": d["flops_tensor"],
                "dram_bytes": d["dram_bytes"],
                "l2_bytes": d["l2_bytes"],
                "flops_by_precision": d["flops_by_precision"],
                "tensor_inst": d["tensor_inst"],
                "raw": dict(sorted(g.raw.items())),
            }
        )

    def _weight(k: dict[str, Any]) -> tuple[float, float]:
        return ((k["flops"] or 0.0) + (k["flops_tensor"] or 0.0), k["dram_bytes"] or 0.0)

    kernels.sort(key=_weight, reverse=True)
    totals = {name: _sum_or_none(k[name] for k in kernels) for name in _SUMMED}
    totals["calls"] = sum(k["calls"] for k in kernels)
    all_notes = list(notes) + missing_notes(metrics)
    return {
        "tool": tool,
        "file": file,
        "provenance": "measured",
        "window_steps": window_steps,
        "kernels": kernels,
        "totals": totals,
        "metrics": sorted(metrics),
        "notes": all_notes,
    }
