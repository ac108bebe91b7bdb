"""The HTML report and the roofline/report CLI, end to end on hand-built records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perfsuite.__main__ import main
from perfsuite.record import quantity, write_record
from tests.helpers import build_record

EVIL = "<script>alert(1)</script>"


@pytest.fixture
def run_dir(tmp_path, make_record):
    rec = build_record(make_record)
    rec["run_id"] = "run-" + EVIL
    rec["model"] = EVIL
    rec["status"] = "reached"
    rec["evaluations"] = [
        {"epoch": 1, "train_time_s": 10.0, "metrics": {"top1": 0.5}},
        {"epoch": 2, "train_time_s": 20.0, "metrics": {"top1": 0.93}},
    ]
    rec["time_to_accuracy"].update(reached=True, time_s=20.0, epoch=2, evaluation_index=1)
    rec["telemetry"] = {
        "sampler": "psutil",
        "interval_s": 1.0,
        "samples": 3,
        "file": "telemetry.csv",
        "cpu": {
            "util_pct_mean": 180.0,
            "util_pct_max": 199.0,
            "rss_bytes_mean": 1e8,
            "rss_bytes_max": 2e8,
        },
        "gpu": None,
        "notes": [],
    }
    d = tmp_path / "run1"
    d.mkdir()
    (d / "telemetry.csv").write_text(
        "t_s,cpu_util_pct,rss_bytes,gpu_util_pct,gpu_sm_clock_hz,gpu_power_w,gpu_mem_used_bytes\n"
        "0,150,1e8,,,,\n1,190,1.5e8,,,,\n2,199,2e8,,,,\n"
    )
    write_record(d, rec)
    return d


def _scripts(text):
    return re.findall(r"<script[^>]*>", text)


def test_report_sections_embedding_and_escaping(run_dir, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    text = out.read_text()
    for sid in ("summary", "curves", "roofline", "ops", "telemetry", "environment"):
        assert f'<section id="{sid}">' in text
    assert text.count('psDraw("') >= 4  # curves, roofline, ops bar, telemetry
    assert text.count("plotly.js v") == 1  # plotly.js embedded exactly once
    assert all("src=" not in tag for tag in _scripts(text))  # nothing loaded from elsewhere
    assert EVIL not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "\\u003cscript\\u003e" in text  # inside figure JSON too
    assert "cpu_util_pct" in text  # the CSV sidecar was read


def test_report_default_name_and_compare(run_dir, tmp_path, monkeypatch, make_record):
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "run2"
    write_record(other, build_record(make_record))
    assert main(["report", str(run_dir), str(other)]) == 0
    assert (tmp_path / "reports" / "compare-2.html").is_file()
    assert main(["report", str(other)]) == 0
    assert (tmp_path / "reports" / "roof1.html").is_file()


def test_report_without_roofline_inputs(tmp_path, make_record):
    d = tmp_path / "bare"
    write_record(d, make_record([(1, 5.0, 0.4)], run_id="bare"))
    out = tmp_path / "bare.html"
    assert main(["report", str(d), "-o", str(out)]) == 0
    text = out.read_text()
    assert "No roofline" in text and "work.flops_per_step" in text


def test_roofline_cli_text_json_html(run_dir, tmp_path, capsys):
    html_out = tmp_path / "roof.html"
    assert main(["roofline", str(run_dir), "--top", "3", "-o", str(html_out)]) == 0
    text = capsys.readouterr().out
    assert "intensity" in text and "20 FLOP/byte" in text
    assert "Where to look first" in text
    assert text.index("aten::mm") < text.index("aten::add_")
    html_text = html_out.read_text()
    assert '<section id="roofline">' in html_text and EVIL not in html_text
    assert main(["roofline", str(run_dir), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    run = data["roofline"]["run"]
    assert run["achieved_flops"]["value"] == pytest.approx(2e10)
    assert run["bound"] == "compute"
    assert [o["op"] for o in data["roofline"]["ranking"]] == ["aten::mm", "aten::add_"]
    assert data["utilization"]["run"]["of_measured_peak"] == pytest.approx(0.2)


def test_roofline_cli_errors(tmp_path, make_record, capsys):
    d = tmp_path / "bare"
    write_record(d, make_record(run_id="bare"))
    assert main(["roofline", str(d)]) == 2
    err = capsys.readouterr().err
    assert "run.json: field work.flops_per_step" in err and err.count("\n") == 1
    assert main(["roofline", str(tmp_path / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_throughput_missing_step_time_falls_back_to_timeline(make_record):
    from perfsuite.analyzers.roofline.roofline import roofline

    rec = build_record(make_record)
    rec["throughput"] = {"samples_per_s": quantity(10.0, "1/s", "measured")}
    assert roofline(rec).run.step_time.value == 0.1


_NO_PLOTLY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "plotly":
            raise ImportError("no plotly in this test")
sys.meta_path.insert(0, Block())
from perfsuite.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def test_text_outputs_need_no_plotly_and_html_says_why_not(run_dir, tmp_path):
    """Only the HTML pages draw: `perfsuite roofline` prints its tables where plotly is absent
    (it failed on a GPU machine without plotly), and `perfsuite report` says in one line what
    is missing instead of a traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def cli(*argv):
        return subprocess.run(
            [sys.executable, "-c", _NO_PLOTLY, *argv],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=120,
        )

    text = cli("roofline", str(run_dir), "--top", "3")
    assert text.returncode == 0, text.stderr
    assert "intensity" in text.stdout and "aten::mm" in text.stdout
    page = cli("report", str(run_dir), "-o", str(tmp_path / "r.html"))
    assert page.returncode == 2 and "Traceback" not in page.stderr
    assert "HTML output needs plotly" in page.stderr and len(page.stderr.splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


def _doc(path: str) -> str:
    return (Path(__file__).resolve().parents[1] / path).read_text(encoding="utf-8")


def test_docs_name_the_roofline_fields_and_columns_the_code_prints():
    from perfsuite.analyzers.roofline.roofline import EXPLAIN
    from perfsuite.views.roofline_rows import OP_HEADERS

    doc = _doc("docs/roofline.md")
    block = doc[doc.index("## Whole-run block") :]
    block = block[: block.index("\n\n", block.index("| field | meaning |"))]
    fields = re.findall(r"^\| `(\w+)` \| (.*) \|$", block, re.M)
    assert [f for f, _ in fields] == list(EXPLAIN)  # the block's rows, in the CLI's order
    meaning = dict(fields)
    assert meaning["frac_of_roof"].startswith("`roof_time / step_time`")
    assert meaning["peak_flops"].startswith("blended compute roof")
    section = doc[doc.index("## Per-op table") : doc.index("## Hierarchical roofline")]
    listed = section[section.index("Columns, in order:") : section.index("`lost/step`.") + 12]
    names = re.findall(r"`([^`]+)`", re.sub(r"` \([^()]*\)", "`", listed))  # no glosses
    assert names == OP_HEADERS  # names and order of `perfsuite roofline`'s per-op table
