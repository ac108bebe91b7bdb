"""The record names the environment variables that change speed, so two runs that differ in
one (an allocator setting, a thread count, TF32 override) are seen to differ."""

from __future__ import annotations

from perfsuite.runner.environment import perf_env


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
