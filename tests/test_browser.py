"""Every report kind in a real headless Chromium, opened from file:// with
the network blocked: no page errors, no console errors or warnings, no network or failed
requests, no payload that runs, and every plot drew points.

Skips with a reason when no Chromium is installed; CI sets PERFSUITE_REQUIRE_BROWSER=1 (and
installs Debian's `chromium`), where a missing browser fails instead.
"""

from __future__ import annotations

import itertools
import os

import pytest

from perfsuite.__main__ import main
from perfsuite.record import quantity, write_record
from tests.browser import OP_NAME_BOXES, Browser, find_chromium
from tests.conftest import extract_h100_run
from tests.helpers import build_record
from tests.test_timeline_synthetic import scenario, write_trace

pytestmark = pytest.mark.slow  # a browser start and a few page loads: seconds, not minutes

# Names a hostile record could carry: a closing script tag and an attribute handler.
PAYLOADS = ("</script><script>alert(1)</script>", '"><img src=x onerror="window.__pwned=1">')


@pytest.fixture(scope="module")
def browser():
    exe = find_chromium()
    if exe is None:
        why = "no Chromium found (apt-get install chromium, or set PERFSUITE_CHROMIUM)"
        if os.environ.get("PERFSUITE_REQUIRE_BROWSER") == "1":
            pytest.fail(why + "; PERFSUITE_REQUIRE_BROWSER=1 requires it")
        pytest.skip(why)
    b = Browser(exe)
    yield b
    b.close()


def _run_dir(root, make_record, run_id, tta_s=20.0, group=None):
    rec = build_record(make_record)
    rec["group"] = group
    rec["run_id"] = run_id + PAYLOADS[0]
    rec["model"] = PAYLOADS[1]
    rec["status"] = "reached"
    rec["evaluations"] = [
        {"epoch": 1, "train_time_s": 10.0, "metrics": {"top1": 0.5}},
        {"epoch": 2, "train_time_s": tta_s, "metrics": {"top1": 0.93}},
    ]
    rec["time_to_accuracy"].update(reached=True, time_s=tta_s, epoch=2, evaluation_index=1)
    rec["throughput"] = {
        "step_time": quantity(0.1, "s", "measured", "t"),
        "samples_per_s": quantity(320.0, "sample/s", "derived", "t"),
    }
    rec["telemetry"] = {"sampler": "psutil", "interval_s": 1.0, "samples": 3,
                        "file": "telemetry.csv", "cpu": {"util_pct_mean": 180.0},
                        "gpu": None, "notes": []}  # fmt: skip
    d = root / run_id
    d.mkdir(parents=True)
    (d / "telemetry.csv").write_text(
        "t_s,cpu_util_pct,rss_bytes,gpu_util_pct,gpu_sm_clock_hz,gpu_power_w,gpu_mem_used_bytes\n"
        "0,150,1e8,,,,\n1,190,1.5e8,,,,\n2,199,2e8,,,,\n"
    )
    write_trace(d / "trace.json.gz", scenario(), gz=True)
    rec["timeline"]["trace"] = "trace.json.gz"
    write_record(d, rec)
    return d


@pytest.fixture(scope="module")
def pages(tmp_path_factory, browser):
    """One file per report kind the suite builds: single run, several runs, a group of
    repeats (stability section), roofline page."""
    from tests.conftest import make_record as make_record_fixture

    make_record = make_record_fixture.__wrapped__()
    root = tmp_path_factory.mktemp("browser")
    a = _run_dir(root / "runs", make_record, "a")
    b = _run_dir(root / "runs", make_record, "b")
    out = {
        "single": root / "single.html",
        "compare": root / "compare.html",
        "roofline": root / "roofline.html",
        "group": root / "group.html",
    }
    reps = [
        _run_dir(root / "group", make_record, f"r{i}", t, {"id": "g", "index": i, "size": 5})
        for i, t in enumerate([20.0, 21.5, 19.0, 22.0, 20.5])
    ]
    assert main(["report", str(a), "-o", str(out["single"])]) == 0
    assert main(["report", str(a), str(b), "-o", str(out["compare"])]) == 0
    assert main(["roofline", str(a), "-o", str(out["roofline"])]) == 0
    assert main(["report", *map(str, reps), "-o", str(out["group"])]) == 0
    assert 'id="stability"' in out["group"].read_text()
    out.update(_history_pages(root))
    return out


def _history_pages(root):
    """The history page of a store (30 nights, a step at night 20, a note carrying a payload)
    and a run's report with the History section that shows where it falls."""
    from tests.history.records import write_nightly
    from tests.history.test_cli import STEP

    nights = write_nightly(root / "nights", STEP)
    db = str(root / "history.sqlite")
    assert main(["history", "add", *map(str, nights), "--db", db]) == 0
    name = "digits:default unknown unknown Test CPU x1 @nightly-box"
    assert main(["history", "note", name, "2026-10-01T10:00:00Z", PAYLOADS[0], "--db", db]) == 0
    pages = {"history": root / "history.html", "run-history": root / "run-history.html"}
    assert main(["report", "--history", db, "-o", str(pages["history"])]) == 0
    assert main(["report", str(nights[25]), "--history", db, "-o", str(pages["run-history"])]) == 0
    assert 'id="history"' in pages["run-history"].read_text()
    return pages


@pytest.mark.parametrize(
    "kind", ["single", "compare", "roofline", "group", "history", "run-history"]
)
def test_report_opens_clean_in_chromium(browser, pages, kind):
    shot = pages[kind].with_suffix(".png") if os.environ.get("PERFSUITE_SCREENSHOTS") else None
    rep = browser.check(pages[kind], screenshot=shot)
    assert rep.plots, "no plots on the page"
    assert rep.problems() == []


def test_the_checker_sees_errors_requests_payloads_and_empty_plots(browser, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body data-plots-ready="1"><div class="plot" id="p"></div>'
        '<img src="http://192.0.2.1/x.png"><script>console.warn("careful");'
        'window.__pwned = 1; throw new Error("bad page")</script></body></html>'
    )
    problems = browser.check(page).problems()
    joined = "\n".join(problems)
    assert "page error: Error: bad page" in joined
    assert "console: warning: careful" in joined
    assert "network request: http://192.0.2.1/x.png" in joined
    assert "a payload ran" in joined and "empty plot: p" in joined


def _intersect(a, b):
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


@pytest.fixture(scope="module")
def h100_page(tmp_path_factory):
    root = tmp_path_factory.mktemp("h100")
    page = root / "h100.html"
    assert main(["report", str(extract_h100_run(root / "run")), "-o", str(page)]) == 0
    return page


@pytest.mark.parametrize("width", [760, 1265])
def test_h100_op_names_do_not_overlap_in_chromium(browser, h100_page, width):
    """On the real H100 run's page, at the narrowest page the report supports and a wide one,
    the rendered op names (annotations) neither intersect each other nor leave the plot; as
    trace text, 5 pairs of them did at both widths. The convolution's name needs a leader line
    (its marker is boxed in by its neighbours) and is named at both widths."""
    rep = browser.check(h100_page, width=width, probe=OP_NAME_BOXES)
    assert rep.problems() == []
    (plot,) = rep.probe
    boxes = plot["boxes"]
    assert {b["text"] for b in boxes} >= {
        "aten::convolution_backward",
        "aten::convolution",
        "aten::cudnn_batch_norm",
    }
    clash = [
        (a["text"], b["text"]) for a, b in itertools.combinations(boxes, 2) if _intersect(a, b)
    ]
    assert clash == []
    area = plot["area"]
    outside = [
        b["text"]
        for b in boxes
        if not (
            b["x0"] >= area["x0"] - 0.5
            and b["x1"] <= area["x1"] + 0.5
            and b["y0"] >= area["y0"] - 0.5
            and b["y1"] <= area["y1"] + 0.5
        )
    ]
    assert outside == []
    assert {b["kind"] for b in boxes} == {"annotation"}  # no name is trace text any more
