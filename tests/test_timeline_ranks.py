"""`perfsuite timeline DIR` over per-rank traces: the rank table, stragglers, bounded memory,
and bad folders; checked against HTA's temporal breakdown on the shared two-rank NCCL job."""

from __future__ import annotations

import gc
import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from perfsuite.analyzers.timeline import TraceError, analyze_file
from perfsuite.analyzers.timeline.ranks import RankSummary, extremes, scan_folder, stragglers
from perfsuite.cli import main
from tests.conftest import shared_path
from tests.test_timeline_synthetic import call, kern, op, write_trace

NCCL = ["trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"]
# torch CPU profiler trace with profile_memory=True (provenance: tests/fixtures/timeline/)
MEMORY_FIXTURE = Path(__file__).parent / "fixtures" / "timeline" / "cpu_profile_memory.json.gz"
ANALYSIS_FIELDS = [
    "launches", "launch_delay_mean_s", "launch_delay_p50_s", "launch_delay_p90_s",
    "launch_delay_p99_s", "launch_delay_max_s", "short_kernels", "short_share",
    "runtime_outliers", "delay_outliers", "queue_max_length", "queue_max_device",
    "queue_max_stream", "memory_peak_bytes", "memory_peak_t_s", "memory_peak_device",
]  # fmt: skip


def rank_folder(dest: Path, names: list[str]) -> Path:
    dest.mkdir()
    for n in names:
        shutil.copy(shared_path("traces", n), dest / n)
    return dest


def small_rank(path: Path, rank: int | None, kernel_us: int = 10, comm_us: int = 5) -> Path:
    """One step: an op launching a compute kernel, then an NCCL kernel; µs."""
    events = [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("aten::mm", 1, 10),
        call("cudaLaunchKernel", 2, 2, corr=1),
        kern("gemm", 10, kernel_us, stream=7, corr=1),
        call("cudaLaunchKernel", 5, 2, corr=2),
        kern("ncclDevKernel_AllReduce", 10 + kernel_us, comm_us, stream=9, corr=2),
    ]
    meta = {} if rank is None else {"distributedInfo": {"rank": rank}}
    return write_trace(path, events, meta=meta)


# -- real traces -------------------------------------------------------------------------------


@pytest.mark.shared
def test_rank_folder_matches_each_file_and_finds_the_straggler(tmp_path):
    folder = rank_folder(tmp_path / "job", NCCL)
    scan = scan_folder(folder)
    assert [(r.rank, r.rank_source) for r in scan.ranks] == [
        (0, "distributedInfo.rank"),
        (1, "distributedInfo.rank"),
    ]
    for r, name in zip(scan.ranks, NCCL, strict=True):
        a = analyze_file(folder / name, top=None)
        o = a.overall
        assert (r.span_s, r.busy_s, r.busy_compute_s, r.idle_s) == (
            o.span_s, o.busy_s, o.busy_compute_s, o.idle_s
        )  # fmt: skip
        assert r.host_wait_s == o.idle.host_wait_s and r.events == a.events
        assert (r.steps, r.step_mean_s) == (a.steps.count, a.steps.mean_s)
    r0, r1 = scan.ranks
    # rank 1 has 272 ms of compute kernels against rank 0's 210 ms: 12.8% above the median
    (s,) = scan.stragglers.ranks
    assert s.rank == 1 and s.metric == "busy_compute_s"
    assert s.median_s == pytest.approx((r0.busy_compute_s + r1.busy_compute_s) / 2)
    assert s.excess_share == pytest.approx(0.128, abs=5e-4)
    # rank 0 spends 17.1 ms more in NCCL kernels: the estimate of its wait on rank 1
    assert s.comm_wait_caused_s == pytest.approx(r0.communication_busy_s - r1.communication_busy_s)
    assert s.comm_wait_caused_s == pytest.approx(0.0171, abs=1e-4)
    assert stragglers(scan.ranks, margin=0.2).ranks == []


def _single_file_figures(a) -> dict:
    """The per-rank analysis fields as the single-file analysis of that rank gives them."""
    out = dict.fromkeys(ANALYSIS_FIELDS)
    out["launches"] = 0
    if (s := a.launches) is not None:
        d = s.overall.delay
        out.update(
            launches=s.launches,
            launch_delay_mean_s=d.mean_s,
            launch_delay_p50_s=d.p50_s,
            launch_delay_p90_s=d.p90_s,
            launch_delay_p99_s=d.p99_s,
            launch_delay_max_s=d.max_s,
            short_kernels=s.short,
            short_share=s.short_share,
            runtime_outliers=s.runtime_outliers,
            delay_outliers=s.delay_outliers,
        )
    if a.queues:
        deepest = max(q.max_length for q in a.queues)
        q = next(q for q in a.queues if q.max_length == deepest)
        out.update(
            queue_max_length=q.max_length, queue_max_device=q.device, queue_max_stream=q.stream
        )
    if a.memory:
        (m,) = a.memory  # the fixture: CPU allocations only
        out.update(
            memory_peak_bytes=m.peak_allocated_bytes,
            memory_peak_t_s=m.peak_t_s,
            memory_peak_device=m.device_type,
        )
    return out


@pytest.mark.shared
def test_rank_folder_carries_launches_queues_and_memory_of_each_rank(tmp_path):
    """Per rank, launch statistics, the deepest queue and the memory peak equal the
    single-file analysis of that rank's file exactly; the folder names the rank with the
    highest launch delay and deepest queue."""
    folder = rank_folder(tmp_path / "job", NCCL)
    shutil.copy(MEMORY_FIXTURE, folder / "rank-5.json.gz")
    scan = scan_folder(folder)
    assert [r.rank for r in scan.ranks] == [0, 1, 5]
    for r, name in zip(scan.ranks, [*NCCL, "rank-5.json.gz"], strict=True):
        want = _single_file_figures(analyze_file(folder / name, top=None))
        assert {f: getattr(r, f) for f in ANALYSIS_FIELDS} == want, name
    r0, r1, r5 = scan.ranks
    # the NCCL ranks: launches and queues, no [memory] events; the CPU trace: memory only
    assert (r0.launches, r1.launches, r5.launches) == (1204, 1154, 0)
    assert (r0.queue_max_length, r0.queue_max_device, r0.queue_max_stream) == (80, 0, 7)
    assert (r1.queue_max_length, r1.queue_max_device, r1.queue_max_stream) == (91, 1, 7)
    assert r0.memory_peak_bytes is None and r5.memory_peak_device == "cpu"
    assert r5.memory_peak_bytes > 0 and r5.launch_delay_p50_s is None
    got = {x.metric: (x.rank, x.value, x.median, x.ranks) for x in scan.extremes}
    assert got == {
        "launch_delay_p50_s": (
            1,
            r1.launch_delay_p50_s,
            (r0.launch_delay_p50_s + r1.launch_delay_p50_s) / 2,
            2,
        ),
        "launch_delay_p99_s": (
            1,
            r1.launch_delay_p99_s,
            (r0.launch_delay_p99_s + r1.launch_delay_p99_s) / 2,
            2,
        ),
        "queue_max_length": (1, 91, 85.5, 2),
    }  # one rank with memory events: no memory line
    assert r1.launch_delay_p50_s == pytest.approx(11.886e-3, abs=1e-9)


@pytest.mark.shared
def test_cli_folder_json_fields_and_analyses_text(tmp_path, capsys):
    folder = rank_folder(tmp_path / "job", NCCL)
    assert main(["timeline", str(folder), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    base = ["trace", "path", "rank", "span_s", "busy_compute_s", "compute_share",
            "communication_busy_s", "idle_s", "idle_share", "host_wait_s", "rank_source",
            "events", "window_s", "devices", "busy_s", "busy_non_compute_s",
            "compute_comm_overlap_s", "steps", "step_mean_s"]  # fmt: skip
    for row in doc["ranks"]:
        assert list(row) == base + ANALYSIS_FIELDS
    assert [list(x) for x in doc["extremes"]] == [
        ["metric", "label", "unit", "rank", "value", "median", "ranks"]
    ] * 3
    assert doc["ranks"][1]["queue_max_length"] == 91 and doc["ranks"][1]["delay_outliers"] == 880
    assert main(["timeline", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "launches, queues and memory per rank" in out
    lines = out.splitlines()
    queue = next(line for line in lines if line.startswith("  deepest stream queue:"))
    assert "rank 1, 91" in queue and "device 1 stream 7" in queue and "85.5" in queue
    delay = next(line for line in lines if line.startswith("  highest median launch delay:"))
    assert "rank 1, 11.9 ms" in delay and "11.4 ms" in delay


def test_extremes_need_two_ranks_and_take_the_lowest_rank_on_a_tie():
    def row(rank, queue=None, memory=None):
        return RankSummary(f"r{rank}", f"r{rank}", rank, *[None] * 7, queue_max_length=queue,
                           memory_peak_bytes=memory)  # fmt: skip

    rows = [row(0, 5, 100), row(1, 9), row(2, 9), row(3, 1)]
    (q,) = extremes(rows)  # one rank with a memory peak: not compared
    assert (q.metric, q.rank, q.value, q.median, q.ranks) == ("queue_max_length", 1, 9, 7.0, 4)
    rows[3].memory_peak_bytes = 300
    assert [(x.metric, x.rank, x.value, x.median, x.unit) for x in extremes(rows)][1] == (
        "memory_peak_bytes",
        3,
        300,
        200.0,
        "B",
    )


def test_memory_peak_prefers_the_accelerator():
    from perfsuite.analyzers.timeline.model import MemoryStat
    from perfsuite.analyzers.timeline.ranks import _memory_peak

    def stat(kind, dev, peak):
        return MemoryStat(kind, dev, 2, 1, 1, peak, peak, 0, 0, peak, 1.0, None, False, 0)

    cpu, gpu0, gpu1 = stat("cpu", -1, 900), stat("cuda", 0, 300), stat("cuda", 1, 500)
    assert _memory_peak([cpu, gpu0, gpu1]) is gpu1
    assert _memory_peak([cpu]) is cpu and _memory_peak([]) is None


@pytest.mark.shared
def test_rank_folder_agrees_with_hta_temporal_breakdown(tmp_path):
    """Per rank, span, idle, compute and non-compute time equal HTA's `get_temporal_breakdown`
    on the same folder (copies without the definition differences of test_timeline_hta)."""
    from tests.test_timeline_hta import _hta, comparable_copy

    folder = tmp_path / "job"
    folder.mkdir()
    for n in NCCL:
        comparable_copy(shared_path("traces", n), folder / n)
    temporal, _, _ = _hta(folder)
    scan = scan_folder(folder)
    assert sorted(temporal.index) == [r.rank for r in scan.ranks] == [0, 1]
    for r in scan.ranks:
        row = temporal.loc[r.rank]
        us = pytest.approx  # HTA gives integer µs; these traces have no sub-µs times
        assert r.span_s == us(row["kernel_time(us)"] * 1e-6, rel=1e-9)
        assert r.idle_s == us(row["idle_time(us)"] * 1e-6, rel=1e-9)
        assert r.busy_compute_s == us(row["compute_time(us)"] * 1e-6, rel=1e-9)
        assert r.busy_non_compute_s == us(row["non_compute_time(us)"] * 1e-6, rel=1e-9)


@pytest.mark.shared
def test_other_shared_traces_as_ranks(tmp_path):
    """CUDA, ROCm, CPU-only and CUPTI-counter traces side by side: ranks from metadata or the
    file name, device-less ranks without device figures and out of the straggler test."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    src = {
        "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz": "a.json.gz",
        "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": "cpu.json.gz",
        "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz": "mi250_rank-2.json.gz",
        "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz": "rank3.json.gz",
    }
    for s, d in src.items():
        shutil.copy(shared_path("traces", s), folder / d)
    scan = scan_folder(folder)
    got = {r.rank: (r.trace, r.rank_source, r.devices) for r in scan.ranks}
    assert got == {
        0: ("a.json.gz", "distributedInfo.rank", 1),
        2: ("mi250_rank-2.json.gz", "file name", 1),
        3: ("rank3.json.gz", "file name", 0),
        34: ("cpu.json.gz", "distributedInfo.rank", 0),
    }
    by = {r.rank: r for r in scan.ranks}
    assert by[34].span_s is None and by[3].busy_compute_s is None
    mi = analyze_file(folder / "mi250_rank-2.json.gz", top=None).overall
    assert by[2].busy_compute_s == mi.busy_compute_s  # sub-µs ROCm times kept
    assert set(scan.stragglers.medians) == {"busy_compute_s", "step_mean_s"}


# -- bounded memory ----------------------------------------------------------------------------


N_SYNTHETIC = 500  # launches per rank: 1,501 events
N_RANKS = 8


def synthetic_rank(path: Path, rank: int, n: int) -> Path:
    events = [op("ProfilerStep#1", 0, 4 * n + 10, cat="user_annotation")]
    for i in range(n):
        events += [
            op(f"aten::op{i % 50}", 4 * i, 3),
            call("cudaLaunchKernel", 4 * i + 1, 1, corr=i + 1),
            kern(f"kernel{i % 80}", 4 * i + 2, 2, stream=7, corr=i + 1),
        ]
    return write_trace(path, events, gz=True, meta={"distributedInfo": {"rank": rank}})


def _peak(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_folder_peak_memory_is_about_one_trace(tmp_path):
    """tracemalloc peak (Python allocations, numpy arrays included) of the folder pass over
    N_RANKS ranks stays within 1.15x that of a folder of one rank (1.04x measured). Keeping each
    rank's columns (its TraceData, about 5% of the one-rank peak here) instead of dropping them
    would add about 0.05x per rank: 1.35x for 8."""
    one = tmp_path / "one"
    many = tmp_path / "many"
    one.mkdir()
    many.mkdir()
    synthetic_rank(one / "rank-0.json.gz", 0, N_SYNTHETIC)
    for r in range(N_RANKS):
        synthetic_rank(many / f"rank-{r}.json.gz", r, N_SYNTHETIC)
    single = _peak(lambda: scan_folder(one))
    folder = _peak(lambda: scan_folder(many))
    assert folder < 1.15 * single, (folder, single)


# -- CLI and bad input -------------------------------------------------------------------------


def test_cli_folder_text_json_and_progress(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    for r, k in enumerate([10, 10, 10, 30]):
        small_rank(folder / f"trace-{r}.json", r, kernel_us=k)
    assert main(["timeline", str(folder)]) == 0
    cap = capsys.readouterr()
    assert "[4/4] trace-3.json" in cap.err  # progress on stderr for 4+ files
    lines = cap.out.splitlines()
    assert lines[0] == f"4 ranks in {folder}"
    (rank3,) = [line for line in lines if line.startswith("  rank 3: busy_compute_s")]
    assert "30 µs" in rank3 and "median 10 µs" in rank3
    assert main(["timeline", str(folder), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]
    assert doc["ranks"][3]["busy_compute_s"] == pytest.approx(30e-6)
    (s,) = doc["stragglers"]["ranks"]
    assert (s["rank"], s["metric"]) == (3, "busy_compute_s")
    assert s["excess_share"] == pytest.approx(2.0)
    assert s["comm_wait_caused_s"] == 0.0  # every rank has the same 5 µs collective
    assert doc["skipped"] == []


def test_visitors_see_each_rank_in_the_same_pass(tmp_path):
    """Per-rank analyses join the single pass as visitors: each sees the rank's columns and
    analysis before they are dropped; a refused file is not visited."""
    folder = tmp_path / "job"
    folder.mkdir()
    small_rank(folder / "a.json", 4, kernel_us=10)
    small_rank(folder / "b.json", 2, kernel_us=30)
    small_rank(folder / "c.json", 2)  # rank 2 again: skipped with keep_going
    seen = []

    def visit(rank, data, a):
        seen.append((rank, len(data.device.ts), a.overall.busy_compute_s))

    scan = scan_folder(folder, keep_going=True, visitors=[visit])
    assert seen == [(4, 2, pytest.approx(10e-6)), (2, 2, pytest.approx(30e-6))]
    assert [r.rank for r in scan.ranks] == [2, 4] and len(scan.skipped) == 1


def test_rank_from_file_name_when_metadata_lacks_it(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    small_rank(folder / "worker_rank_7.json", None)
    small_rank(folder / "b.json", 3)
    assert main(["timeline", str(folder), "--json"]) == 0
    ranks = json.loads(capsys.readouterr().out)["ranks"]
    assert [(r["rank"], r["rank_source"]) for r in ranks] == [
        (3, "distributedInfo.rank"),
        (7, "file name"),
    ]


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err.strip()
    assert "\n" not in err
    return err


def test_empty_folder(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no traces here")
    err = _error(["timeline", str(tmp_path / "empty")], capsys)
    # not a rank folder (no trace file) and no run.json: the run-folder error
    assert err.startswith(f"perfsuite: error: {tmp_path / 'empty'}: no run.json")
    with pytest.raises(
        TraceError, match=r"empty: no trace files \(\*\.json, \*\.json\.gz, \*\.sqlite\)"
    ):
        scan_folder(tmp_path / "empty")


def test_non_trace_file_among_ranks(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    small_rank(folder / "rank-0.json", 0)
    (folder / "config.json").write_text('{"lr": 0.1}')
    err = _error(["timeline", str(folder)], capsys)
    assert err.startswith(f"perfsuite: error: {folder / 'config.json'}: field traceEvents:")
    assert main(["timeline", str(folder), "--keep-going", "--json"]) == 1
    cap = capsys.readouterr()
    assert cap.err.strip().startswith(f"skipped {folder / 'config.json'}: field traceEvents:")
    doc = json.loads(cap.out)
    assert [r["rank"] for r in doc["ranks"]] == [0]
    assert doc["skipped"][0]["file"] == str(folder / "config.json")


def test_duplicate_ranks(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    small_rank(folder / "a.json", 1)
    small_rank(folder / "b.json", 1)
    err = _error(["timeline", str(folder)], capsys)
    assert err.startswith(f"perfsuite: error: {folder / 'b.json'}: ")
    assert "field distributedInfo.rank:" in err
    assert "rank 1" in err and err.endswith("(also a.json)")


def test_no_rank_anywhere(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    small_rank(folder / "a.json", None)
    err = _error(["timeline", str(folder)], capsys)
    assert err.startswith(f"perfsuite: error: {folder / 'a.json'}: ")
    assert "field distributedInfo.rank:" in err
    assert "rank-N" in err


def test_folder_is_given_alone(tmp_path, capsys):
    folder = tmp_path / "job"
    folder.mkdir()
    small_rank(folder / "a.json", 0)
    err = _error(["timeline", str(folder), str(folder / "a.json")], capsys)
    assert "give it as the only TRACE" in err


def _row(rank: int, compute: float | None, step: float | None, comm: float | None = None):
    from perfsuite.analyzers.timeline.ranks import RankSummary

    return RankSummary(f"r{rank}", f"r{rank}", rank, 1.0, compute, None, comm, None, None, None,
                       step_mean_s=step)  # fmt: skip


def test_straggler_rule_on_step_time_and_at_the_margin():
    rows = [_row(0, 1.0, 2.0), _row(1, 1.0, 2.0), _row(2, 1.1, 2.0), _row(3, 1.0, 2.5)]
    st = stragglers(rows, margin=0.10)
    # rank 2 is exactly 10% above the median compute time: not more than the margin
    assert [(s.rank, s.metric) for s in st.ranks] == [(3, "step_mean_s")]
    assert st.ranks[0].excess_s == pytest.approx(0.5) and st.medians["step_mean_s"] == 2.0
    assert [s.rank for s in stragglers(rows, margin=0.09).ranks] == [2, 3]
    # ranks without device kernels stay out of the compute median; comm wait needs comm times
    rows = [_row(0, 1.0, None, 0.5), _row(1, 2.0, None, 0.2), _row(2, None, None)]
    (s,) = stragglers(rows).ranks
    assert (s.rank, s.median_s, s.comm_wait_caused_s) == (1, 1.5, pytest.approx(0.3))
    assert stragglers(rows[:1]).notes == ["one rank: no straggler can be told"]
