"""Measured ceilings: what this machine and software stack actually reach.

Peak FLOP/s = 2*M*N*K / t of a large square matrix product (a multiply-add is 2 FLOP), and
on CPUs also 2*N*K*H*W*C*r*r / t of 3x3 convolutions (`CONV_SHAPES`): oneDNN's direct
convolutions reach more than its matrix products on some CPUs (a user's 1-thread float32 runs
on one Xeon: 106-115 GFLOP/s against 61-97), so the compute roof is the best of both;
memory bandwidth = 2 x size / t of a large tensor copy (read + write bytes; write-allocate
traffic is not counted, so this is the usable copy rate, a slight underestimate of raw DRAM
traffic). Both take the best of several timed repeats after a warm-up, since interference
only ever makes a run slower; on a GPU each repeat times a batch of back-to-back calls between
one pair of syncs, so the launch+sync cost does not count as the call's time. torch is
imported lazily: this is capture-side code.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from perfsuite.devices.specs import normalize_dtype

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

    kind: str  # "matmul", "conv" or "copy"
    dtype: str | None
    value: float  # FLOP/s or byte/s
    unit: str
    size: int  # matrix side n, or bytes per copied buffer
    repeats: int
    best_s: float  # per call
    mode: str
    batch: int = 1  # calls timed back to back per sample (GPU), best_s = sample / batch
    shape: tuple[int, ...] | None = None  # conv: (N, C, H, W, K, r)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        batched = f", {self.batch} calls per timing" if self.batch > 1 else ""
        if self.kind == "matmul":
            return f"matmul n={self.size}, 2n^3/t, best of {self.repeats}{batched} ({self.mode})"
        if self.kind == "conv" and self.shape:
            n, c, h, w, k, r = self.shape
            return (
                f"conv2d {c}->{k} {r}x{r} on {n}x{h}x{w}, 2NKHWCr^2/t, best of "
                f"{self.repeats}{batched} ({self.mode})"
            )
        return (
            f"copy {self.size / 2**20:.0f} MiB, 2*size/t, best of {self.repeats}{batched} "
            f"({self.mode})"
        )


def device_sync(device: str) -> Callable[[], None]:
    """What waits for `device` to finish queued work (nothing on a CPU)."""
    import torch

    if device.startswith("cuda"):
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


# On a GPU each timed sample runs back-to-back calls for at least this long (and at most
# MAX_BATCH calls) between one pair of syncs, so the launch and sync cost, paid once per
# sample, is a small part of what is timed: a sample of one call per sync would count it in
# every call and read a short copy's bandwidth low. A CPU call is timed alone.
GPU_BATCH_S = 0.02
MAX_BATCH = 1000


def batch_seconds(device: str) -> float:
    """The least seconds of one timed sample on `device` (0: one call per sample)."""
    return GPU_BATCH_S if device.startswith("cuda") else 0.0


def timed_batches(
    fn: Callable[[], Any],
    sync: Callable[[], None],
    repeats: int,
    budget_s: float = math.inf,
    batch_s: float = 0.0,
) -> tuple[list[float], int]:
    """(seconds per call of each timed sample, calls per sample). Warm up once; with
    `batch_s`, one more call sizes the batch so a sample lasts >= batch_s, and each sample
    times that many back-to-back calls between one pair of syncs, divided by the count (the
    fixed launch+sync cost is then spread over the batch). Up to `repeats` samples, at least
    2, stopping early once `budget_s` of wall time is spent."""
    fn()
    sync()
    batch = 1
    if batch_s > 0:
        t0 = time.perf_counter()
        fn()
        sync()
        one = time.perf_counter() - t0
        batch = MAX_BATCH if one <= 0 else max(1, min(MAX_BATCH, math.ceil(batch_s / one)))
    times: list[float] = []
    spent = 0.0
    while len(times) < repeats and (len(times) < 2 or spent < budget_s):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        elapsed = time.perf_counter() - t0
        spent += elapsed
        times.append(elapsed / batch)
    return times, batch


def timed_calls(
    fn: Callable[[], Any],
    sync: Callable[[], None],
    repeats: int,
    budget_s: float = math.inf,
    batch_s: float = 0.0,
) -> list[float]:
    """Seconds per call of up to `repeats` timed samples (`timed_batches` without the count)."""
    return timed_batches(fn, sync, repeats, budget_s, batch_s)[0]


def _operand(*shape: int, device: str) -> Any:
    """A random benchmark operand from a generator of its own: the benchmarks run beside the
    user's training (`perfsuite.track` measures roofs mid-run), so they must never draw from
    the global RNG that the training's dropout, shuffling and augmentation read."""
    import torch

    gen = torch.Generator(device=device).manual_seed(0)
    return torch.randn(*shape, device=device, generator=gen)


def _torch_dtype(dtype: str) -> Any:
    import torch

    return {
        "float32": torch.float32,
        "tf32": torch.float32,
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "float64": torch.float64,
    }[dtype]


@contextlib.contextmanager
def matmul_math(dtype: str) -> Iterator[None]:
    """cuBLAS in the math of `dtype` (TF32 Tensor Cores only for "tf32"), restored after."""
    import torch

    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32


def matmul_benchmark(device: str, dtype: str, n: int) -> tuple[Callable[[], Any], float]:
    """(one n x n x n product into a preallocated output, its FLOPs 2n^3); call it inside
    `matmul_math(dtype)`."""
    import torch

    tdt = _torch_dtype(dtype)
    a = _operand(n, n, device=device).to(tdt)
    b = _operand(n, n, device=device).to(tdt)
    out = torch.empty(n, n, device=device, dtype=tdt)
    return (lambda: torch.matmul(a, b, out=out)), 2.0 * n**3


def copy_benchmark(device: str, size: int) -> tuple[Callable[[], Any], float]:
    """(one copy of a `size`-byte float32 buffer, the bytes it moves: read + write)."""
    import torch

    src = torch.ones(size // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return (lambda: dst.copy_(src)), 2.0 * size


def measure_matmul(device: str, dtype: str, mode: str = "quick") -> Measurement:
    """Best FLOP/s of an n x n x n matrix product, n chosen so one product takes ~target_s."""

    dtype = normalize_dtype(dtype)
    if dtype not in ("float32", "tf32", "float16", "bfloat16", "float64"):
        raise ValueError(f"cannot measure matmul peak for dtype {dtype!r}")
    if dtype == "tf32" and not device.startswith("cuda"):
        raise ValueError("tf32 exists only on CUDA devices")
    cfg = _MODES[mode]
    sync = device_sync(device)
    with matmul_math(dtype):
        # Grow n until one product takes target_s: small products are overhead-bound and
        # would understate the peak.
        n_max = 16384 if device.startswith("cuda") else 4096
        n = 256
        while True:
            a = _operand(n, n, device=device).to(_torch_dtype(dtype))
            t = min(timed_calls(lambda a=a: a @ a, sync, 1))
            if t >= cfg["target_s"] or n >= n_max:
                break
            n *= 2
        del a
        call, flops = matmul_benchmark(device, dtype, n)
        times, batch = timed_batches(
            call, sync, cfg["repeats"], cfg["budget_s"], batch_seconds(device)
        )
    best = min(times)
    return Measurement("matmul", dtype, flops / best, "FLOP/s", n, len(times), best, mode, batch)


def measure_bandwidth(device: str, mode: str = "quick") -> Measurement:
    """Best byte/s of copying a buffer far larger than the last-level cache (read + write)."""
    cfg = _MODES[mode]
    size = cfg["copy_bytes"] * (4 if device.startswith("cuda") else 1)
    call, moved = copy_benchmark(device, size)
    times, batch = timed_batches(
        call, device_sync(device), cfg["repeats"], cfg["budget_s"], batch_seconds(device)
    )
    best = min(times)
    return Measurement("copy", None, moved / best, "byte/s", size, len(times), best, mode, batch)


# (C, H, W, K, r) of the timed convolutions: 3x3, stride 1, same padding, the ResNet/airbench
# kind; the batch N grows until one call takes the mode's target time.
CONV_SHAPES = ((128, 32, 32, 128, 3), (256, 16, 16, 256, 3))
CONV_DTYPES = ("float32", "bfloat16")


def conv_benchmark(
    device: str, dtype: str, shape: tuple[int, ...]
) -> tuple[Callable[[], Any], float]:
    """(one conv2d of `shape` (N, C, H, W, K, r), its FLOPs 2*N*K*H*W*C*r*r)."""
    import torch

    n, c, h, w, k, r = shape
    tdt = _torch_dtype(dtype)
    x = _operand(n, c, h, w, device=device).to(tdt)
    weight = _operand(k, c, r, r, device=device).to(tdt)
    conv = torch.nn.functional.conv2d

    def call() -> Any:
        with torch.no_grad():
            return conv(x, weight, padding=r // 2)

    return call, 2.0 * n * k * h * w * c * r * r


def measure_conv(device: str, dtype: str, mode: str = "quick") -> Measurement:
    """Best FLOP/s over `CONV_SHAPES`, each at a batch that makes one call ~target_s."""
    dtype = normalize_dtype(dtype)
    if dtype not in CONV_DTYPES:
        raise ValueError(f"cannot measure a convolution peak for dtype {dtype!r}")
    cfg = _MODES[mode]
    sync = device_sync(device)
    best: Measurement | None = None
    for c, h, w, k, r in CONV_SHAPES:
        n = 1
        while True:
            call, flops = conv_benchmark(device, dtype, (n, c, h, w, k, r))
            t = min(timed_calls(call, sync, 1))
            if t >= cfg["target_s"] or n >= 256:
                break
            n *= 2
        times, batch = timed_batches(
            call, sync, cfg["repeats"], cfg["budget_s"] / len(CONV_SHAPES), batch_seconds(device)
        )
        del call
        m = Measurement("conv", dtype, flops / min(times), "FLOP/s", n, len(times),
                        min(times), mode, batch, (n, c, h, w, k, r))  # fmt: skip
        if best is None or m.value > best.value:
            best = m
    assert best is not None
    return best


def flop_kernels(device: str, dtype: str) -> tuple[str, ...]:
    """The benchmarks whose best is `dtype`'s compute roof on `device`."""
    conv = not device.startswith("cuda") and normalize_dtype(dtype) in CONV_DTYPES
    return ("matmul", "conv") if conv else ("matmul",)


def measure_flops(device: str, dtype: str, kernel: str, mode: str = "quick") -> Measurement:
    return (measure_conv if kernel == "conv" else measure_matmul)(device, dtype, mode)


def measurable_dtypes(device: str) -> tuple[str, ...]:
    return CUDA_DTYPES if device.startswith("cuda") else CPU_DTYPES
