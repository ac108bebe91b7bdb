"""Measured ceilings: what this machine and software stack actually reach.

Peak FLOP/s = 2*M*N*K / t of a large square matrix product (a multiply-add is 2 FLOP);
memory bandwidth = 2 x size / t of a large tensor copy (read + write bytes; write-allocate
traffic is not counted, so this is the usable copy rate, a slight underestimate of raw DRAM
traffic). Both take the best of several timed repeats after a warm-up, since interference
only ever makes a run slower. torch is imported lazily: this is capture-side code.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from perfsuite.ceilings.table import normalize_dtype

# Per mode: target seconds per timed matmul, max repeats, time budget per dtype, copy size.
_MODES = {
    "quick": {"target_s": 0.05, "repeats": 5, "budget_s": 0.6, "copy_bytes": 64 << 20},
    "thorough": {"target_s": 0.25, "repeats": 10, "budget_s": 4.0, "copy_bytes": 512 << 20},
}
CPU_DTYPES = ("float32", "bfloat16", "float64")
CUDA_DTYPES = ("float32", "tf32", "float16", "bfloat16", "float64")


@dataclass(frozen=True)
class Measurement:
    """One measured ceiling with the details needed to judge it."""

    kind: str  # "matmul" or "copy"
    dtype: str | None
    value: float  # FLOP/s or byte/s
    unit: str
    size: int  # matrix side n, or bytes per copied buffer
    repeats: int
    best_s: float
    mode: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        if self.kind == "matmul":
            return f"matmul n={self.size}, 2n^3/t, best of {self.repeats} ({self.mode})"
        return f"copy {self.size / 2**20:.0f} MiB, 2*size/t, best of {self.repeats} ({self.mode})"


def _sync(device: str) -> Callable[[], None]:
    import torch

    if device.startswith("cuda"):
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _best_time(
    fn: Callable[[], Any], sync: Callable[[], None], repeats: int, budget_s: float
) -> tuple[float, int]:
    """Warm up once, then time up to `repeats` calls within `budget_s`; (best seconds, count)."""
    fn()
    sync()
    best = math.inf
    spent = 0.0
    n = 0
    while n < repeats and (n < 2 or spent < budget_s):
        t0 = time.perf_counter()
        fn()
        sync()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        n += 1
    return best, n


def _torch_dtype(dtype: str) -> Any:
    import torch

    return {
        "float32": torch.float32,
        "tf32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "float64": torch.float64,
    }[dtype]


def measure_matmul(device: str, dtype: str, mode: str = "quick") -> Measurement:
    """Best FLOP/s of an n x n x n matrix product, n chosen so one product takes ~target_s."""
    import torch

    dtype = normalize_dtype(dtype)
    if dtype not in ("float32", "tf32", "float16", "bfloat16", "float64"):
        raise ValueError(f"cannot measure matmul peak for dtype {dtype!r}")
    if dtype == "tf32" and not device.startswith("cuda"):
        raise ValueError("tf32 exists only on CUDA devices")
    cfg = _MODES[mode]
    sync = _sync(device)
    tdt = _torch_dtype(dtype)
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        # Grow n until one product takes target_s: small products are overhead-bound and
        # would understate the peak.
        n_max = 16384 if device.startswith("cuda") else 4096
        n = 256
        while True:
            a = torch.randn(n, n, device=device).to(tdt)
            t, _ = _best_time(lambda a=a: a @ a, sync, 1, 0.0)
            if t >= cfg["target_s"] or n >= n_max:
                break
            n *= 2
        a = torch.randn(n, n, device=device).to(tdt)
        b = torch.randn(n, n, device=device).to(tdt)
        out = torch.empty(n, n, device=device, dtype=tdt)
        best, reps = _best_time(
            lambda: torch.matmul(a, b, out=out), sync, cfg["repeats"], cfg["budget_s"]
        )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    return Measurement("matmul", dtype, 2 * n**3 / best, "FLOP/s", n, reps, best, mode)


def measure_bandwidth(device: str, mode: str = "quick") -> Measurement:
    """Best byte/s of copying a buffer far larger than the last-level cache (read + write)."""
    import torch

    cfg = _MODES[mode]
    size = cfg["copy_bytes"] * (4 if device.startswith("cuda") else 1)
    src = torch.ones(size // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    best, reps = _best_time(lambda: dst.copy_(src), _sync(device), cfg["repeats"], cfg["budget_s"])
    return Measurement("copy", None, 2 * size / best, "byte/s", size, reps, best, mode)


def measurable_dtypes(device: str) -> tuple[str, ...]:
    return CUDA_DTYPES if device.startswith("cuda") else CPU_DTYPES
