"""Nsight Systems SQLite exports read by the timeline: the shared real exports checked against
SQL sums over the same files and against nsys's own CSV reports of the same run."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

import perfsuite
from bench.nsys_export import ExportBuilder
from perfsuite.analyzers.timeline import analyze_trace, read_profile
from perfsuite.traces.nsys_schema import runtime_name
from tests.api_compare import assert_rows, cli_json
from tests.conftest import shared_path

SAXPY = "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
CLOVER = "cloverleaf-nsys__perlmutter-cloverleaf-cuda.sqlite"


def _sql(path: Path, query: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module", params=[SAXPY, CLOVER])
def export(request):
    path = shared_path("nsys", request.param)
    data = read_profile(path)
    return path, data, analyze_trace(data, top=None)


def test_kernel_totals_equal_sql_sums(export):
    path, _, a = export
    want = _sql(
        path,
        "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value",
    )
    got = {k.name: k for k in a.top_kernels if k.category != "memcpy"}
    assert len(want) == len(got) and want
    for name, count, total_ns in want:
        assert got[name].count == count
        assert got[name].total_s == pytest.approx(total_ns / 1e9, rel=1e-12)


def test_copy_kinds_and_bytes_equal_the_file(export):
    path, _, a = export
    want = _sql(
        path,
        "SELECT copyKind, COUNT(*), SUM(bytes), SUM(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
        "GROUP BY copyKind",
    )
    kinds = {1: "HtoD", 2: "DtoH"}  # the kinds these two files hold (ENUM_CUDA_MEMCPY_OPER)
    got = {c.kind: c for c in a.copies}
    assert sorted(got) == sorted(kinds[k] for k, *_ in want)
    for kind, count, nbytes, ns in want:
        c = got[kinds[kind]]
        assert (c.count, c.bytes) == (count, nbytes)
        assert c.total_s == pytest.approx(ns / 1e9, rel=1e-12)


def test_device_and_version_facts(export):
    path, data, a = export
    version = _sql(
        path,
        "SELECT value FROM "
        + ("EXPORT_META_DATA" if path.name == SAXPY else "META_DATA_EXPORT")
        + " WHERE name = 'EXPORT_PRODUCT_VERSION'",
    )[0][0]
    assert data.nsys_version == version
    assert [d.device for d in a.devices] == [0]
    assert a.devices[0].name.startswith("NVIDIA A100-SXM4")
    # busy time is the union of the device's events, inside its span
    d = a.devices[0]
    assert 0 < d.busy_s <= d.span_s
    assert d.busy_s + d.idle_s == pytest.approx(d.span_s)
    # roofs of the device that ran (cloverleaf's file lists four A100s; one ran), from
    # TARGET_INFO_GPU: 108 SMs x 1.41 GHz x 64 FP32 lanes x 2, and its memoryBandwidth
    ((sms, clock, bandwidth),) = _sql(
        path, "SELECT smCount, clockRate, memoryBandwidth FROM TARGET_INFO_GPU WHERE id = 0"
    )
    roofs = {(r.device, r.kind): r for r in a.roofs}
    assert sorted(roofs) == [(0, "fp32"), (0, "memory")]
    assert roofs[0, "fp32"].value == sms * clock * 64 * 2 == 108 * 1.41e9 * 128
    assert roofs[0, "memory"].value == bandwidth
    assert {r.provenance for r in a.roofs} == {"spec"}


def _csv_intervals(path: Path, key: str) -> Counter:
    """(start ns, end ns, key column) of each Enter row with its matching Leave."""
    out: Counter = Counter()
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["Event Type"] == "Enter":
                end = int(float(row["_matching_timestamp"]))
                out[(int(float(row["Timestamp (ns)"])), end, row[key])] += 1
    return out


def test_cloverleaf_gpu_trace_csv_event_for_event():
    data = read_profile(shared_path("nsys", CLOVER))
    csv_path = shared_path("nsys", "cloverleaf-nsys__cloverleaf_gpu_trace.csv")
    want = _csv_intervals(csv_path, "streamId")
    d = data.device
    got = Counter(
        (round(ts * 1000), round((ts + dur) * 1000), str(stream))
        for ts, dur, stream in zip(d.ts, d.dur, d.stream, strict=True)
    )
    assert sum(want.values()) == 1312 + 279
    assert got == want


def test_cloverleaf_api_trace_csv_event_for_event():
    data = read_profile(shared_path("nsys", CLOVER))
    csv_path = shared_path("nsys", "cloverleaf-nsys__cloverleaf-cuda_api_trace.csv")
    # the CSV keeps nsys's API version suffix (cudaMalloc_v3020), which perfsuite drops
    want = Counter(
        {(s, e, runtime_name(n)): c for (s, e, n), c in _csv_intervals(csv_path, "Name").items()}
    )
    assert any(n.endswith("_v3020") for _, _, n in _csv_intervals(csv_path, "Name"))
    rt, names = data.runtime, data.names.values
    got = Counter(
        (round(ts * 1000), round((ts + dur) * 1000), names[n])
        for ts, dur, n in zip(rt.ts, rt.dur, rt.name, strict=True)
    )
    assert sum(want.values()) == 3048
    assert got == want


def test_saxpy_nvtx_projection_by_hand():
    """The five `saxpy` NVTX ranges each enclose one cudaLaunchKernel; from the file's rows:
    range 924881857-924940911 ns, its kernel 924922186-942626994 ns, and so on."""
    a = analyze_trace(read_profile(shared_path("nsys", SAXPY)), top=None)
    kernels = [  # (start, end) of the kernels, ns
        (924922186, 942626994),
        (1196058242, 1213791658),
        (1449177557, 1466878365),
        (1696275954, 1713996442),
        (1947782617, 1965496577),
    ]
    ranges = [  # (start, end) of the saxpy ranges, ns
        (924881857, 924940911),
        (1196019772, 1196067224),
        (1449139403, 1449181324),
        (1696238391, 1696280102),
        (1947745106, 1947786216),
    ]
    proj = {r.name: r for r in a.nvtx_projection}
    saxpy = proj["saxpy"]
    assert saxpy.ranges == 5 and saxpy.gpu_ops == 5 and saxpy.without_gpu_work == 0
    # one kernel per range: projected = the kernel's own span; host time = the ranges'
    assert saxpy.projected_s == pytest.approx(sum(e - s for s, e in kernels) / 1e9, rel=1e-9)
    assert saxpy.gpu_time_s == pytest.approx(saxpy.projected_s, rel=1e-12)
    assert saxpy.host_total_s == pytest.approx(sum(e - s for s, e in ranges) / 1e9, rel=1e-9)
    # the MPI ranges (nsys's MPI domain) launched nothing: they project to no GPU time
    for name in ("MPI_Send", "MPI_Recv", "MPI_Init", "MPI_Finalize"):
        assert proj[name].gpu_ops == 0 and proj[name].projected_s == 0.0
    assert proj["MPI_Send"].ranges == 10 and proj["MPI_Send"].without_gpu_work == 10


FRAMES = (
    "temporal",
    "idle",
    "categories",
    "streams",
    "kernels",
    "ops",
    "annotations",
    "threads",
    "roofline",
    "launches",
    "launch_streams",
    "launch_kernels",
    "queues",
    "copies",
    "nvtx_projection",
)


def test_api_frames_of_an_export_are_a_kineto_traces():
    """perfsuite.trace on an export: the same tables, column for column, as on a Kineto trace,
    and the values `perfsuite timeline --json` gives for the export."""
    t = perfsuite.trace(shared_path("nsys", SAXPY))
    k = perfsuite.trace(shared_path("traces", "trace_filter__sampled_rank-0.json.gz"))
    for name in FRAMES:
        assert list(getattr(t, name).columns) == list(getattr(k, name).columns), name
    ref = cli_json("timeline", str(shared_path("nsys", SAXPY)), "--top", "0")["traces"][0]
    cols = {c: c for c in ("name", "category", "count", "total_s", "mean_s", "min_s", "max_s")}
    assert_rows(t.kernels, ref["top_kernels"], cols, {})
    assert_rows(t.copies, ref["copies"], {c: c for c in ("kind", "count", "total_s", "bytes")}, {})
    cols = {
        c: c
        for c in (
            "name",
            "ranges",
            "host_total_s",
            "projected_s",
            "gpu_ops",
            "gpu_time_s",
            "without_gpu_work",
            "communication",
        )
    }
    assert_rows(t.nvtx_projection, ref["nvtx_projection"], cols, {})
    assert len(t.kernels) == 3 and t.copies["bytes"].sum() == 2621440000 + 1310720000


def test_a_folder_of_rank_exports(tmp_path):
    for rank, name in enumerate((SAXPY, CLOVER)):
        shutil.copyfile(shared_path("nsys", name), tmp_path / f"job_rank-{rank}.sqlite")
    ranks = cli_json("timeline", str(tmp_path))["ranks"]
    assert [(r["rank"], r["trace"]) for r in ranks] == [
        (0, "job_rank-0.sqlite"),
        (1, "job_rank-1.sqlite"),
    ]
    kernel_ns = [
        _sql(shared_path("nsys", n), "SELECT SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][
            0
        ]
        for n in (SAXPY, CLOVER)
    ]
    # one stream of non-overlapping kernels each: the compute union is the kernels' sum
    for r, ns in zip(ranks, kernel_ns, strict=True):
        assert r["busy_compute_s"] == pytest.approx(ns / 1e9, rel=1e-9)


def test_diff_across_an_export_and_a_kineto_trace():
    """Copies are named as Kineto names them, so the same copy kind lines up across formats."""
    a = shared_path("nsys", SAXPY)
    b = shared_path(
        "traces", "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
    )
    rows = {r["name"]: r for r in cli_json("timeline", "--diff", str(a), str(b))["rows"]}
    htod = rows["Memcpy HtoD (Pageable -> Device)"]
    assert htod["status"] == "changed" and (htod["count_a"], htod["count_b"]) == (10, 16)
    assert rows["saxpy(double *, double *, double *, double, int)"]["status"] == "removed"


def test_several_processes_and_gpus_keep_their_own_launches(tmp_path):
    """Two processes, one GPU each, both numbering their launches from 1: each kernel joins
    its own process's launch call (launch delay 1 us and 5 us), never the other's."""
    path = tmp_path / "two.sqlite"
    b = ExportBuilder(path, shared_path("nsys", SAXPY))
    launch, k = b.string("cudaLaunchKernel_v7000"), b.string("kernel_a")
    for pid, device, t, delay in ((100, 0, 10_000, 1_000), (200, 1, 20_000, 5_000)):
        b.runtime([(t, t + 2_000, 1, launch)], tid=pid, pid=pid)
        b.kernels([(t + 2_000 + delay, 50_000, 7, 1, k)], device=device, pid=pid)
    b.close()
    a = analyze_trace(read_profile(path), top=None)
    assert [d.device for d in a.devices] == [0, 1]
    by_device = {g.device: g for g in a.launches.streams}
    assert by_device[0].delay.max_s == pytest.approx(1e-6)
    assert by_device[1].delay.max_s == pytest.approx(5e-6)
    assert a.launches.launches == 2 and a.launches.unmatched_calls == 0
