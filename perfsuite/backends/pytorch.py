"""The PyTorch backend: synchronisation, autocast, NVTX ranges, generators, availability."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch

from perfsuite.backends.device import Device, cpu_hardware
from perfsuite.hostinfo import cpu_model, usable_cpus

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class TorchBackend:
    """One device seen through PyTorch. Cheap to build; holds no state but the device."""

    framework = "pytorch"

    def __init__(self, device: Device) -> None:
        self.device = device
        self.torch_device = torch.device(str(device))

    @property
    def version(self) -> str:
        return torch.__version__

    def check_available(self) -> None:
        """Raise ValueError (one line) when the device cannot be used here."""
        if self.device.is_gpu:
            if not torch.cuda.is_available():
                raise ValueError("--device cuda requested but no CUDA device is available")
            if (self.device.index or 0) >= torch.cuda.device_count():
                raise ValueError(
                    f"--device {self.device}: only {torch.cuda.device_count()} CUDA device(s)"
                )

    def sync(self) -> None:
        """Wait for queued device work, so host clocks measure finished work."""
        if self.device.is_gpu:
            torch.cuda.synchronize(self.torch_device)

    def autocast(self, precision: str | None) -> contextlib.AbstractContextManager[Any]:
        """Autocast to `bf16`/`fp16` on this device, or nothing for None/`fp32`."""
        if precision in (None, "fp32"):
            return contextlib.nullcontext()
        return torch.autocast(self.device.kind, dtype=AUTOCAST_DTYPES[precision])

    def inference_model(self, model: Any, mode: str, precision: str) -> Any:
        """`model` in eval mode, compiled for `--mode compile` and `compile-cudagraphs` (the
        latter then captured in a CUDA graph by the caller; precision: see `autocast`)."""
        model.eval()
        if mode in ("compile", "compile-cudagraphs"):
            return torch.compile(model, dynamic=False)
        return model

    def no_grad(self) -> contextlib.AbstractContextManager[Any]:
        """No autograd recording around inference."""
        return torch.no_grad()

    @contextlib.contextmanager
    def op_ranges(self) -> Iterator[None]:
        """NVTX ranges around every aten op (`torch.autograd.profiler.emit_nvtx`), so that a
        counters capture can attribute kernels to ops; autograd carries the setting to its own
        thread, so backward ops get ranges too. Used only in the counters replay child (it
        costs host time per op, never on the clock). No-op on CPU, and where torch refuses it
        (the capture then has the step range only, as before)."""
        ranges = None
        if self.device.is_gpu:
            try:
                # input shapes in each op's marker, for an nsys profile (runner.routes.nsys_profile)
                shapes = os.environ.get("PERFSUITE_NVTX_SHAPES") == "1"
                ranges = torch.autograd.profiler.emit_nvtx(record_shapes=shapes)
                ranges.__enter__()
            except Exception:  # an optional label: the capture goes on without it
                ranges = None
        try:
            yield
        finally:
            if ranges is not None:
                with contextlib.suppress(Exception):  # the steps ran; keep their capture
                    ranges.__exit__(None, None, None)

    @contextlib.contextmanager
    def nvtx_range(self, name: str) -> Iterator[None]:
        """A process-wide NVTX start/end range (not push/pop: those are per thread and miss
        the backward kernels that autograd launches from its own thread). No-op on CPU."""
        if not self.device.is_gpu:
            yield
            return
        handle = torch.cuda.nvtx.range_start(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_end(handle)

    def generator(self, seed: int) -> torch.Generator:
        """A CPU generator: the same seed gives the same draws on every device."""
        return torch.Generator().manual_seed(seed)

    def seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def collective_backend(self) -> str:
        """The torch.distributed backend for data-parallel runs on this device kind."""
        return "nccl" if self.device.is_gpu else "gloo"

    def rank_device(self, local_rank: int) -> Device:
        """The device of a data-parallel rank: its own GPU (`cuda:<local rank>`), or the CPU."""
        if not self.device.is_gpu:
            return self.device
        if local_rank >= torch.cuda.device_count():
            raise ValueError(
                f"rank {local_rank} needs cuda:{local_rank}; "
                f"only {torch.cuda.device_count()} CUDA device(s)"
            )
        return Device("cuda", local_rank)

    def set_threads(self, threads: int | None) -> None:
        if threads:
            torch.set_num_threads(threads)

    def thread_count(self) -> int:
        """torch's intra-op threads now (what a CPU measurement ran with)."""
        return int(torch.get_num_threads())

    def hardware(self) -> dict[str, str]:
        """This device's name as the record's `hardware.name` gives it."""
        if self.device.is_gpu:
            return {
                "name": torch.cuda.get_device_name(self.device.gpu_index),
                "accelerator": "cuda",
            }
        return cpu_hardware(cpu_model(), usable_cpus())
