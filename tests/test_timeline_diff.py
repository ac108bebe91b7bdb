"""`perfsuite timeline --diff A B`: ops and kernels added, removed, count and duration deltas;
checked against HTA's `TraceDiff.compare_traces` on the shared two-rank NCCL job."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path

import pytest

from perfsuite.analyzers.timeline import iter_events
from perfsuite.analyzers.timeline.diff import diff_paths
from perfsuite.cli import main
from perfsuite.record import write_record
from tests.conftest import shared_path
from tests.test_timeline_synthetic import call, kern, op, write_trace

NCCL = ["trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"]


def one_step_copy(src: Path, dst: Path) -> Path:
    """test_timeline_hta's comparable copy (its ProfilerSteps renamed, so HTA keeps them as
    plain annotations), plus one `ProfilerStep#1` covering the whole trace. Why: HTA's diff
    compares one iteration (the first ProfilerStep by default; events outside every step are
    iteration -1, which it cannot select), perfsuite's the whole trace. With a single step over
    everything both compare the same events."""
    from tests.test_timeline_hta import comparable_copy

    comparable_copy(src, dst)
    with gzip.open(dst, "rt") as fh:
        doc = json.load(fh)
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    lo = min(e["ts"] for e in xs)
    hi = max(e["ts"] + e.get("dur", 0) for e in xs)
    host = next(e for e in xs if e.get("cat") == "cpu_op")
    doc["traceEvents"].append(
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": host["pid"],
         "tid": host["tid"], "ts": lo, "dur": hi - lo + 1}
    )  # fmt: skip
    with gzip.open(dst, "wt") as fh:
        json.dump(doc, fh)
    return dst


def _hta_diff(a: Path, b: Path, control_rank):
    pytest.importorskip("hta.trace_diff", reason="holistictraceanalysis not installed")
    from hta.common.trace import Trace
    from hta.trace_diff import DeviceType, LabeledTrace, TraceDiff

    logging.getLogger("hta").setLevel(logging.ERROR)
    # parse in-process: HTA forks a pool per trace folder, and a fork of a test process that
    # runs torch (or other) threads can inherit a held lock and hang
    parse = Trace.parse_traces
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            Trace,
            "parse_traces",
            lambda self, *a, **k: parse(self, *a, **{**k, "use_multiprocessing": False}),
        )
        la = LabeledTrace("A", trace_dir=str(a))
        lb = LabeledTrace("B", trace_dir=str(b))
    return {
        kind: TraceDiff.compare_traces(la, lb, control_rank=control_rank, device_type=dt)
        for kind, dt in (("cpu_op", DeviceType.CPU), ("kernel", DeviceType.GPU))
    }


@pytest.mark.shared
@pytest.mark.parametrize("a_ranks", [[0], [0, 1]], ids=["rank0-vs-rank1", "both-vs-rank1"])
def test_diff_agrees_with_hta(tmp_path, a_ranks):
    """Every op and kernel's counts and total-duration delta equal HTA's. Where the definitions
    differ: HTA's CPU side is every host event (cpu_op, user_annotation, cuda_runtime), grouped
    by name whatever the category; perfsuite diffs cpu_op ranges only, so HTA's extra names are
    checked to be host events that are not cpu_ops."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for r in a_ranks:
        one_step_copy(shared_path("traces", NCCL[r]), a / NCCL[r])
    one_step_copy(shared_path("traces", NCCL[1]), b / NCCL[1])
    mine = diff_paths(a, b)
    theirs = _hta_diff(a, b, a_ranks)
    assert (mine.ranks_a, mine.ranks_b) == (len(a_ranks), 1)
    for kind, df in theirs.items():
        rows = {r.name: r for r in mine.rows if r.kind == kind}
        assert rows, kind
        for name, r in rows.items():
            h = df.loc[name]
            assert (r.count_a, r.count_b) == (h["A_counts"], h["B_counts"]), name
            assert r.count_delta == h["diff_counts"]
            assert r.total_a_s == pytest.approx(h["A_total_duration"] * 1e-6, rel=1e-9, abs=1e-12)
            assert r.total_delta_s == pytest.approx(h["diff_duration"] * 1e-6, abs=1e-9)
        extra = set(df.index) - set(rows)
        if kind == "kernel":
            assert not extra
        else:
            cpu_ops = {
                e["name"]
                for d in (a, b)
                for f in d.iterdir()
                for e in iter_events(f)
                if e.get("cat") == "cpu_op"
            }
            assert extra and not (extra & cpu_ops)


@pytest.mark.shared
def test_diff_of_the_nccl_ranks_figures(tmp_path):
    """The two real ranks, whole traces: a few figures a wrong sort or sign would change."""
    d = diff_paths(*(shared_path("traces", n) for n in NCCL))
    assert d.counts == {"added": 3, "removed": 23, "changed": 316, "same": 22}
    top = d.rows[0]
    assert top.kind == "kernel" and top.name.startswith(
        "void split_embedding_backward_codegen_rowwise_adagrad_unweighted"
    )
    assert (top.count_a, top.count_b) == (2, 2)
    assert top.total_delta_s == pytest.approx(0.0338, abs=1e-4)
    deltas = [abs(r.total_delta_s) for r in d.rows]
    assert deltas == sorted(deltas, reverse=True)
    nccl = next(r for r in d.rows if r.name.startswith("ncclKernel_SendRecv"))
    assert nccl.total_delta_s == pytest.approx(-0.0171, abs=1e-4)  # rank 0 waits longer


def small(path: Path, ops: list[tuple[str, int]], kernels: list[tuple[str, int]]) -> Path:
    """ops and kernels as (name, duration µs), one after another on one thread/stream."""
    events, t = [], 0
    for i, (name, dur) in enumerate(ops):
        events.append(op(name, t, dur))
        if i < len(kernels):
            events.append(call("cudaLaunchKernel", t + 1, 1, corr=i + 1))
            events.append(kern(kernels[i][0], t + 2, kernels[i][1], stream=7, corr=i + 1))
        t += max(dur, 50)
    return write_trace(path, events)


def test_diff_statuses_deltas_and_order(tmp_path, capsys):
    a = small(tmp_path / "a.json", [("aten::mm", 10), ("aten::mm", 30), ("aten::relu", 4)],
              [("gemm", 20), ("gemm", 20), ("relu_k", 2)])  # fmt: skip
    b = small(tmp_path / "b.json", [("aten::mm", 10), ("aten::gelu", 6)],
              [("gemm", 50), ("gelu_k", 3)])  # fmt: skip
    d = diff_paths(a, b)
    got = {(r.kind, r.name): r for r in d.rows}
    mm = got["cpu_op", "aten::mm"]
    assert (mm.status, mm.count_a, mm.count_b, mm.count_delta) == ("changed", 2, 1, -1)
    assert mm.total_delta_s == pytest.approx(-30e-6)
    assert mm.mean_a_s == pytest.approx(20e-6) and mm.mean_delta_s == pytest.approx(-10e-6)
    assert got["cpu_op", "aten::relu"].status == "removed"
    assert got["cpu_op", "aten::relu"].mean_b_s is None
    assert got["cpu_op", "aten::gelu"].status == "added"
    gemm = got["kernel", "gemm"]
    assert (gemm.count_delta, gemm.total_delta_s) == (-1, pytest.approx(10e-6))
    assert gemm.mean_delta_s == pytest.approx(30e-6)
    assert d.counts == {"added": 2, "removed": 2, "changed": 2, "same": 0}
    assert [(r.kind, r.name) for r in d.rows][:2] == [("cpu_op", "aten::mm"), ("kernel", "gemm")]
    assert d.total_a_s["kernel"] == pytest.approx(42e-6)

    assert main(["timeline", "--diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "2 added, 2 removed, 2 changed, 0 unchanged (by kind and name)"
    assert out[6].split()[:6] == ["cpu_op", "aten::mm", "changed", "2", "1", "-1"]


def test_diff_of_run_folders_and_rank_folders(tmp_path, make_record, capsys):
    runs = []
    for name, kernel_us in (("run-a", 20), ("run-b", 25)):
        folder = tmp_path / name
        folder.mkdir()
        small(folder / "trace.json.gz", [("aten::mm", 10)], [("gemm", kernel_us)])
        write_record(folder, make_record(run_id=name, timeline={"trace": "trace.json.gz"}))
        runs.append(folder)
    assert main(["timeline", "--diff", *map(str, runs), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["a"].endswith("run-a/trace.json.gz") and doc["time_unit"] == "s"
    (gemm,) = [r for r in doc["rows"] if r["kind"] == "kernel"]
    assert gemm["total_delta_s"] == pytest.approx(5e-6)

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    for r in (0, 1):
        shutil.copy(runs[0] / "trace.json.gz", ranks / f"rank-{r}.json.gz")
    assert main(["timeline", "--diff", str(ranks), str(runs[1]), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (gemm,) = [r for r in doc["rows"] if r["kind"] == "kernel"]
    assert (doc["ranks_a"], gemm["count_a"], gemm["count_b"]) == (2, 2, 1)
    assert gemm["total_delta_s"] == pytest.approx(-15e-6)
    assert doc["notes"] == [
        "A has 2 rank(s), B 1: counts and totals are sums over ranks, so compare means, "
        "or per-rank figures"
    ]


def test_diff_bad_input_is_one_line(tmp_path, capsys):
    good = small(tmp_path / "a.json", [("aten::mm", 10)], [("gemm", 5)])
    bad = tmp_path / "b.json"
    bad.write_text('{"x": 1}')
    for argv, msg in [
        (["--diff", str(good), str(tmp_path / "nope")], f"{tmp_path / 'nope'}: no such file"),
        (["--diff", str(good), str(bad)], f"{bad}: field traceEvents: missing"),
        (["--diff", str(good), str(good), str(good)], "--diff A B takes no other TRACE"),
    ]:
        assert main(["timeline", *argv]) == 2
        cap = capsys.readouterr()
        err = cap.err.strip()
        assert cap.out == "" and "\n" not in err and msg in err, err


def test_docs_list_the_json_fields_the_code_writes():
    """docs/timeline.md names exactly the fields of the rank folder's and the diff's JSON."""
    import re
    from dataclasses import fields

    from perfsuite.analyzers.timeline.diff import DiffRow, TraceDiff
    from perfsuite.analyzers.timeline.ranks import (
        FolderScan,
        RankExtreme,
        RankSummary,
        StragglerRank,
        Stragglers,
    )

    doc = (Path(__file__).resolve().parents[1] / "docs" / "timeline.md").read_text("utf-8")
    text = " ".join(doc[doc.index("## Folders of rank traces") : doc.index("## Limits")].split())

    def listed(pattern: str) -> list[str]:
        body = re.search(pattern, text)
        assert body, pattern
        return [f.strip().strip('"').split(":")[0] for f in body.group(1).split(",")]

    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    assert listed(r'"ranks": \[\{([^}]*)\}\]') == names(RankSummary)
    assert listed(r'"extremes": \[\{([^}]*)\}\]') == names(RankExtreme)
    assert listed(r"ranks: \[\{(rank, metric[^}]*)\}\]") == names(StragglerRank)
    assert listed(r'"stragglers": \{(rule, margin, ranks)') == names(Stragglers)[:3]
    assert listed(r"rows: \[\{([^}]*)\}\]") == names(DiffRow)
    assert listed(r'"time_unit": "s", (a, b, ranks_a, ranks_b)') == names(TraceDiff)[:4]
    assert listed(r'"time_unit": "s", ("folder")') == names(FolderScan)[:1]
