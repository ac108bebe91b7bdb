"""The CLI's wording, in one place.

Each case runs one command on fixed inputs (the shared real H100 run, the DAWNBench and MLPerf
fixtures, records built here) and compares what it prints with `tests/golden/<case>.txt`, after
replacing the temporary folder by <TMP> and the shared data folder by <DATA>. The other tests
assert values, exit codes and structure; a reworded sentence changes a golden file here and
nothing else.

After an intended change of wording, regenerate and review the diff:

    PERFSUITE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_cli.py
    git diff tests/golden/
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfsuite.cli import main
from perfsuite.record import quantity, write_record
from tests.conftest import SHARED_DATA, shared_path
from tests.helpers import build_record

GOLDEN = Path(__file__).parent / "golden"
FIXTURES = Path(__file__).parent / "fixtures"
UPDATE = os.environ.get("PERFSUITE_UPDATE_GOLDEN") == "1"


def normalise(text: str, tmp: Path) -> str:
    """Folders that differ between machines, replaced by placeholders; trailing spaces cut."""
    # the data folder as the tests name it and as it resolves (../shared may be a link)
    for path, name in ((tmp, "<TMP>"), (SHARED_DATA.absolute(), "<DATA>")):
        text = text.replace(str(path.resolve()), name).replace(str(path), name)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def check_golden(case: str, text: str, tmp: Path) -> None:
    path = GOLDEN / f"{case}.txt"
    got = normalise(text, tmp)
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {path}: run with PERFSUITE_UPDATE_GOLDEN=1"
    want = path.read_text(encoding="utf-8")
    if got != want:  # a line-by-line diff reads better than pytest's long-string repr
        import difflib

        diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "golden", "now", n=1)
        pytest.fail(
            f"{path.name} differs (PERFSUITE_UPDATE_GOLDEN=1 regenerates it):\n" + "\n".join(diff)
        )


# -- inputs -------------------------------------------------------------------------------------


def _h100(tmp: Path) -> Path:
    from tests.conftest import extract_h100_run

    return extract_h100_run(tmp / "h100")


def _crashed_group(tmp: Path, make_record) -> Path:
    """Five repeats: three reach (10, 20, 30 s), one crashed, one interrupted."""
    from perfsuite.record.tta import crossing_dict, first_crossing

    folder = tmp / "group"
    grp = {"id": "G", "index": 0, "size": 5}
    rows = [
        ("r0", 10.0, 0.95, "reached", None),
        ("r1", 20.0, 0.95, "reached", None),
        ("r2", 30.0, 0.95, "reached", None),
        ("r3", 12.0, 0.5, "crashed", "OSError: disk full"),
        ("r4", 11.0, 0.5, "interrupted", "interrupted by SIGINT"),
    ]
    for seed, (run_id, t, metric, status, error) in enumerate(rows):
        rec = make_record([(1, t, metric)], run_id=run_id, hardware={"name": "cpu"}, group=grp)
        rec["model"] = "mlp"
        rec["time_to_accuracy"] = crossing_dict(first_crossing(rec["evaluations"], "top1", 0.9))
        rec.update(status=status, error=error)
        rec["config"] = {"seed": seed, "epochs": 5, "all_epochs": False}
        write_record(folder / run_id, rec)
    return folder


def _two_workloads(tmp: Path, make_record) -> tuple[Path, Path]:
    """Two hand-built roofline records of different workloads and batch sizes."""
    paths = []
    for run_id, workload, batch in (("a", "toy", 32), ("b", "other", 64)):
        rec = build_record(make_record)
        rec["run_id"] = run_id
        rec["task"]["workload"] = workload
        rec["work"]["batch_size"] = batch
        rec["status"] = "reached"
        write_record(tmp / run_id, rec)
        paths.append(tmp / run_id)
    return paths[0], paths[1]


def _dawnbench_runs(tmp: Path, capsys) -> Path:
    out = tmp / "imported"
    src = FIXTURES / "dawnbench" / "entries"
    assert main(["import", "dawnbench", str(src), "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def _bad_record(tmp: Path, make_record) -> Path:
    rec = make_record([(1, 1.0, 0.95)])
    rec["throughput"] = {"step_time": quantity(-1.0, "s", "measured", "t")}
    folder = tmp / "bad"
    folder.mkdir()
    import json

    (folder / "run.json").write_text(json.dumps(rec), encoding="utf-8")
    return folder


# -- cases: name -> (command line from the test's folder and fixtures, exit code or None) ------
def _argv(case: str, tmp: Path, make_record, capsys) -> list[str]:
    if case == "roofline_h100":
        return ["roofline", str(_h100(tmp))]
    if case == "roofline_h100_top3_peaks":
        peaks = shared_path("gpu", "h100-peaks.json")
        return ["roofline", str(_h100(tmp)), "--top", "3", "--peaks", str(peaks)]
    if case == "roofline_h100_top3_explain":
        return ["roofline", str(_h100(tmp)), "--top", "3", "--explain"]
    if case == "cost_h100_other_instance":
        return ["cost", str(_h100(tmp)), "--instance-type", "p3.2xlarge"]
    if case == "stability_crashed_repeats":
        return ["stability", str(_crashed_group(tmp, make_record))]
    if case == "compare_two_workloads":
        return ["compare", *map(str, _two_workloads(tmp, make_record))]
    if case == "leaderboard_dawnbench":
        return ["leaderboard", str(_dawnbench_runs(tmp, capsys))]
    assert case == "validate_bad_record"
    return ["validate", str(_bad_record(tmp, make_record))]


CASES = {
    "roofline_h100": 0,
    "roofline_h100_top3_peaks": 0,
    "roofline_h100_top3_explain": 0,
    "cost_h100_other_instance": 0,
    "stability_crashed_repeats": 0,
    "compare_two_workloads": 0,
    "leaderboard_dawnbench": 0,
    "validate_bad_record": 1,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_output_matches_its_golden_file(case, tmp_path, make_record, capsys):
    argv = _argv(case, tmp_path, make_record, capsys)
    code_seen = main(argv)
    out = capsys.readouterr()
    assert code_seen == CASES[case]
    text = f"$ perfsuite {' '.join(argv)}\n(exit {code_seen})\n" + out.out
    if out.err:
        text += "--- stderr ---\n" + out.err
    check_golden(case, text, tmp_path)


def test_every_golden_file_has_a_case():
    """A golden file whose case was removed would never be checked again."""
    names = {p.stem for p in GOLDEN.glob("*.txt")}
    assert names == set(CASES)


def test_normalise_replaces_machine_folders(tmp_path):
    text = f"{tmp_path}/a/run.json and {SHARED_DATA}/gpu/x  \n"
    assert normalise(text, tmp_path) == "<TMP>/a/run.json and <DATA>/gpu/x\n"
