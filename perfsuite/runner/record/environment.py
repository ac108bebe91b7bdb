"""What the run ran on: host, CPU, GPUs, framework and library versions."""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import socket
import sys
from typing import Any

from perfsuite.backends.device import cpu_hardware, parse_device
from perfsuite.hostinfo import cpu_model, usable_cpus
from perfsuite.version import __version__

# Environment variables that change how fast the same code runs (allocator, threading, math
# libraries, CUDA): two runs that differ in one of these are not the same measurement.
PERF_ENV_PREFIXES = (
    "MALLOC_",
    "OMP_",
    "KMP_",
    "GOMP_",
    "MKL_",
    "DNNL_",
    "ONEDNN_",
    "OPENBLAS_",
    "CUDA_",
    "CUBLAS_",
    "CUDNN_",
    "NCCL_",
    "NVIDIA_TF32_OVERRIDE",
    "PYTORCH_",
    "TORCH_",
    "TF_",
    "XLA_FLAGS",
    "LD_PRELOAD",
)


# Terraform's variables share TensorFlow's TF_ prefix and change no speed.
NOT_PERF_ENV_PREFIXES = (
    "TF_CLI_",
    "TF_VAR_",
    "TF_DATA_DIR",
    "TF_WORKSPACE",
    "TF_IN_AUTOMATION",
    "TF_INPUT",
    "TF_REGISTRY_",
    "TF_PLUGIN_",
    "TF_IGNORE",
    "TF_STATE_",
)


def perf_env(environ: dict[str, str]) -> dict[str, str]:
    """The set variables of PERF_ENV_PREFIXES, sorted (values cut at 200 characters)."""
    return {
        k: v[:200]
        for k, v in sorted(environ.items())
        if k.startswith(PERF_ENV_PREFIXES)
        and not k.startswith(NOT_PERF_ENV_PREFIXES)
        and "LOG" not in k  # log levels change no speed
    }


def gpu_names() -> list[str]:
    import torch

    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def collect_environment(device: str) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "host": socket.gethostname(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_model": cpu_model(),
        "cpu_count": usable_cpus(),
        "torch_threads": torch.get_num_threads(),
        "gpus": gpu_names(),
        "device": device,
        "frameworks": {"torch": torch.__version__},
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "perfsuite": __version__,
        "perf_env": perf_env(dict(os.environ)),
    }
    # Read from the installed distributions' metadata: importing scikit-learn only for
    # its version would cost every run seconds of start-up.
    for mod, dist in (("numpy", "numpy"), ("sklearn", "scikit-learn"), ("psutil", "psutil")):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            env["frameworks"][mod] = importlib.metadata.version(dist)
    return env


def hardware_section(env: dict[str, Any], device: str, instance_type: str | None) -> dict[str, Any]:
    """The record's `hardware`: the device this process runs on. `count` is the number of
    accelerators the run used: 1 here (one GPU; a CPU run counts one machine), set to the
    number of ranks by a data-parallel run on GPUs (`runner/launch/distributed.py`)."""
    index = parse_device(device).gpu_index
    if index is not None and env["gpus"]:
        return {
            "name": env["gpus"][index],
            "accelerator": "cuda",
            "count": 1,
            "instance_type": instance_type,
        }
    return {
        **cpu_hardware(env["cpu_model"], env["cpu_count"]),
        "count": 1,
        "instance_type": instance_type,
    }
