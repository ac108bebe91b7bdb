"""The parallel workers' work units (tests/conftest.py): files that share a slow session
fixture go together, and the slow-first list names units that exist."""

from __future__ import annotations

from tests.conftest import ROOT, SESSION_FIXTURE_GROUPS, SLOW_UNITS_FIRST, work_unit


def test_a_test_belongs_to_its_files_group_or_its_file():
    assert work_unit("tests/test_api.py::test_x") == "digits-cli-runs"
    assert work_unit("tests/test_runner.py::test_y[a::b]") == "digits-cli-runs"
    assert work_unit("tests/roofline/test_doubt.py::Cls::test_z") == "tests/roofline/test_doubt.py"


def test_every_named_unit_exists():
    for name in SESSION_FIXTURE_GROUPS:
        assert list(ROOT.glob(f"tests/**/{name}")), f"SESSION_FIXTURE_GROUPS: no {name}"
    groups = set(SESSION_FIXTURE_GROUPS.values())
    for unit in SLOW_UNITS_FIRST:
        assert unit in groups or (ROOT / unit).is_file(), f"SLOW_UNITS_FIRST: no unit {unit}"
    assert len(set(SLOW_UNITS_FIRST)) == len(SLOW_UNITS_FIRST)
