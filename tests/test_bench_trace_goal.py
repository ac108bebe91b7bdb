"""The trace bench's verdict on the cold 1 GB read: each read's ratio to the gzip read
measured before it, PASS or FAIL on the median ratio and the largest peak RSS."""

from __future__ import annotations

import gzip
import subprocess

import pytest

from bench.trace_throughput import _measure_gzip_read, goal_lines


def _read(read_s: float, peak: float) -> dict:
    return {"read_s": read_s, "tree_peak_bytes": peak}


def test_the_median_ratio_and_the_largest_peak_decide():
    gz = {"wall_s": 0.5}
    # ratios 4.0, 6.0, 4.8, 5.2: median 5.0 (within the goal); peaks up to 690 MB
    reads = [_read(2.0, 600e6), _read(3.0, 690e6), _read(2.4, 650e6), _read(2.6, 640e6)]
    lines = goal_lines([(gz, r) for r in reads], "1 GB trace (gzip)")
    assert lines[0].startswith("Goal, 1 GB trace (gzip) read cold: at most 5x")
    (third,) = [line for line in lines if "cold read 3:" in line]
    assert "2.40 s against a gzip read of 0.50 s = 4.8x" in third
    assert lines[-1].split(": ")[0].strip() == "median 5.0x"
    assert lines[-1].count("PASS") == 2


def test_a_slow_read_or_a_large_peak_fails():
    gz = {"wall_s": 1.0}
    slow = goal_lines([(gz, _read(5.1, 100e6))], "x")
    assert slow[-1].startswith("  median 5.1x: FAIL;") and slow[-1].endswith("PASS")
    big = goal_lines([(gz, _read(1.0, 701e6))], "x")
    assert big[-1].startswith("  median 1.0x: PASS;") and big[-1].endswith("FAIL")
    failed = goal_lines([(gz, {"error": "timeout"}), (gz, None)], "x")
    assert failed[0].endswith("FAIL") and "failed (timeout)" in failed[1]


def test_the_gzip_read_reads_the_whole_file(tmp_path):
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"x" * 1000)
    res = _measure_gzip_read(path)
    assert res["wall_s"] > 0 and res["cpu_s"] > 0
    path.write_bytes(path.read_bytes()[:-12])  # a truncated stream is an error, not a time
    with pytest.raises(subprocess.CalledProcessError):
        _measure_gzip_read(path)
