"""The record names the environment variables that change speed, so two runs that differ in
one (an allocator setting, a thread count, TF32 override) are seen to differ."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy
import psutil

from perfsuite.runner.record.environment import perf_env


def test_perf_env_keeps_speed_settings_and_nothing_else():
    env = {
        "MALLOC_MMAP_THRESHOLD_": "4294967296",
        "OMP_NUM_THREADS": "1",
        "LD_PRELOAD": "/usr/lib/libjemalloc.so.2",
        "NVIDIA_TF32_OVERRIDE": "0",
        "TF_CPP_MIN_LOG_LEVEL": "1",  # a log level: no speed
        "TF_CLI_CONFIG_FILE": "/root/.terraformrc",  # Terraform's, not TensorFlow's
        "TF_ENABLE_ONEDNN_OPTS": "0",  # TensorFlow's: it changes the kernels
        "HOME": "/root",
        "PATH": "/usr/bin",
        "SECRET_TOKEN": "x",
    }
    assert perf_env(env) == {
        "LD_PRELOAD": "/usr/lib/libjemalloc.so.2",
        "MALLOC_MMAP_THRESHOLD_": "4294967296",
        "NVIDIA_TF32_OVERRIDE": "0",
        "OMP_NUM_THREADS": "1",
        "TF_ENABLE_ONEDNN_OPTS": "0",
    }
    assert perf_env({"XLA_FLAGS": "y" * 500}) == {"XLA_FLAGS": "y" * 200}


def test_library_versions_come_from_metadata_without_importing_them():
    """The versions equal the libraries' own, and reading them imports none (in a fresh
    process: this one may have imported them already)."""
    import sklearn  # here, not at collection: every test worker collects this file

    code = (
        "import json, sys\n"
        "from perfsuite.runner.record.environment import collect_environment\n"
        "env = collect_environment('cpu')\n"
        "print(json.dumps([env['frameworks'], 'sklearn' in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    frameworks, imported = json.loads(out)
    assert imported is False
    assert frameworks["sklearn"] == sklearn.__version__
    assert frameworks["numpy"] == numpy.__version__
    assert frameworks["psutil"] == psutil.__version__
