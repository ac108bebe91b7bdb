"""How fast the machine is while the ops are timed: the roofs' own benchmarks, run briefly
just before and just after the profile window.

Why: on a shared machine (a cloud VM, a busy host) the speed the hardware delivers changes
from minute to minute, and the load average does not always show it (other guests of the same
host are not in it). On a shared 2-vCPU VM a 1-thread matmul ran at 43-54 GFLOP/s against
a quiet 78.8, and the digits step went from 29 to 74 ms between two runs of the same
command. An op's fraction of its roof then says as much about the neighbours as about
the op. So the matmul and the copy that measured the roofs (same size, dtype and threads) run
a few times next to the window, and perfsuite.analyzers.roofline.above_roof compares them with
the roofs.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from perfsuite.ceilings.measure import (
    batch_seconds,
    conv_benchmark,
    copy_benchmark,
    device_sync,
    matmul_benchmark,
    matmul_math,
    timed_calls,
)
from perfsuite.devices.specs import normalize_dtype
from perfsuite.record import quantity

REPEATS = 3  # timed repeats per benchmark and side, after one untimed call


def probe_plan(ceilings: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """What to run: the sizes the record's measured roofs were taken at; (None, why) when no
    roof was measured here (a spec sheet or a user value has no benchmark to repeat)."""
    ceil = ceilings or {}
    plan: dict[str, Any] = {}
    peak = ceil.get("peak_flops") or {}
    under = peak.get("measured_under") or {}
    n, shape = under.get("size"), under.get("shape")
    dtype = normalize_dtype(ceil.get("dtype"))
    if peak.get("provenance") != "measured":
        pass
    elif under.get("kernel") == "conv" and isinstance(shape, list) and len(shape) == 6:
        plan["conv"] = {"dtype": dtype, "shape": [int(v) for v in shape]}
    elif isinstance(n, int) and n > 0:
        plan["matmul"] = {"dtype": dtype, "n": n}
    bw = ceil.get("memory_bandwidth") or {}
    size = (bw.get("measured_under") or {}).get("size")
    if bw.get("provenance") == "measured" and isinstance(size, int) and size > 0:
        plan["copy"] = {"bytes": size}
    if not plan:
        return None, "no measured roof with a benchmark size to repeat (spec or user roofs)"
    return plan, ""


def run_probe(device: str, plan: Mapping[str, Any], repeats: int = REPEATS) -> dict[str, float]:
    """One side of the check: {"matmul" or "conv": FLOP/s, "copy": byte/s} for what `plan` names, by
    perfsuite.ceilings.measure's own benchmarks.

    Median, not best: the window's ops run at the machine's typical speed of the moment, and
    the median of a few calls is that speed; the roofs themselves are the best of several."""
    sync, batch_s = device_sync(device), batch_seconds(device)  # batched like the roofs (GPU)
    out: dict[str, float] = {}
    if "matmul" in plan:
        dtype = str(plan["matmul"]["dtype"])
        with matmul_math(dtype):
            call, flops = matmul_benchmark(device, dtype, int(plan["matmul"]["n"]))
            times = timed_calls(call, sync, repeats, batch_s=batch_s)
            out["matmul"] = flops / statistics.median(times)
        del call
    if "conv" in plan:
        call, flops = conv_benchmark(device, str(plan["conv"]["dtype"]), plan["conv"]["shape"])
        out["conv"] = flops / statistics.median(timed_calls(call, sync, repeats, batch_s=batch_s))
        del call
    if "copy" in plan:
        call, moved = copy_benchmark(device, int(plan["copy"]["bytes"]))
        out["copy"] = moved / statistics.median(timed_calls(call, sync, repeats, batch_s=batch_s))
        del call
    return out


def _sides(
    key: str, unit: str, src: str, before: Mapping[str, float], after: Mapping[str, float]
) -> dict[str, Any]:
    """`before` and `after` of one benchmark as measured quantities."""
    return {
        side: quantity(vals.get(key), unit, "measured", f"{src}, {side}")
        for side, vals in (("before", before), ("after", after))
    }


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
        out["matmul"] = {"dtype": dtype, "n": n, **_sides("matmul", "FLOP/s", src, before, after)}
    if "conv" in plan:
        shape, dtype = plan["conv"]["shape"], plan["conv"]["dtype"]
        n, c, h, w, k, r = shape
        src = f"{dtype} conv2d {c}->{k} {r}x{r} on {n}x{h}x{w}, 2NKHWCr^2 / median time"
        out["conv"] = {
            "dtype": dtype,
            "shape": shape,
            **_sides("conv", "FLOP/s", src, before, after),
        }
    if "copy" in plan:
        size = plan["copy"]["bytes"]
        src = f"copy {size / 2**20:.0f} MiB, 2*size / median time"
        out["copy"] = {"bytes": size, **_sides("copy", "byte/s", src, before, after)}
    return out
