"""A stand-in for NVIDIA's `ncu_report` module, shaped like the real one (ncu-report 2026.3.1):
`action.name()` is the bare function name unless given `NameBase_DEMANGLED`; a numeric metric's
`as_string()` is None; `nvtx_state()` is None when the capture had no NVTX."""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import Any


class Metric:
    def __init__(self, v: Any):
        self.v = v

    def as_double(self) -> float:
        return float(self.v)

    def as_string(self) -> str | None:
        return self.v if isinstance(self.v, str) else None


class _Range:
    def __init__(self, name: str):
        self.n = name

    def name(self) -> str:
        return self.n


class _Domain:
    def __init__(self, stack: Sequence[str], start_end: Sequence[str]):
        self.stack, self.start_end = list(stack), list(start_end)

    def push_pop_ranges(self) -> list[str]:
        return sorted(self.stack)  # the real module sorts these; push_pop_range(i) keeps order

    def push_pop_range(self, i: int) -> _Range | None:
        return _Range(self.stack[i]) if i < len(self.stack) else None

    def start_end_ranges(self) -> list[str]:
        return self.start_end


class _State:
    def __init__(self, dom: _Domain):
        self.dom = dom

    def domains(self) -> list[int]:
        return [0]

    def domain_by_id(self, i: int) -> _Domain:
        return self.dom


class Action:
    NameBase_FUNCTION, NameBase_DEMANGLED, NameBase_MANGLED = 0, 1, 2

    def __init__(
        self,
        demangled: str,
        vals: Mapping[str, Any],
        stack: Sequence[str] = (),
        start_end: Sequence[str] = (),
    ):
        self.demangled, self.vals = demangled, dict(vals)
        self.nvtx = _State(_Domain(stack, start_end)) if (stack or start_end) else None

    def name(self, base: int = 0) -> str:
        if base == self.NameBase_DEMANGLED:
            return self.demangled
        return self.demangled.split("(")[0].split("<")[0].split()[-1].split("::")[-1]

    def metric_names(self) -> list[str]:
        return list(self.vals)

    def metric_by_name(self, n: str) -> Metric | None:
        return Metric(self.vals[n]) if n in self.vals else None

    def nvtx_state(self) -> _State | None:
        return self.nvtx


def module(actions: Sequence[Action]) -> types.ModuleType:
    """A module whose `load_report` returns one range holding `actions`."""
    rng = types.SimpleNamespace(
        num_actions=lambda: len(actions), action_by_idx=lambda i: actions[i]
    )
    ctx = types.SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda i: rng)
    mod = types.ModuleType("ncu_report")
    mod.load_report = lambda path: ctx  # type: ignore[attr-defined]
    return mod
