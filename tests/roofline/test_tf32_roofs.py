"""The real H100 cifar10 run: TF32 convolutions judged against TF32 roofs, never above 100%."""

from __future__ import annotations

import json
import re

import pytest

from perfsuite.analyzers.roofline.roofline import roofline
from perfsuite.devices.roofs import PeaksFileError, peaks_file_roofs
from perfsuite.record import load_record
from tests.conftest import extract_h100_run, shared_path


def _fractions(res):
    fr = [res.run.frac_of_roof] + [o.placement.frac_of_roof for o in res.ops]
    return [f for f in fr if f is not None]


@pytest.mark.parametrize("with_peaks", [False, True])
def test_h100_no_fraction_above_roof_and_tf32_named(h100, with_peaks):
    peaks = peaks_file_roofs(shared_path("gpu", "h100-peaks.json")) if with_peaks else None
    res = roofline(h100, peaks)
    assert all(0 < f <= 1.0 for f in _fractions(res))
    assert res.run.frac_of_roof is not None and res.run.flag is None
    ops = {o.op: o.placement for o in res.ops}
    for conv in ("aten::convolution", "aten::convolution_backward"):
        assert ops[conv].math == "tf32" and ops[conv].math_evidence == "kernel names"
        assert ops[conv].bound == "compute" and ops[conv].frac_of_roof < 1.0
    assert "tf32" in res.run.roofs_used
    tf32 = res.run.roofs_used["tf32"]
    if with_peaks:  # measured TF32 matmul peak of the peaks file
        assert tf32.provenance == "measured" and tf32.value == pytest.approx(373849727098425.56)
        # conv backward: 774.9 GFLOP in 5.24 ms per step against 373.8 TFLOP/s
        assert ops["aten::convolution_backward"].frac_of_roof == pytest.approx(
            774906052608.0 / (0.015718645000000014 / 3) / 373849727098425.56
        )
    else:  # the record measured only fp32: TF32 comes from the spec table
        assert tf32.provenance == "spec" and tf32.value == 494.5e12
    # points above their roof are flags, not numbers
    for o in res.ops:
        if o.placement.over_roof is not None:
            assert o.placement.frac_of_roof is None and o.placement.flag and o.lost_time_s is None
    assert any(o.placement.flag for o in res.ops)  # aten::add beats DRAM: cache-resident bytes


def test_h100_old_record_reads_assumed_defaults(h100, capsys):
    # written without `math`: the loader's migration gives it PyTorch 2.11's defaults
    assert h100["_migrated_from"] == 1 and h100["math"]["provenance"] == "assumed"
    res = roofline(h100)
    assert res.math_source.startswith("assumed PyTorch 2.11 defaults")
    from perfsuite.__main__ import main

    assert main(["roofline", h100["_path"], "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "assumed PyTorch 2.11 defaults" in out
    assert "tf32 peak" in out and "other / not attributed" in out


def test_h100_json_names_roofs(h100, capsys):
    from perfsuite.__main__ import main

    assert (
        main(
            [
                "roofline",
                h100["_path"],
                "--json",
                "--peaks",
                str(shared_path("gpu", "h100-peaks.json")),
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    run = data["roofline"]["run"]
    assert set(run["roofs_used"]) == {"fp32", "tf32", "memory"}
    assert run["frac_of_roof"] <= 1.0
    rows = data["roofline"]["time_rows"]["rows"]
    assert rows[-1]["name"] == "other / not attributed"
    assert sum(r["time_s"] for r in rows) == pytest.approx(run["step_time"]["value"], rel=1e-12)


def test_bad_peaks_file_is_one_line_error(tmp_path):
    bad = tmp_path / "peaks.json"
    bad.write_text(json.dumps({"rows": [{"quantity": "peak tf32", "measured": "fast"}]}))
    with pytest.raises(PeaksFileError, match=r"peaks.json: field rows\[0\].measured"):
        peaks_file_roofs(bad)


def test_h100_roofline_shows_counted_vs_measured_side_by_side(tmp_path, capsys):
    """The H100 run with the measured ncu window attached: the roofline prints counted and
    measured FLOP per op class next to each other (same network, batch 512, TF32)."""
    from perfsuite.__main__ import main

    run_dir = extract_h100_run(tmp_path)
    ncu = shared_path("gpu", "h100-resnet9-2steps-tf32.ncu.csv")
    assert main(["counters", str(ncu), "--into", str(run_dir), "--steps", "2"]) == 0
    capsys.readouterr()
    assert main(["roofline", str(run_dir), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = {r["key"]: r for r in got["counted_vs_measured"]}
    # 5.46 GB of copies measured against 4 B modeled: said, not a ratio of 1.4e9
    (note,) = got["counted_vs_measured_notes"]
    assert note.startswith("memory: ")
    assert rows["memory"]["bytes_ratio"] is None
    conv = rows["convolution"]
    assert conv["measured_tensor_flops"] == 1_168_231_104_512  # per step, from the counters
    assert conv["flops_ratio"] == pytest.approx(conv["measured_flops"] / conv["counted_flops"])
    assert 0.99 < conv["flops_ratio"] < 1.02
    assert main(["roofline", str(run_dir)]) == 0
    text = capsys.readouterr().out
    assert "Counted vs measured, per step" in text and "FLOP measured" in text
    assert f"\n  - {note}\n" in text  # the JSON's note, as a note of the table
    (calibration,) = [line for line in text.splitlines() if line.startswith("calibration: ")]
    assert "fp16, bf16, tf32 calibrated" in calibration
    # the HTML report shows the same table and line
    page = tmp_path / "r.html"
    assert main(["report", str(run_dir), "-o", str(page)]) == 0
    html_text = page.read_text()
    assert "Counted vs measured, per step" in html_text
    conv_row = re.search(r"<tr><td>convolution</td>(.*?)</tr>", html_text)
    assert conv_row and "1.17 TFLOP" in conv_row.group(1)
    assert calibration in html_text  # the same line as the command's


def test_counters_without_their_step_count_are_not_compared_per_step(tmp_path, capsys):
    """The 2-step window divided by 1 step would read a 2.0 FLOP ratio: attaching needs
    --steps, and a section that lacks window_steps yields a note instead of a table."""
    from perfsuite.__main__ import main
    from perfsuite.analyzers.roofline.measured import NO_STEPS, counted_vs_measured
    from perfsuite.counters import load_counters
    from perfsuite.record.io import update_record

    run_dir = extract_h100_run(tmp_path)
    ncu = shared_path("gpu", "h100-resnet9-2steps-tf32.ncu.csv")
    assert main(["counters", str(ncu), "--into", str(run_dir)]) == 2
    assert "--into needs --steps N" in capsys.readouterr().err
    section = load_counters(ncu)
    assert section["window_steps"] is None

    def attach(rec):
        rec["counters"] = section

    update_record(run_dir, attach)
    view = counted_vs_measured(load_record(run_dir))
    assert view.by_class == [] and view.by_op == [] and view.note == NO_STEPS
    assert main(["roofline", str(run_dir), "--explain"]) == 0
    text = capsys.readouterr().out
    assert "Counted vs measured, per step" not in text and f"  - {NO_STEPS}\n" in text


def test_gemm_kernels_are_judged_in_the_precision_their_counters_measured(tmp_path):
    """cuBLAS's nvjet GEMMs (fp16 and bf16, 653 and 662 TFLOP/s) read 179-181% of a TF32
    blend; judged in the precision their Tensor-Core counters measured, none is above 100%."""
    from perfsuite.__main__ import main
    from perfsuite.record.io import update_record

    run_dir = extract_h100_run(tmp_path)
    gemm = shared_path("gpu", "h100-gemm4096.ncu.csv")
    assert main(["counters", str(gemm), "--into", str(run_dir), "--steps", "1"]) == 0
    h = roofline(load_record(run_dir)).hierarchical
    maths = {p.name[:14]: p.placement for p in h.points if p.level == "DRAM"}
    assert maths["nvjet_sm90_hsh"].math == "fp16" and maths["nvjet_sm90_tst"].math == "bf16"
    assert maths["sm90_xmma_gemm"].math == "tf32"
    assert {maths[k].math_evidence for k in ("nvjet_sm90_hsh", "nvjet_sm90_tst")} == {"counters"}
    for p in h.points:
        assert p.placement.flag is None
        assert all(
            f is None or f <= 1.0 for f in (p.placement.frac_of_roof, p.placement.frac_of_peak)
        )

    def untimed(rec):  # one GEMM without its time: its group has no rate, not a higher one
        rec["counters"]["kernels"][0]["time_s"] = None

    update_record(run_dir, untimed)
    first = load_record(run_dir)["counters"]["kernels"][0]["name"]
    h = roofline(load_record(run_dir)).hierarchical
    assert all(p.placement.achieved_flops is None for p in h.points if p.name == first)


def test_utilization_never_shows_a_rate_above_a_ceiling(h100):
    """With the measured peaks, modeled bytes put three elementwise ops above the copy roof
    (add at 1.92x): their fractions are None; the roofline flags them, and its note (naming
    the likely cause) is the only one: utilization adds none of its own."""
    from perfsuite.analyzers.roofline.utilization import utilization

    u = utilization(h100, peaks_file_roofs(shared_path("gpu", "h100-peaks.json")))
    fracs = ("of_measured_peak", "of_spec_peak", "of_measured_bandwidth", "of_spec_bandwidth")
    for rates in [u.run, *u.ops]:
        assert all(getattr(rates, f) is None or getattr(rates, f) <= 1.0 for f in fracs)
    add = next(r for r in u.ops if r.scope == "aten::add")
    assert add.of_measured_bandwidth is None and add.of_spec_bandwidth is None
    assert add.of_measured_peak is not None  # the compute fraction is far below 1 and kept
    assert not any(n.startswith("aten::add:") for n in u.notes)


def test_an_op_whose_profiled_calls_differ_from_the_counted_is_not_judged(h100):
    """aten::add_: 8 counted calls per step (scalar num_batches_tracked increments) against 10
    profiled (the two large ones made inside convolution backward): its 92 us were judged
    against 8 FLOP and ranked among the ops to look at first."""
    res = roofline(h100)
    add = next(o for o in res.ops if o.op == "aten::add_")
    assert add.status == "calls_differ" and add.calls == 10
    assert add.placement.frac_of_roof is None and add.lost_time_s is None
    assert add.time_s and add.time_share  # its time is still in the step's rows
    assert "aten::add_" not in [o.op for o in res.ranking]
    assert any("aten::add_ (10 vs 8)" in n for n in res.notes)
    conv = next(o for o in res.ops if o.op == "aten::convolution")
    assert conv.status == "joined"


def test_roofs_of_another_machine_are_named_first(h100, tmp_path, capsys):
    """The H100 peaks file against a CPU run read 0.0% of the roof without a word about
    the device; the same file against the H100 run says nothing."""
    import copy

    from perfsuite.__main__ import main

    peaks = peaks_file_roofs(shared_path("gpu", "h100-peaks.json"))
    assert not [n for n in roofline(h100, peaks).notes if n.startswith("WRONG MACHINE")]
    cpu = copy.deepcopy(h100)
    cpu["ceilings"]["device"] = "AMD EPYC"
    (note,) = [n for n in roofline(cpu, peaks).notes if n.startswith("WRONG MACHINE")]
    assert note.index("NVIDIA H100 80GB HBM3") < note.index("AMD EPYC")  # measured, then ran
    # the CLI says it right under the title, before any number (the answer included)
    other = json.loads(shared_path("gpu", "h100-peaks.json").read_text())
    other["device_name"] = "NVIDIA A100-SXM4-40GB"
    (tmp_path / "a100.json").write_text(json.dumps(other))
    assert main(["roofline", h100["_dir"], "--peaks", str(tmp_path / "a100.json")]) == 0
    second = capsys.readouterr().out.splitlines()[1]
    assert second.startswith("WRONG MACHINE: ") and "NVIDIA A100-SXM4-40GB" in second


def test_only_device_names_are_compared_with_a_peaks_file():
    """ "cpu" or "cuda:0" name no machine (a record without ceilings has only those), and
    "AMD EPYC (2 CPUs)" is the machine a peaks file names "AMD EPYC"."""
    from perfsuite.analyzers.roofline.context import device_name, foreign_roof_notes

    peaks = {"fp32": {"peak_flops": {"value": 1e11, "device": "AMD EPYC"}}}
    no_ceilings = {"ceilings": None, "environment": {"device": "cpu"}}
    assert device_name(no_ceilings) is None and foreign_roof_notes(peaks, None) == []
    rec = {"ceilings": None, "hardware": {"name": "AMD EPYC (2 CPUs)"}}
    assert foreign_roof_notes(peaks, device_name(rec)) == []
    (note,) = foreign_roof_notes(peaks, "Intel Xeon Platinum")
    assert note.index("AMD EPYC") < note.index("Intel Xeon Platinum")  # measured, then ran


def test_the_trace_is_read_once_per_command_and_again_when_it_changes(h100, monkeypatch):
    """roofline and utilization both ask for the kernels' math; reading the H100 trace takes
    seconds, so one command reads it once, and a rewritten trace is read again."""
    import os

    from perfsuite.analyzers.roofline import mathmode

    reads = []
    real = mathmode.read_trace  # the timeline reader, as mathmode calls it
    monkeypatch.setattr(mathmode, "read_trace", lambda p: reads.append(p) or real(p))
    mathmode._kernel_math.cache_clear()
    first = roofline(h100)
    assert len(reads) == 1
    assert [o.placement.frac_of_roof for o in roofline(h100).ops] == [
        o.placement.frac_of_roof for o in first.ops
    ]
    assert len(reads) == 1
    st = os.stat(reads[0])
    os.utime(reads[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    roofline(h100)
    assert len(reads) == 2
