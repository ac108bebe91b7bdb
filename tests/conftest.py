"""Shared fixtures: where the shared real data lives, and records built in memory."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("PERFSUITE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data; skips the test when absent, fails instead in CI.

    CI sets PERFSUITE_REQUIRE_SHARED=1 so that a missing data folder cannot turn tests into
    silent skips.
    """
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        reason = f"shared data not found: {path}"
        if os.environ.get("PERFSUITE_REQUIRE_SHARED") == "1":
            pytest.fail(reason + " (PERFSUITE_REQUIRE_SHARED=1)")
        pytest.skip(reason)
    return path


def extract_h100_run(dest: Path) -> Path:
    """The shared real H100 cifar10 run folder, extracted under `dest` (skips when absent)."""
    tar = shared_path("gpu", "h100-cifar10-run.tar.gz")
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    return next(dest.glob("*/run.json")).parent


@pytest.fixture(scope="session")
def h100_dir(tmp_path_factory) -> Path:
    """The shared real H100 cifar10 run folder, extracted once for the session. Read only: a
    test that writes into a run folder (`counters --into`) extracts its own copy."""
    return extract_h100_run(tmp_path_factory.mktemp("h100"))


@pytest.fixture
def h100(h100_dir):
    """The real H100 run's record, loaded afresh for each test (a test may change the dict)."""
    from perfsuite.record import load_record

    return load_record(h100_dir)


@pytest.fixture
def make_record():
    """Build a minimal valid record with the given curve (list of (epoch, time_s, metric))."""
    from perfsuite.record import new_record

    def _make(curve=(), metric="top1", threshold=0.9, run_id="r1", **fields):
        rec = new_record(
            run_id=run_id, task={"name": "toy", "metric": metric, "threshold": threshold}
        )
        rec["evaluations"] = [
            {"epoch": e, "train_time_s": t, "metrics": {metric: m}} for e, t, m in curve
        ]
        rec.update(fields)
        return settle(rec) if "time_to_accuracy" not in fields else rec

    return _make


def settle(rec):
    """Set a hand-built record's `time_to_accuracy` from its own evaluations by the one rule
    (`perfsuite.record.tta`), as the writers do, so that it is consistent
    (`perfsuite.record.consistency`)."""
    from perfsuite.record.tta import crossing_dict, first_crossing

    task = rec["task"]
    c = first_crossing(
        rec["evaluations"], task["metric"], task["threshold"], task.get("direction", "higher")
    )
    rec["time_to_accuracy"] = crossing_dict(c)
    return rec


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A per-test perfsuite cache (peaks, decoded datasets), so runs never share state."""
    monkeypatch.setenv("PERFSUITE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- real `perfsuite run digits` command lines, made once per session -------------------------
# Each `python -m perfsuite run` pays ~10 s of imports (torch, dynamo, scikit-learn) per
# process before it trains, so the tests that read the same command's output share one: the
# records are only read (tests that write results copy the folder first).


@pytest.fixture(scope="session")
def cli_roofs_cache(tmp_path_factory):
    """A perfsuite cache with user-set CPU roofs, so runs take no micro-benchmark. The roofs
    are far above what 2 cores reach (cache-resident elementwise ops beat a DRAM copy rate),
    so no op is flagged above its roof and every joined op has a fraction."""
    pytest.importorskip("torch")
    from perfsuite.cli import main

    path = tmp_path_factory.mktemp("roofs") / "cache"
    with pytest.MonkeyPatch.context() as mp:  # `perfsuite peaks --set` here: no process start
        mp.setenv("PERFSUITE_CACHE_DIR", str(path))
        assert main(["peaks", "--set", "float32=5e12", "--set", "bandwidth=1e12"]) == 0
    assert (path / "peaks.json").is_file()
    return path


@pytest.fixture(scope="session")
def digits_cli_run(cli_roofs_cache, tmp_path_factory):
    """`perfsuite run digits --out DIR --quiet --no-peaks --threshold 0.9 --profile-seconds 0`:
    the default recipe and capture (FLOP count, profile window, telemetry, inference latency
    on the whole evaluation set), to 90% (3 epochs, not the 10 of the default 98%) with a
    window of exactly 3 steps. Its folder."""
    from tests.api_compare import cli

    out = tmp_path_factory.mktemp("runs")
    stdout = cli("run", "digits", "--out", str(out), "--quiet", "--no-peaks",
                 "--threshold", "0.9", "--profile-seconds", "0", cache=cli_roofs_cache)  # fmt: skip
    return Path(stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def digits_cli_group(cli_roofs_cache, tmp_path_factory):
    """`perfsuite run digits --repeats 3 --seed 7 --threshold 0.8 --parallel 2 --no-capture`:
    a group of repeats to 80% (the point is the group, not the accuracy or the timings: two
    runs at a time, since each run's process spends most of its life importing). (group
    folder, stdout: the run folders one a line, in the order they finished)."""
    from tests.api_compare import cli

    out = tmp_path_factory.mktemp("group")
    stdout = cli("run", "digits", "--out", str(out), "--quiet", "--no-peaks", "--no-capture",
                 "--repeats", "3", "--seed", "7", "--threshold", "0.8", "--parallel", "2",
                 cache=cli_roofs_cache)  # fmt: skip
    return out, stdout


# The study file of tests/test_study_run.py::test_cli_study_file_json_and_resume. The command
# line `perfsuite study lesion digits --opts channels_last --threshold 0.5 --epochs 1
# --no-capture` is the same study (tests/test_api_study.py runs it on a copy of the folder:
# it finds every run made, as a different study would be refused).
LESION_STUDY_FILE = (
    'kind = "lesion"\nworkload = "digits"\noptions = ["channels_last"]\n'
    "threshold = 0.5\n[run]\nepochs = 1\ncapture = false\n"
)


@pytest.fixture(scope="session")
def tf():
    """TensorFlow, imported by the first test that asks for it rather than at collection: every
    test worker collects every file, and a worker that runs no TensorFlow test then never pays
    its seconds of import. A file of such tests says `pytestmark =
    pytest.mark.usefixtures("tf")`; they skip where it is not installed."""
    return pytest.importorskip("tensorflow", reason="tensorflow-cpu not installed")


@pytest.fixture(scope="session")
def digits_lesion_study(tmp_path_factory):
    """`perfsuite study run lesion.toml --out DIR --json --quiet --parallel 2`
    (LESION_STUDY_FILE): a lesion study of channels_last on digits, one run per configuration
    in a process of its own, both at once (what is read is the study, not its timings; each
    process spends most of its life importing). The command runs in this process, through the
    program's entry: its runs are the processes. (study folder, the command as a completed
    process: exit status, stdout, stderr). Resume or copy it; never change a run."""
    import contextlib
    import io
    import subprocess

    from perfsuite.__main__ import main

    root = tmp_path_factory.mktemp("lesion")
    study_file = root / "lesion.toml"
    study_file.write_text(LESION_STUDY_FILE)
    out = root / "study"
    argv = ["study", "run", str(study_file), "--out", str(out), "--json", "--quiet",
            "--parallel", "2"]  # fmt: skip
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as mp,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        mp.setenv("PERFSUITE_CACHE_DIR", str(root / "cache"))
        code = main(argv)
    return out, subprocess.CompletedProcess(argv, code, stdout.getvalue(), stderr.getvalue())


# -- parallel workers (`make test` runs `pytest -n 2 --dist loadgroup`, pytest-xdist) -----------
# A work unit is a test file, or a group of files that read one slow session fixture (a real
# `perfsuite run` or study): a module- or session-scoped fixture is then built once, on one
# worker, and a study resumed by one file is never copied by another at the same moment. The
# units are given out slowest first, so that the two workers end together.
#
# The units are made by the scheduler below, not by `xdist_group` markers: pytest-xdist 3.8
# applies a marker by rewriting `item._nodeid`, which pytest 9.2 no longer reads (a node id
# comes from `item._id`), so under pytest 9.2 `--dist loadgroup` with markers hands out single
# tests and a file's fixtures are built on both workers.
SESSION_FIXTURE_GROUPS = {
    "test_api.py": "digits-cli-runs",  # digits_cli_run, digits_cli_group
    "test_runner.py": "digits-cli-runs",
    "test_run_history.py": "digits-cli-runs",  # digits_cli_run
    "test_api_study.py": "lesion-study",  # digits_lesion_study
    "test_study_run.py": "lesion-study",
}

# The units that take longest, slowest first, by the sum of their tests' `--durations=0`
# (setup, call and teardown) in a full two-worker run; every other file follows in collection
# order. Only the order depends on this list: a unit missing from it still runs.
SLOW_UNITS_FIRST: tuple[str, ...] = (
    "digits-cli-runs",
    "lesion-study",
    "tests/test_seam.py",
    "tests/test_distributed.py",
    "tests/test_browser.py",
    "tests/test_tracking.py",
    "tests/test_trace_reader_paths.py",
    "tests/test_user_workload_loading.py",
    "tests/test_tensorflow.py",
    "tests/test_gpu_evidence.py",
    "tests/test_tf_inference.py",
    "tests/test_imagenet.py",
    "tests/test_timeline_diff.py",
    "tests/test_user_workloads.py",
)


def work_unit(nodeid: str) -> str:
    """The work unit of a test: its file's group, else its file (relative to the root)."""
    path = nodeid.split("::", 1)[0]
    return SESSION_FIXTURE_GROUPS.get(path.rsplit("/", 1)[-1], path)


def _unit_rank(unit: str) -> int:
    return SLOW_UNITS_FIRST.index(unit) if unit in SLOW_UNITS_FIRST else len(SLOW_UNITS_FIRST)


def pytest_collection_modifyitems(config, items):
    # Stable sort: tests keep their order within a unit; every worker collects the same order.
    items.sort(key=lambda item: _unit_rank(work_unit(item.nodeid)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`: xdist's scope scheduling over `work_unit`s, in collection order."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WorkUnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    # Units in collection order (slowest first), not xdist's default of most tests first.
    config.option.loadscopereorder = False
    return WorkUnitScheduling(config, log)
