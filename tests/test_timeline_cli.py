"""`perfsuite timeline`: text, --json, run-record sidecars and one-line errors."""

from __future__ import annotations

import json

import pytest

from perfsuite.cli import main
from perfsuite.record import write_record
from tests.test_timeline_synthetic import scenario, write_trace


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "trace.json.gz", scenario(), gz=True)


def test_text_summary(trace, capsys):
    assert main(["timeline", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "device 0: 7 events over 123 µs" in out
    assert "busy 71 µs (57.7%)" in out  # 71 / 123
    # the scenario's 3 µs inside launch calls were counted as queued before (14 µs)
    wait = next(line for line in out.splitlines() if "host wait" in line)
    for part in ("host wait 33 µs", "sync calls 25 µs", "launch calls 3 µs", "queued 11 µs",
                 "unattributed 5 µs"):  # fmt: skip
        assert part in wait
    assert "ncclDevKernel_Generic_4" in out and "communication" in out


def test_json_output(trace, capsys):
    assert main(["timeline", str(trace), "--json", "--top", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["time_unit"] == "s"  # seconds, as every other command's JSON
    (t,) = doc["traces"]
    dev = t["devices"][0]
    assert dev["busy_s"] == pytest.approx(71e-6)
    assert dev["idle"]["host_wait_s"] == pytest.approx(33e-6)
    assert dev["idle"]["in_launch_s"] == pytest.approx(3e-6)
    assert dev["idle"]["queued_s"] == pytest.approx(11e-6)
    assert "busy_us" not in dev
    # --top cuts the text tables only: the JSON lists all 7 kernels and every op
    assert len(t["top_kernels"]) == 7 and len(t["ops"]) > 2
    assert t["ops"][0]["name"] == "aten::mm"


def test_run_record_sidecar(tmp_path, trace, make_record, capsys):
    run_dir = tmp_path / "run1"
    run_dir.mkdir()
    (run_dir / "trace.json.gz").write_bytes(trace.read_bytes())
    rec = make_record(timeline={"trace": "trace.json.gz", "tool": "torch.profiler", "steps": 1})
    write_record(run_dir, rec)
    assert main(["timeline", str(run_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["traces"][0]["path"].endswith("run1/trace.json.gz")
    assert doc["traces"][0]["devices"][0]["events"] == 7


def test_run_record_without_trace(tmp_path, make_record, capsys):
    run_dir = tmp_path / "run2"
    write_record(run_dir, make_record())
    assert main(["timeline", str(run_dir / "run.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "run.json: field timeline.trace: " in err and err.endswith("no trace sidecar")
    assert "\n" not in err


@pytest.mark.parametrize(
    ("content", "needle"),
    [("not json at all", "not valid JSON"), ('{"events": []}', "field traceEvents: missing")],
)
def test_bad_trace_is_one_line_error(tmp_path, capsys, content, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["timeline", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"perfsuite: error: {bad}:") and needle in err and "\n" not in err


def test_missing_path(tmp_path, capsys):
    assert main(["timeline", str(tmp_path / "nope.json")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_several_traces_get_a_rank_table(tmp_path, trace, capsys):
    other = write_trace(tmp_path / "other.json", scenario(), meta={"distributedInfo": {"rank": 5}})
    assert main(["timeline", str(trace), str(other)]) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("other.json") and " 5 " in last


def test_json_has_the_rank_table(tmp_path, trace, capsys):
    other = write_trace(tmp_path / "other.json", scenario(), meta={"distributedInfo": {"rank": 5}})
    empty_op = {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0,
                "dur": 5}  # fmt: skip
    cpu = write_trace(tmp_path / "cpu.json", [empty_op])
    assert main(["timeline", str(trace), str(other), str(cpu), "--json"]) == 0
    ranks = json.loads(capsys.readouterr().out)["ranks"]
    assert [(r["trace"], r["rank"]) for r in ranks] == [
        ("trace.json.gz", None), ("other.json", 5), ("cpu.json", None)
    ]  # fmt: skip
    r = ranks[1]
    assert r["span_s"] == pytest.approx(123e-6)
    assert r["compute_share"] == pytest.approx(51 / 123)  # compute union over the span
    assert r["communication_busy_s"] == pytest.approx(13e-6)
    assert r["idle_share"] == pytest.approx(52 / 123)
    assert r["host_wait_s"] == pytest.approx(33e-6)
    assert ranks[2]["span_s"] is None and ranks[2]["idle_share"] is None


@pytest.mark.parametrize(
    ("content", "needle"),
    [('{"traceEvents": []}', "field traceEvents: empty trace (0 events)"),
     ('{"traceEvents": {}}', "field traceEvents: is not a list (got an object)")],
)  # fmt: skip
def test_empty_trace_exits_2_with_one_line(tmp_path, capsys, content, needle):
    bad = tmp_path / "e.json"
    bad.write_text(content)
    assert main(["timeline", str(bad)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.strip() == f"perfsuite: error: {bad}: {needle}"


def test_fmt_truncate_shared_by_timeline_and_counters():
    from perfsuite.fmt import truncate

    assert truncate("abcdef", 6) == "abcdef"
    assert truncate("abcdefg", 6) == "abc..."
    assert len(truncate("x" * 200, 60)) == 60
    assert truncate("abcdef", 3) == "abc"
    assert truncate("abcdef", 0) == ""


def test_docs_list_the_json_fields_the_code_writes():
    """docs/timeline.md's JSON section names exactly the fields of idle, ops[] and ranks[]."""
    import re
    from dataclasses import fields
    from pathlib import Path

    from perfsuite.analyzers.timeline import IdleBreakdown, OpStat, RankRow

    doc = (Path(__file__).resolve().parents[1] / "docs" / "timeline.md").read_text("utf-8")
    section = " ".join(doc[doc.index("## JSON (`--json`)") : doc.index("## Cross-check")].split())

    def listed(pattern: str) -> list[str]:
        body = re.search(pattern, section)
        assert body, pattern
        return [f.strip() for f in body.group(1).split(",")]

    assert listed(r"idle: \{([^}]*)\}") == [f.name for f in fields(IdleBreakdown)]
    assert listed(r"`ops\[\]` `\{([^}]*)\}`") == [f.name for f in fields(OpStat)]
    assert listed(r"`ranks` is the rank table[^`]*`\{([^}]*)\}`") == [
        f.name for f in fields(RankRow)
    ]
