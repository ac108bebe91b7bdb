"""How fast the machine is while the ops are timed: the roofs' own benchmarks, run briefly
just before and just after the profile window.

Why: on a shared machine (a cloud VM, a busy host) the speed the hardware delivers changes
from minute to minute, and the load average does not always show it (other guests of the same
host are not in it). On this project's 2-core VM a 1-thread matmul ran at 43-54 GFLOP/s one
evening against a quiet 78.8, and the digits step went from 29 to 74 ms between two runs of
the same command. An op's fraction of its roof then says as much about the neighbours as about
the op. So the matmul and the copy that measured the roofs (same size, dtype and threads) run
a few times next to the window, and analyzers.machine_speed compares them with the roofs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

from perfsuite.ceilings.measure import _sync, _torch_dtype
from perfsuite.ceilings.table import normalize_dtype
from perfsuite.record import quantity

REPEATS = 3  # timed repeats per benchmark and side, after one untimed call


def probe_plan(ceilings: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """What to run: the sizes the record's measured roofs were taken at; (None, why) when no
    roof was measured here (a spec sheet or a user value has no benchmark to repeat)."""
    ceil = ceilings or {}
    plan: dict[str, Any] = {}
    peak = ceil.get("peak_flops") or {}
    n = (peak.get("measured_under") or {}).get("size")
    dtype = normalize_dtype(ceil.get("dtype"))
    if peak.get("provenance") == "measured" and isinstance(n, int) and n > 0:
        plan["matmul"] = {"dtype": dtype, "n": n}
    bw = ceil.get("memory_bandwidth") or {}
    size = (bw.get("measured_under") or {}).get("size")
    if bw.get("provenance") == "measured" and isinstance(size, int) and size > 0:
        plan["copy"] = {"bytes": size}
    if not plan:
        return None, "no measured roof with a benchmark size to repeat (spec or user roofs)"
    return plan, ""


def _median_rate(fn: Any, sync: Any, work: float, repeats: int) -> float:
    """`work` / the median seconds of `repeats` timed calls, after one untimed call."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return work / statistics.median(times)


def run_probe(device: str, plan: Mapping[str, Any], repeats: int = REPEATS) -> dict[str, float]:
    """One side of the check: {"matmul": FLOP/s, "copy": byte/s} for what `plan` names.

    Median, not best: the window's ops run at the machine's typical speed of the moment, and
    the median of a few calls is that speed; the roofs themselves are the best of several."""
    import torch

    sync = _sync(device)
    out: dict[str, float] = {}
    if "matmul" in plan:
        n, dtype = int(plan["matmul"]["n"]), str(plan["matmul"]["dtype"])
        old_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"  # as measure_matmul does
        try:
            tdt = _torch_dtype(dtype)
            a = torch.randn(n, n, device=device).to(tdt)
            b = torch.randn(n, n, device=device).to(tdt)
            c = torch.empty(n, n, device=device, dtype=tdt)
            out["matmul"] = _median_rate(
                lambda: torch.matmul(a, b, out=c), sync, 2.0 * n**3, repeats
            )
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old_tf32
        del a, b, c
    if "copy" in plan:
        size = int(plan["copy"]["bytes"])
        src = torch.ones(size // 4, dtype=torch.float32, device=device)
        dst = torch.empty_like(src)
        out["copy"] = _median_rate(lambda: dst.copy_(src), sync, 2.0 * size, repeats)
        del src, dst
    return out


def check_section(
    plan: Mapping[str, Any], before: Mapping[str, float], after: Mapping[str, float]
) -> dict[str, Any]:
    """The record's `timeline.machine_check`: both sides as measured quantities."""
    out: dict[str, Any] = {
        "tool": "perfsuite.ceilings.probe",
        "method": (
            f"the measured roofs' own benchmarks (same size, dtype and threads), median of "
            f"{REPEATS} timed calls after one untimed, just before and just after the window"
        ),
    }
    if "matmul" in plan:
        n, dtype = plan["matmul"]["n"], plan["matmul"]["dtype"]
        src = f"{dtype} matmul n={n}, 2n^3 / median time"
        out["matmul"] = {
            "dtype": dtype,
            "n": n,
            **{
                side: quantity(vals.get("matmul"), "FLOP/s", "measured", f"{src}, {side}")
                for side, vals in (("before", before), ("after", after))
            },
        }
    if "copy" in plan:
        size = plan["copy"]["bytes"]
        src = f"copy {size / 2**20:.0f} MiB, 2*size / median time"
        out["copy"] = {
            "bytes": size,
            **{
                side: quantity(vals.get("copy"), "byte/s", "measured", f"{src}, {side}")
                for side, vals in (("before", before), ("after", after))
            },
        }
    return out
