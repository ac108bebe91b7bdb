"""Nsight Compute path, on HAND-WRITTEN fixtures (no real ncu output was available)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsuite.counters import CountersError, counters_from_ncu_csv, load_counters, ncu_command

FIX = Path(__file__).parent / "fixtures" / "ncu"
GEMM = (
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1"
    "_tensor16x8x16_kernel"
)


def test_ncu_command_exact():
    cmd = ncu_command(["python", "train.py"], metrics=["dram__bytes_read.sum"], launch_count=50)
    assert cmd == [
        "ncu", "--csv", "--page", "raw", "--print-units", "base",
        "--metrics", "dram__bytes_read.sum,gpu__time_duration.sum",
        "--nvtx", "--nvtx-include", "perfsuite.steps/",
        "--launch-count", "50",
        "python", "train.py",
    ]  # fmt: skip
    plain = ncu_command(["./a.out"], metrics=["lts__t_bytes.sum"], nvtx_range=None)
    assert "--nvtx" not in plain and plain[-1] == "./a.out"
    with pytest.raises(ValueError):
        ncu_command([])


def test_raw_page_fixture_exact():
    sec = counters_from_ncu_csv(FIX / "raw_page.csv", window_steps=1)
    assert sec["tool"] == "ncu" and sec["provenance"] == "measured"
    t = sec["totals"]
    assert t["calls"] == 4
    # ns: 20480 + 9216 + 20992 + 6144
    assert t["time_s"] == pytest.approx(56_832e-9, rel=1e-12)
    # elementwise: fadd 1048576; reduce: 2*262144 + 1048575 + 262144
    assert t["flops"] == 1_048_576 + 1_835_007
    assert t["flops_tensor"] == 2 * 2_147_483_648
    assert t["dram_bytes"] == 2 * (1_048_576 + 524_288) + 8_388_608 + 4_194_304 + 4_194_304 + 1024
    assert t["l2_bytes"] == 2 * 4_194_304 + 12_582_912 + 4_195_328
    gemm = sec["kernels"][0]
    assert (gemm["name"], gemm["calls"], gemm["op"]) == (GEMM, 2, None)
    assert gemm["time_s"] == pytest.approx(41_472e-9, rel=1e-12)
    assert gemm["flops"] == 0.0  # instructions were counted and are zero: not None
    assert "gpu__time_duration.sum" in sec["metrics"]
    assert any("unverified" in n for n in sec["notes"])
    assert any("no NVTX column" in n for n in sec["notes"])


def test_details_page_fixture_scales_units():
    sec = load_counters(FIX / "details_page.csv")
    sgemm, fill = sec["kernels"]
    assert sgemm["name"] == "ampere_sgemm_64x64_nn"
    assert sgemm["dram_bytes"] == pytest.approx(2.10e6 + 524.29e3, rel=1e-12)  # Mbyte + Kbyte
    assert sgemm["time_s"] == pytest.approx(41.50e-6, rel=1e-12)  # usecond
    assert sgemm["flops"] == 2 * 134_217_728 + 65_536
    assert sgemm["flops_tensor"] is None  # not collected, so unknown rather than 0
    assert fill["time_s"] == pytest.approx(3072e-9, rel=1e-12)
    assert fill["l2_bytes"] == pytest.approx(1.05e6, rel=1e-12)
    assert sec["totals"]["flops_tensor"] is None


def test_nvtx_column_attributes_ops():
    sec = counters_from_ncu_csv(FIX / "raw_page_nvtx.csv")
    got = {(k["op"], k["calls"], k["flops"], k["dram_bytes"]) for k in sec["kernels"]}
    assert got == {("aten::addmm", 2, 2 * 2 * 4096.0, 3000.0), ("aten::clamp_min", 1, 0.0, 500.0)}
    assert not any("NVTX" in n for n in sec["notes"])


def test_ncu_errors_name_file_and_field(tmp_path):
    nohead = tmp_path / "log.csv"
    nohead.write_text("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n")
    with pytest.raises(CountersError, match=r"log\.csv: field Kernel Name: no ncu CSV header"):
        counters_from_ncu_csv(nohead)
    bad = tmp_path / "bad.csv"
    lines = (FIX / "raw_page.csv").read_text().splitlines()
    lines[-1] = lines[-1].replace('"262,144"', '"lots"', 1)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(CountersError, match=r"bad\.csv: line 13, field smsp__sass.*'lots'"):
        counters_from_ncu_csv(bad)
