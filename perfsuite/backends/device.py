"""Device names parsed once: `cpu`, `cuda` or `cuda:N`. Pure Python (no framework import)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """A device a run executes on. `str(device)` is the framework's device string."""

    kind: str  # "cpu" or "cuda"
    index: int | None = None

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    @property
    def gpu_index(self) -> int | None:
        """The GPU ordinal for NVML / nvidia-smi (0 for plain `cuda`), None on CPU."""
        if not self.is_gpu:
            return None
        return self.index or 0

    def __str__(self) -> str:
        return self.kind if self.index is None else f"{self.kind}:{self.index}"


def cpu_hardware(model: str, count: int) -> dict[str, str]:
    """A CPU as the record's `hardware` names it ("<model> (<N> CPUs)"), in one place so an
    inference entry and the run's hardware compare equal on the same machine."""
    return {"name": f"{model} ({count} CPUs)", "accelerator": "cpu"}


def parse_device(text: str | Device) -> Device:
    """`cpu`, `cuda` or `cuda:N`; anything else is a ValueError with one clear line."""
    if isinstance(text, Device):
        return text
    t = str(text).strip().lower()
    if t == "cpu":
        return Device("cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", t)
    if m:
        return Device("cuda", int(m.group(1)) if m.group(1) is not None else None)
    raise ValueError(f"--device must be cpu or cuda[:N], got {text!r}")
