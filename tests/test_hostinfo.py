"""Host facts without a framework: the CPU's instruction flags and the low-precision note."""

from __future__ import annotations

import mmap
import sys

import pytest

from perfsuite.hostinfo import cpu_flags, low_precision_note, minor_page_faults, native_on_cpu

# The flags line of this project's 2-core AMD EPYC VM (AVX2, no AVX-512, no AMX), shortened.
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse sse2 avx f16c fma avx2\n"
SAPPHIRE = "flags\t\t: avx2 avx512f avx512_bf16 amx_bf16 amx_tile avx512_fp16\n"
GRAVITON3 = "processor\t: 0\nFeatures\t: fp asimd fphp asimdhp bf16 sve\n"


def _flags(tmp_path, text):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return cpu_flags(str(path))


def test_cpu_flags_reads_x86_flags_and_arm_features(tmp_path):
    assert _flags(tmp_path, EPYC) == frozenset({"fpu", "sse", "sse2", "avx", "f16c", "fma", "avx2"})
    assert "bf16" in _flags(tmp_path, GRAVITON3)
    assert cpu_flags(str(tmp_path / "absent")) == frozenset()


def test_bf16_and_fp16_without_instructions_get_a_note(tmp_path):
    flags = _flags(tmp_path, EPYC)
    bf16 = low_precision_note("bfloat16", native_on_cpu("bfloat16", flags))
    assert bf16 is not None and bf16.startswith("bfloat16 autocast") and "without" in bf16
    assert "avx512_bf16, amx_bf16, bf16" in bf16 and "slower than float32" in bf16
    assert low_precision_note("float16", native_on_cpu("float16", flags)).startswith(
        "float16 autocast"
    )


def test_native_instructions_float32_and_unknown_cpus_get_none(tmp_path):
    sapphire = _flags(tmp_path, SAPPHIRE)
    assert low_precision_note("bfloat16", native_on_cpu("bfloat16", sapphire)) is None
    assert low_precision_note("float16", native_on_cpu("float16", sapphire)) is None
    arm = _flags(tmp_path, GRAVITON3)
    assert (
        low_precision_note("bfloat16", native_on_cpu("bfloat16", arm)) is None
        and low_precision_note("float16", native_on_cpu("float16", arm)) is None
    )
    epyc = _flags(tmp_path, EPYC)
    assert (
        low_precision_note(None, native_on_cpu(None, epyc)) is None
        and low_precision_note("float32", native_on_cpu("float32", epyc)) is None
    )
    assert (
        low_precision_note("bfloat16", native_on_cpu("bfloat16", frozenset())) is None
    )  # flags unknown: no guess


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="getrusage page faults: Linux")
def test_minor_page_faults_count_fresh_pages_touched():
    # 64 MiB of fresh anonymous memory, one byte written per page: each first touch is a fault
    size = 64 * 2**20
    before = minor_page_faults()
    buf = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        buf[offset] = 1
    after = minor_page_faults()
    buf.close()
    assert before is not None and after is not None
    pages = size // mmap.PAGESIZE
    # transparent huge pages can serve 512 pages per fault, so only a floor of 1/512 holds
    # in general; without them (the common default for small mappings) it is one per page
    assert pages // 512 <= after - before <= pages + 2000


def test_clock_readings_subtract_and_add_and_keep_unknown_faults_unknown():
    from perfsuite.runner.engine.clock import ClockReading

    used = ClockReading(2.0, 1.0, 10) - ClockReading(0.5, 0.25, 4)
    assert used == ClockReading(1.5, 0.75, 6)
    assert used + ClockReading(0.5, 0.25, 4) == ClockReading(2.0, 1.0, 10)
    # a platform without page-fault counts: the difference says unknown, not 0
    assert (ClockReading(2.0, 1.0, None) - ClockReading(0.5, 0.25, 4)).faults is None
