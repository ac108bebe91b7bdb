"""Everything that depends on the framework or the device, behind one small interface.

The runner, the capture code and the workloads ask a backend to synchronise, to enter
autocast, to mark an NVTX range or to describe the hardware; none of them tests device strings.
A TensorFlow backend adds a module here instead of touching the runner. Importing this package
does not import torch: `device.py` is pure, `pytorch.py` imports torch when used.
"""

from __future__ import annotations

from typing import Any

from perfsuite.backends.device import Device, parse_device


def torch_backend(device: str | Device) -> Any:
    """The PyTorch backend for `device` (imports torch)."""
    from perfsuite.backends.pytorch import TorchBackend

    return TorchBackend(device if isinstance(device, Device) else parse_device(device))


__all__ = ["Device", "parse_device", "torch_backend"]
