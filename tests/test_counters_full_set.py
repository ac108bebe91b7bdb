"""Reports made with ncu's section sets (`--set full`): counts stored as per-cycle rates.

The numbers below were read through the real `ncu_report` module (ncu-report 2026.3.1 from
PyPI) from public `--set full` reports: a naive fp32 GEMM (N = 1024, C = alpha*A@B + beta*C,
launched twice) on a GeForce GTX 1660 SUPER, and a CUTLASS int8 GEMM on an A100. The reports
themselves are not ours to ship; the values are measurements, quoted as read.
"""

from __future__ import annotations

import sys

import pytest

from perfsuite.counters import load_counters
from perfsuite.counters.rates import counts_from_rates, tensor_activity_note
from tests.ncu_report_standin import Action, module

N = 1024
_S = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
RATE = ".per_cycle_elapsed"
NAIVE = "naive_gemm(const float *, const float *, float *, int, int, int, float, float)"
DEVICE = {
    "device__attribute_display_name": "NVIDIA GeForce GTX 1660 SUPER",
    "device__attribute_chip": 360.0,
    "device__attribute_compute_capability_major": 7.0,
    "device__attribute_compute_capability_minor": 5.0,
}
# per launch: smsp__cycles_elapsed.avg, FFMA rate, FMUL rate, lts__t_sectors.sum, DRAM read,
# DRAM write, gpu__time_duration.sum (ns)
LAUNCHES = [
    (7352411.2727272725, 146.18202928701535, 0.14261661393855157, 8758972.0, 146188512.0,
     4661344.0, 4789792.0),
    (7353966.7272727275, 146.151109987221, 0.14258644876802049, 8755085.0, 146475072.0,
     4781184.0, 4792640.0),
]  # fmt: skip


def _naive_actions() -> list[Action]:
    out = []
    for cycles, ffma, fmul, sectors, rd, wr, ns in LAUNCHES:
        vals = {
            **DEVICE,
            "smsp__cycles_elapsed.avg": cycles,
            _S.format("ffma") + RATE: ffma,
            _S.format("fmul") + RATE: fmul,
            _S.format("fadd") + RATE: 0.0,
            "lts__t_sectors.sum": sectors,
            "dram__bytes_read.sum": rd,
            "dram__bytes_write.sum": wr,
            "gpu__time_duration.sum": ns,
            "sm__pipe_tensor_cycles_active.sum.pct_of_peak_sustained_active": 0.0,
        }
        out.append(Action(NAIVE, vals))
    return out


def test_full_set_report_gives_the_gemm_flop_exactly(tmp_path, monkeypatch):
    """Per launch: N^3 + N^2 FFMA (the K loop, then alpha*v + beta*c) and N^2 FMUL, so
    2*(N^3 + N^2) + N^2 FLOP; the rates times the elapsed cycles must give exactly that."""
    monkeypatch.setitem(sys.modules, "ncu_report", module(_naive_actions()))
    rep = tmp_path / "naive.ncu-rep"
    rep.write_bytes(b"\0")
    sec = load_counters(rep)
    per_launch = 2 * (N**3 + N**2) + N**2
    assert sec["totals"]["flops_by_precision"]["fp32"] == pytest.approx(2 * per_launch, rel=1e-12)
    (kernel,) = sec["kernels"]
    assert kernel["calls"] == 2 and kernel["name"] == NAIVE  # demangled, as the CSV prints it
    assert kernel["l2_bytes"] == 32 * (8758972 + 8755085)
    assert kernel["dram_bytes"] == 146188512 + 4661344 + 146475072 + 4781184
    assert sec["device"] == {"name": "NVIDIA GeForce GTX 1660 SUPER", "chip": "360", "cc": "7.5"}
    assert sec["source"]["l2_bytes"] == "32 * lts__t_sectors.sum"
    rebuilt = [n for n in sec["notes"] if "rebuilt from per-cycle rates" in n]
    assert len(rebuilt) == 1 and _S.format("ffma") in rebuilt[0]
    assert not any("Tensor Cores were busy" in n for n in sec["notes"])  # the pipe was idle


def test_full_set_csv_export_rebuilds_the_same_counts(tmp_path):
    """The same launch as the raw-page CSV ncu prints for the report: `.avg` columns are
    dropped except the elapsed cycles the rates are divided by."""
    from perfsuite.counters.ncu_csv import read_ncu_csv

    cycles, ffma, fmul = LAUNCHES[0][:3]
    cols = ["ID", "Kernel Name", "smsp__cycles_elapsed.avg", "smsp__cycles_elapsed.max",
            _S.format("ffma") + RATE, _S.format("fmul") + RATE]  # fmt: skip
    units = ["", "", "cycle", "cycle", "inst/cycle", "inst/cycle"]
    row = ["0", NAIVE, f"{cycles:,}", "1", repr(ffma), repr(fmul)]
    text = "\n".join(",".join(f'"{c}"' for c in r) for r in (cols, units, row))
    path = tmp_path / "naive.csv"
    path.write_text("==PROF== Connected\n" + text + "\n")
    data = read_ncu_csv(path)
    (launch,) = data.launches
    assert launch.values[_S.format("ffma")] == pytest.approx(N**3 + N**2, rel=1e-12)
    assert launch.values[_S.format("fmul")] == pytest.approx(N**2, rel=1e-12)
    assert "smsp__cycles_elapsed.max" not in launch.values
    assert _S.format("ffma") in data.metric_names and data.notes


def test_a_count_that_is_there_wins_over_its_rate():
    vals = {"smsp__cycles_elapsed.avg": 10.0, _S.format("ffma"): 7.0,
            _S.format("ffma") + RATE: 100.0, _S.format("fadd") + RATE: 2.5}  # fmt: skip
    assert counts_from_rates(vals) == [_S.format("fadd")]
    assert vals[_S.format("ffma")] == 7.0 and vals[_S.format("fadd")] == 25.0
    # a rate without its unit's cycles stays a rate (lts__ is divided by lts cycles)
    vals = {"smsp__cycles_elapsed.avg": 10.0, "lts__t_sectors.sum" + RATE: 3.0}
    assert counts_from_rates(vals) == [] and "lts__t_sectors.sum" not in vals


def test_busy_tensor_pipe_without_tensor_counters_is_called_out():
    """The A100 CUTLASS int8 GEMM: the Tensor-Core pipe 27.2% busy, no op counter collected."""
    busy = {"sm__pipe_tensor_cycles_active.sum.pct_of_peak_sustained_active": 27.219396576654848}
    idle = {"sm__pipe_tensor_cycles_active.sum.pct_of_peak_sustained_active": 0.0}
    note = tensor_activity_note([("cutlass::Kernel<Gemm>", busy), ("k2", idle)], False)
    assert note is not None and "1 launch(es)" in note and "27.2%" in note
    assert tensor_activity_note([("k", busy)], True) is None  # counted: nothing missing
    assert tensor_activity_note([("k", idle), ("k3", {})], False) is None


def test_a_launch_ncu_could_not_profile_is_null_and_named(tmp_path, monkeypatch):
    """A public H800 report holds a flash-attention launch whose every value is NaN (its replay
    failed): null, never NaN in the record, and a note names it."""
    nan = float("nan")
    flash = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>(Flash_fwd_params)"
    actions = [
        *_naive_actions(),
        Action(flash, {"gpu__time_duration.sum": nan, "dram__bytes_read.sum": nan,
                       "smsp__cycles_elapsed.avg": nan, "derived__avg_thread_executed": 0.0}),
    ]  # fmt: skip
    monkeypatch.setitem(sys.modules, "ncu_report", module(actions))
    rep = tmp_path / "h800.ncu-rep"
    rep.write_bytes(b"\0")
    sec = load_counters(rep)
    bad = next(k for k in sec["kernels"] if k["name"] == flash)
    assert bad["time_s"] is None and bad["dram_bytes"] is None
    assert sec["totals"]["time_s"] is None  # unknown, not the sum of the others
    (note,) = [n for n in sec["notes"] if "no measured value" in n]
    assert note.startswith("1 of 3 launches") and "flash_fwd_kernel" in note


def test_the_real_ncu_report_module_has_what_the_reader_uses(tmp_path):
    """Against NVIDIA's module itself, where installed (`pip install -e '.[ncu]'`): the names
    `ncu_rep.py` calls, and a file that is no report (which the module loads as empty)."""
    mod = pytest.importorskip("ncu_report", reason="ncu-report is not installed (extra: ncu)")
    from perfsuite.counters import CountersError
    from perfsuite.counters.ncu_rep import read_ncu_rep

    uses = {
        "IContext": ("num_ranges", "range_by_idx"),
        "IRange": ("num_actions", "action_by_idx"),
        "IAction": ("name", "NameBase_DEMANGLED", "metric_names", "metric_by_name", "nvtx_state"),
        "IMetric": ("as_double", "as_string"),
        "INvtxState": ("domains", "domain_by_id"),
        "INvtxDomainInfo": ("push_pop_range", "push_pop_ranges", "start_end_ranges"),
        "INvtxRange": ("name",),
    }
    missing = [f"{c}.{n}" for c, ns in uses.items() for n in ns if not hasattr(getattr(mod, c), n)]
    assert not missing
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"a text file renamed")
    with pytest.raises(CountersError, match=r"x\.ncu-rep: not an Nsight Compute report"):
        read_ncu_rep(bad)
    empty = tmp_path / "y.ncu-rep"
    empty.write_bytes(b"NVR\0")
    with pytest.raises(CountersError, match=r"y\.ncu-rep: no kernel results"):
        read_ncu_rep(empty)
