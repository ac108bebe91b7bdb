"""Where the Nsight Compute command-line binary is: the collector runs it, the `.ncu-rep`
readers export through it or find the `ncu_report` module shipped beside it."""

from __future__ import annotations

import glob
import os
import shutil

NCU_ENV = "PERFSUITE_NCU"  # path of the ncu binary, when it is not on PATH
_NCU_GLOBS = (
    "/usr/local/cuda/bin/ncu",
    "/usr/local/cuda-*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
    "/usr/local/NVIDIA-Nsight-Compute*/ncu",
)


def find_ncu() -> str | None:
    """The Nsight Compute command-line binary: $PERFSUITE_NCU, PATH, then usual install dirs."""
    env = os.environ.get(NCU_ENV)
    if env and os.access(env, os.X_OK):
        return env
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _NCU_GLOBS:
        for cand in sorted(glob.glob(pattern), reverse=True):
            if os.access(cand, os.X_OK):
                return cand
    return None
