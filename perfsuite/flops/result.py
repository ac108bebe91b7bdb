"""The result of a FLOP count, framework-free: per-op rows and the record's `work` section.

Shared by the PyTorch counter (`torch_counter.py`) and the TensorFlow graph counter
(`tf_graph.py`), so both frameworks write the same `work` section from the same code.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from perfsuite.record import quantity

COUNTER_SOURCE = "perfsuite.flops OpCounter (TorchDispatchMode) with per-op formulas"
BYTES_SOURCE = "compulsory bytes: each op's inputs and outputs moved once (perfsuite.flops)"


@dataclass
class OpRow:
    """One op in one phase, summed over its calls."""

    op: str
    family: str
    phase: str
    calls: int = 0
    flops: float = 0.0
    bytes: float = 0.0


@dataclass
class ModuleRow:
    """Work of the ops issued directly inside one module (not its children)."""

    module: str
    calls: int = 0
    flops: float = 0.0
    bytes: float = 0.0


@dataclass
class CountResult:
    per_op: list[OpRow]
    unknown_ops: list[dict[str, Any]]
    per_module: list[ModuleRow] = field(default_factory=list)
    dtype: str | None = None
    batch_size: int | None = None

    @property
    def total_flops(self) -> float:
        return sum(r.flops for r in self.per_op)

    @property
    def total_bytes(self) -> float:
        return sum(r.bytes for r in self.per_op)

    def flops_of(self, *families: str, phase: str | None = None) -> float:
        """FLOPs of the given families (all when none given), optionally one phase only."""
        return sum(
            r.flops
            for r in self.per_op
            if (not families or r.family in families) and (phase is None or r.phase == phase)
        )

    def by_family(self) -> dict[str, dict[str, float]]:
        """{family: {"flops", "bytes", "calls"}}, largest FLOPs first."""
        out: dict[str, dict[str, float]] = defaultdict(lambda: {"flops": 0, "bytes": 0, "calls": 0})
        for r in self.per_op:
            out[r.family]["flops"] += r.flops
            out[r.family]["bytes"] += r.bytes
            out[r.family]["calls"] += r.calls
        return dict(sorted(out.items(), key=lambda kv: -kv[1]["flops"]))

    def by_phase(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = defaultdict(lambda: {"flops": 0, "bytes": 0})
        for r in self.per_op:
            out[r.phase]["flops"] += r.flops
            out[r.phase]["bytes"] += r.bytes
        return dict(out)

    def to_work_section(self, source: str = "") -> dict[str, Any]:
        """The record's `work` section (the runner adds batch_size); `source` names the
        counter (the PyTorch dispatch-mode counter when empty)."""
        return {
            "flops_per_step": quantity(
                self.total_flops, "FLOP", "counted", source or COUNTER_SOURCE
            ),
            "bytes_per_step": quantity(self.total_bytes, "byte", "modeled", BYTES_SOURCE),
            "dtype": self.dtype,
            "per_op": [
                {
                    "op": r.op,
                    "family": r.family,
                    "phase": r.phase,
                    "calls": r.calls,
                    "flops": r.flops,
                    "bytes": r.bytes,
                }
                for r in self.per_op
            ],
            "unknown_ops": [dict(u) for u in self.unknown_ops],
        }
