"""The trace bench's memory sampler reports the peak of the whole process tree: the measured
process and the worker processes it forks."""

from __future__ import annotations

import subprocess
import sys

from bench.trace_throughput import SAMPLER

MB = 1 << 20

# Forks two children that each hold 96 MB (written, so resident) for a few seconds.
_TREE = r"""
import os, time
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        block = bytearray(b"x") * (96 << 20)
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
"""


def test_sampler_sums_the_process_tree(tmp_path):
    out = tmp_path / "peak"
    tree = subprocess.Popen([sys.executable, "-c", _TREE])
    sampler = subprocess.Popen([sys.executable, "-c", SAMPLER, str(tree.pid), str(out)])
    try:
        assert tree.wait(timeout=60) == 0
        sampler.wait(timeout=30)  # it ends when the measured process has
    finally:
        tree.kill()
        sampler.kill()
    peak = int(out.read_text())
    # both children's 96 MB, plus three interpreters, well under 100 MB more
    assert 2 * 96 * MB < peak < 2 * 96 * MB + 100 * MB
