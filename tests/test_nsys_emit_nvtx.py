"""PyProf's job on an nsys profile: kernels tied to the innermost emit_nvtx operator range
around their launch call, the op's shapes parsed from the marker, FLOPs from the op registry.

The export is built with the real schema-2.9.1 export's tables (bench.nsys_export), and the
marker texts are in the form PyTorch writes (torch/csrc/profiler/util.cpp, getNvtxStr)."""

from __future__ import annotations

import json

import pytest

from bench.nsys_export import ExportBuilder
from perfsuite.analyzers.timeline import analyze_trace, read_profile
from perfsuite.cli import main
from perfsuite.traces.nvtx_ops import OpMarker, parse_marker
from tests.conftest import shared_path

LINEAR = "aten::linear, seq = 3, op_id = 7, sizes = [[64, 128], [256, 128], [256]]"
T = "aten::t, op_id = 8, sizes = [[256, 128]]"
ADDMM = "aten::addmm, seq = 3, op_id = 9, sizes = [[256], [64, 128], [128, 256], [], []]"
RELU = "aten::relu, seq = 4, op_id = 10, sizes = [[64, 256]], input_op_ids = [(9,0)]"
MS = 1_000_000  # ns


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """forward (a user range) > linear > {t, addmm > launch 1}; relu > launch 2; ns."""
    path = tmp_path_factory.mktemp("nsys") / "emit_nvtx.sqlite"
    b = ExportBuilder(path, shared_path("nsys", "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"))
    launch = b.string("cudaLaunchKernel_v7000")
    gemm, relu = b.string("ampere_sgemm_64x64_nn"), b.string("vectorized_elementwise_kernel")
    b.ranges([(MS // 2, 13 * MS, "forward"), (1 * MS, 9 * MS, LINEAR),
              (MS + MS // 10, MS + MS // 5, T), (2 * MS, 8 * MS, ADDMM),
              (10 * MS, 12 * MS, RELU)])  # fmt: skip
    b.runtime([(3 * MS, 3 * MS + 10_000, 1, launch), (10_500_000, 10_510_000, 2, launch)])
    b.kernels([(3_020_000, 3_120_000, 7, 1, gemm), (10_520_000, 10_540_000, 7, 2, relu)])
    b.close()
    return path


@pytest.fixture(scope="module")
def profile(export):
    return analyze_trace(read_profile(export), top=None)


def test_marker_parsing():
    assert parse_marker(ADDMM) == OpMarker("aten::addmm", 3, 9, ((256,), (64, 128), (128, 256),
                                                                  (), ()))  # fmt: skip
    assert parse_marker(RELU) == OpMarker("aten::relu", 4, 10, ((64, 256),))
    assert parse_marker("aten::empty, op_id = 2") == OpMarker("aten::empty", -1, 2, None)
    assert parse_marker("forward") is None  # a user's range
    assert parse_marker("MPI_Send") is None
    assert parse_marker("aten::mm, sizes = [[2, x]]") is None  # not PyTorch's form


def test_kernels_go_to_the_innermost_operator(profile):
    ops = {o.name: o for o in profile.ops}
    assert ops["aten::addmm"].kernels == 1 and ops["aten::addmm"].device_time_s == pytest.approx(
        100e-6
    )
    assert ops["aten::linear"].kernels == 0 and ops["aten::t"].kernels == 0
    assert ops["aten::relu"].kernels == 1 and ops["aten::relu"].device_time_s == pytest.approx(
        20e-6
    )
    # the user's range is an annotation, projected onto both kernels
    (fwd,) = [r for r in profile.nvtx_projection if r.name == "forward"]
    assert fwd.gpu_ops == 2 and fwd.projected_s == pytest.approx((10_540_000 - 3_020_000) / 1e9)


def test_flops_equal_perfsuite_flops_for_the_same_ops(profile):
    torch = pytest.importorskip("torch")
    from perfsuite.flops.torch_counter import count_model

    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU())
    counted = {r.op: r for r in count_model(model, [(64, 128)]).per_op}
    points = {p.op: p for p in profile.roofline}
    assert set(points) == {"aten::addmm", "aten::relu"}
    for op in points:
        assert points[op].flops == counted[op].flops > 0
        assert points[op].bytes == counted[op].bytes  # float32 in both
    assert points["aten::addmm"].flops == 2 * 64 * 128 * 256 + 64 * 256
    assert points["aten::addmm"].device_time_s == pytest.approx(100e-6)
    assert points["aten::addmm"].flops_per_s == pytest.approx(points["aten::addmm"].flops / 1e-4)
    assert any("assume float (4-byte)" in n for n in profile.notes)


def test_roofline_of_the_profile(export, capsys):
    """`perfsuite roofline report.sqlite`: roofs from TARGET_INFO_GPU (the saxpy export's A100:
    108 SMs, 1.41 GHz, 1.5552e12 B/s), labeled spec; addmm placed under them."""
    assert main(["roofline", str(export), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)["profile_roofline"]
    roofs = {r["kind"]: r for r in res["roofs"]}
    assert roofs["fp32"]["value"] == 108 * 1.41e9 * 64 * 2
    assert roofs["memory"]["value"] == 1.5552e12
    assert {r["provenance"] for r in res["roofs"]} == {"spec"}
    rows = {r["op"]: r for r in res["rows"]}
    addmm = rows["aten::addmm"]
    flops = 2 * 64 * 128 * 256 + 64 * 256
    assert addmm["flops"] == flops and addmm["device_time_s"] == pytest.approx(100e-6)
    pl = addmm["placement"]
    assert pl["achieved_flops"] == pytest.approx(flops / 100e-6)
    attainable = min(roofs["fp32"]["value"], flops / addmm["bytes"] * 1.5552e12)
    assert pl["attainable"] == pytest.approx(attainable)
    assert addmm["lost_s"] == pytest.approx(100e-6 * (1 - flops / 100e-6 / attainable))
    assert main(["roofline", str(export)]) == 0
    text = capsys.readouterr().out
    assert "19.5 TFLOP/s  spec" in text and "aten::addmm" in text
