"""Helpers shared by the test files: records built by hand, the CLI in a process of its own,
and the fixed-width tables the CLI prints, read back as rows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from perfsuite.record import quantity

ROOT = Path(__file__).resolve().parents[1]


def perfsuite_process(
    tmp_path: Path, *args: str, timeout: int = 600
) -> subprocess.CompletedProcess:
    """`python -m perfsuite ARGS` in a process of its own, with a private cache under
    `tmp_path`; output captured, never checked (the caller asserts on the exit code)."""
    env = {**os.environ, "PERFSUITE_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "perfsuite", *args],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout,
    )  # fmt: skip


@contextmanager
def hta_in_process() -> Iterator[None]:
    """HTA parses several ranks in a fork()ed pool; a fork of a test process that earlier tests
    left running torch, TensorFlow, Ray or tqdm threads can inherit a held lock, and the pool's
    child then waits forever. Inside this block HTA parses every rank in this process."""
    from hta.common.trace import Trace

    parse = Trace.parse_multiple_ranks

    def in_process(self, ranks, use_multiprocessing=True, use_memory_profiling=True):
        return parse(self, ranks, False, use_memory_profiling)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Trace, "parse_multiple_ranks", in_process)
        yield


def build_record(make_record, bytes_per_step=1e8):
    """A hand-built record for roofline arithmetic: 2e9 FLOP and `bytes_per_step` per 0.1 s
    step over four per-op rows (mm forward and backward, add_, foo), a profiled op table and
    measured fp32 and copy roofs (1e11 FLOP/s, 1e10 byte/s)."""
    rec = make_record([(1, 10.0, 0.95)], run_id="roof1")
    rec["work"] = {
        "flops_per_step": quantity(2e9, "FLOP", "counted"),
        "bytes_per_step": quantity(bytes_per_step, "byte", "modeled"),
        "batch_size": 32,
        "dtype": "float32",
        "per_op": [
            {"op": "aten::mm", "phase": "forward", "calls": 2, "flops": 1e9, "bytes": 1e7},
            {"op": "aten::mm", "phase": "backward", "calls": 4, "flops": 6e8, "bytes": 2e7},
            {"op": "aten::add_", "phase": "optimizer", "calls": 1, "flops": 1e6, "bytes": 3e7},
            {"op": "aten::foo", "phase": "forward", "calls": 1, "flops": 4e8, "bytes": 1e7},
        ],
        "unknown_ops": [],
    }
    rec["throughput"] = {"step_time": quantity(0.1, "s", "measured")}
    rec["timeline"] = {
        "trace": None,
        "tool": "torch.profiler",
        "steps": 2,
        "step_time": quantity(0.1, "s", "measured"),
        "ops": [
            {
                "op": "aten::mm",
                "calls": 12,
                "self_time_s": 0.01,
                "total_time_s": 0.12,
                "device_time_s": 0.1,
            },
            {
                "op": "aten::add_",
                "calls": 2,
                "self_time_s": 0.015,
                "total_time_s": 0.02,
                "device_time_s": None,
            },
            {"op": "aten::copy_", "calls": 4, "self_time_s": 0.006},
        ],
    }
    pk = quantity(1e11, "FLOP/s", "measured", "matmul")
    bw = quantity(1e10, "byte/s", "measured", "copy")
    rec["ceilings"] = {
        "device": "Test CPU",
        "dtype": "float32",
        "peak_flops": pk,
        "memory_bandwidth": bw,
        "spec": None,
        "roofs": {"fp32": {"peak_flops": pk}, "memory": {"bandwidth": bw}},
    }
    return rec


_KEEP = object()


def set_ceilings(rec, peak=_KEEP, bandwidth=_KEEP):
    """Replace a hand-built record's fp32 compute roof (`peak`) or memory roof (`bandwidth`,
    None: no roof) in `ceilings` as a writer keeps them: the run's dtype roof and its entry in
    `ceilings.roofs` alike."""
    ceil = rec["ceilings"]
    roofs = ceil.setdefault("roofs", {})
    if peak is not _KEEP:
        ceil["peak_flops"] = peak
        roofs.pop("fp32", None)
        if peak is not None:
            roofs["fp32"] = {"peak_flops": peak}
    if bandwidth is not _KEEP:
        ceil["memory_bandwidth"] = bandwidth
        roofs.pop("memory", None)
        if bandwidth is not None:
            roofs["memory"] = {"bandwidth": bandwidth}
    return rec


def cpu_record(make_record, under=None, run_threads=2, peak=1e9):
    """One matmul op at 3.2e10 FLOP/s (1.6e9 FLOP in 0.05 s, 6 calls) against `peak`."""
    rec = make_record([(1, 10.0, 0.95)], run_id="cpu1")
    rec["environment"] = {"device": "cpu", "torch_threads": run_threads}
    rec["work"] = {
        "flops_per_step": quantity(1.6e9, "FLOP", "counted"),
        "bytes_per_step": quantity(3e7, "byte", "modeled"),
        "dtype": "float32",
        "per_op": [
            {"op": "aten::mm", "phase": "forward", "calls": 2, "flops": 1e9, "bytes": 1e7},
            {"op": "aten::mm", "phase": "backward", "calls": 4, "flops": 6e8, "bytes": 2e7},
        ],
    }
    rec["throughput"] = {"step_time": quantity(0.05, "s", "measured")}
    rec["timeline"] = {
        "trace": None,
        "steps": 2,
        "step_time": quantity(0.05, "s", "measured"),
        "ops": [{"op": "aten::mm", "calls": 12, "self_time_s": 0.1, "total_time_s": 0.1}],
    }
    pk = quantity(peak, "FLOP/s", "measured", "matmul n=2048, 2n^3/t; torch 2.5.0, threads 2")
    if under is not None:
        pk["measured_under"] = dict(under)
    bw = quantity(1e10, "byte/s", "measured", "copy")
    rec["ceilings"] = {
        "device": "Test CPU",
        "dtype": "float32",
        "peak_flops": pk,
        "memory_bandwidth": bw,
        "spec": None,
        "roofs": {"fp32": {"peak_flops": pk}, "memory": {"bandwidth": bw}},
    }
    return rec


def table_rows(text: str, caption: str) -> list[list[str]]:
    """The rows of the fixed-width table under the line starting with `caption`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(caption)) + 3
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start:end]]
