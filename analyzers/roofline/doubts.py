"""Evidence against a roof: why a measured CPU peak may be too low for the run it judges.

Why: a point above its roof means the model or the roof is wrong, and the cause text should
name the one the record gives evidence for. A CPU peak measured while other jobs loaded the
machine, with fewer threads than the run used, or by a matmul smaller than the op, is too low;
its `measured_under` (perfsuite.ceilings: load before/after, CPUs, threads, matrix size) says
so (records written before `measured_under` get its threads at load: perfsuite.record.migrate).
Pure functions on record dicts, torch-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Suspects:
    """What the record says against the roofs one point is judged by."""

    peak: tuple[str, ...] = ()  # evidence the compute roof (a measured peak) is too low
    bandwidth: tuple[str, ...] = ()  # evidence the memory roof (a measured copy) is too low
    peak_unknown: str = ""  # the peak's load was not recorded: no evidence either way
    faster: tuple[tuple[str, float], ...] = ()  # (math, peak) of roofs above the judged one
    bandwidth_unknown: str = ""  # the same for the memory roof


def run_threads(record: Mapping[str, Any]) -> int | None:
    """Threads the run computed with: environment.torch_threads, else config.threads."""
    for section, key in (("environment", "torch_threads"), ("config", "threads")):
        v = (record.get(section) or {}).get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return None


def is_cpu_record(record: Mapping[str, Any], roofs: Mapping[str, Any]) -> bool:
    """A CPU run: its environment says so, or a roof carries a CPU load record."""
    dev = str((record.get("environment") or {}).get("device") or "")
    if dev.lower().startswith("cpu"):
        return True
    return any("cpus" in (_under(q) or {}) for q in _quantities(roofs))


def _quantities(roofs: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out = []
    for r in roofs.values():
        for q in (r or {}).values():
            if isinstance(q, Mapping):
                out.append(q)
    return out


def _under(q: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    u = (q or {}).get("measured_under")
    return u if isinstance(u, Mapping) else None


def _load(u: Mapping[str, Any]) -> str:
    """'3.10 before, 3.40 after' from a measured_under."""
    parts = []
    for key in ("load_before", "load_after"):
        v = u.get(key)
        if isinstance(v, (int, float)):
            parts.append(f"{v:.2f} {key.split('_')[1]}")
    return ", ".join(parts) or "unknown"


def _threads(n: int) -> str:
    return f"{n} thread" if n == 1 else f"{n} threads"


def measured_threads(q: Mapping[str, Any]) -> int | None:
    """Threads a measured roof was taken with (`measured_under.threads`), else None."""
    t = (_under(q) or {}).get("threads")
    return t if isinstance(t, int) and not isinstance(t, bool) else None


def doubts(
    q: Mapping[str, Any] | None,
    threads_run: int | None,
    flops_per_call: float | None = None,
) -> tuple[str, ...]:
    """Evidence that a measured CPU roof `q` is too low for this run; () when there is none."""
    if not q or q.get("provenance") != "measured":
        return ()
    u = _under(q) or {}
    out = []
    if u.get("busy") is True:
        out.append(
            f"measured at load {_load(u)} on "
            f"{u.get('cpus')} CPUs with {u.get('threads')} threads, above the quiet limit "
            f"{u.get('busy_limit')}"
        )
    t = measured_threads(q)
    if t and threads_run and t < threads_run:
        out.append(f"measured with {_threads(t)} while the run used {threads_run}")
    size = u.get("size")
    if q.get("unit") == "FLOP/s" and isinstance(size, int) and flops_per_call:
        bench = 2.0 * size**3
        if flops_per_call > bench:
            out.append(
                f"by a benchmark smaller than this op (n={size} matmul, {bench:.3g} FLOP; "
                f"this op {flops_per_call:.3g} FLOP per call)"
            )
    return tuple(out)


def unknown_load(q: Mapping[str, Any] | None) -> str:
    """'load at measurement not recorded' for a measured CPU roof from an old cache, else ''."""
    if not q or q.get("provenance") != "measured":
        return ""
    u = _under(q) or {}
    return "load at measurement not recorded" if u.get("busy") is None else ""


def suspects(
    roofs: Mapping[str, Any],
    math: str | None,
    *,
    cpu: bool,
    threads_run: int | None,
    flops_per_call: float | None = None,
    check: tuple[str, str] = ("", ""),
) -> Suspects:
    """The evidence against the `math` roof and the memory roof, for one point. `check`:
    (peak, bandwidth) evidence from the machine check next to the window (any device)."""
    pq = (roofs.get(math or "") or {}).get("peak_flops")
    bq = (roofs.get("memory") or {}).get("bandwidth")
    peak = (pq or {}).get("value")
    faster = tuple(
        sorted(
            (m, float(r["peak_flops"]["value"]))
            for m, r in roofs.items()
            if m not in ("memory", math)
            and ((r or {}).get("peak_flops") or {}).get("value")
            and peak
            and float(r["peak_flops"]["value"]) > float(peak)
        )
    )
    peak_check = (check[0],) if check[0] else ()
    bw_check = (check[1],) if check[1] else ()
    if not cpu:
        return Suspects(peak_check, bw_check, faster=faster)
    return Suspects(
        doubts(pq, threads_run, flops_per_call) + peak_check,
        doubts(bq, threads_run) + bw_check,
        unknown_load(pq),
        faster,
        unknown_load(bq),
    )


def roof_notes(roofs: Mapping[str, Any], *, cpu: bool, threads_run: int | None) -> list[str]:
    """One note per CPU roof that is not this run's quiet, same-thread measurement."""
    if not cpu:
        return []
    notes, unknown = [], []
    for name in sorted(roofs):
        for q in (roofs[name] or {}).values():
            if not isinstance(q, Mapping) or q.get("provenance") != "measured":
                continue
            t = measured_threads(q)
            if t and threads_run and t != threads_run:
                notes.append(
                    f"{name} roof: measured with {_threads(t)}, this run used {threads_run} "
                    "(peaks are per thread count: this one is not this run's)"
                )
            u = _under(q) or {}
            if u.get("busy") is True:
                notes.append(
                    f"{name} roof: measured on a busy machine (load {_load(u)} on "
                    f"{u.get('cpus')} CPUs, {u.get('threads')} threads): likely too low"
                )
            if unknown_load(q):
                unknown.append(name)
    if unknown:
        notes.append(
            f"{', '.join(unknown)} roof(s): load at measurement not recorded (old peaks cache); "
            "`perfsuite peaks --refresh` on a quiet machine records it"
        )
    return notes
