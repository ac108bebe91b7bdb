"""What `pip install perfsuite` puts into site-packages: one package and its metadata, with the
source tree's `analyzers/` installed as `perfsuite.analyzers` and the data files beside the code."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the sources: a build writes build/ and *.egg-info beside them, which
    # must neither land in the checkout nor race another process reading it.
    src = tmp / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.perfsuite-columns")
    for folder in ("perfsuite", "analyzers"):
        shutil.copytree(ROOT / folder, src / folder, ignore=skip)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
        capture_output=True,
        text=True,
    )
    if build.returncode and "No module named" in build.stderr:
        pytest.skip(f"cannot build a wheel here: {build.stderr.strip().splitlines()[-1]}")
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp / "dist").glob("perfsuite-*.whl")
    site = tmp / "site"
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        check=True,
    )
    return site


def test_only_perfsuite_at_the_top_level(installed: Path) -> None:
    top = {p.name for p in installed.iterdir() if p.name != "bin"}
    assert {n for n in top if not n.endswith(".dist-info")} == {"perfsuite"}
    assert len([n for n in top if n.endswith(".dist-info")]) == 1


def test_every_source_module_is_installed(installed: Path) -> None:
    pkg = installed / "perfsuite"
    for src in [*ROOT.glob("perfsuite/**/*.py"), *ROOT.glob("analyzers/**/*.py")]:
        rel = src.relative_to(ROOT)
        if rel.parts[0] == "analyzers":
            rel = Path("perfsuite", *rel.parts)
        assert (installed / rel).is_file(), f"{rel} missing from the wheel"
    for data in ("record/run.schema.json", "devices/specs.json", "pricing/prices.json"):
        assert (pkg / data).is_file(), data


def test_installed_analyzers_import_from_the_installed_tree(installed: Path) -> None:
    code = (
        "import perfsuite.analyzers.timeline.analysis as r, perfsuite.record as rec;"
        "print(r.__file__); print(rec.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(installed)!r}); {code}"],
        capture_output=True,
        text=True,
        cwd=installed,
    )
    assert out.returncode == 0, out.stderr
    for line in out.stdout.split():
        assert line.startswith(str(installed)), line


def test_the_console_script_runs_the_program_with_the_report(
    installed: Path, tmp_path: Path, make_record
) -> None:
    """The installed `perfsuite` script is `perfsuite.__main__:main`, the program that hands
    the report's pages to the command line: run from the installed tree, it writes a page."""
    from perfsuite.record import write_record

    (entry_points,) = installed.glob("perfsuite-*.dist-info/entry_points.txt")
    assert "perfsuite = perfsuite.__main__:main" in entry_points.read_text().splitlines()
    run = write_record(tmp_path / "run", make_record([(1, 2.0, 0.95)]))
    page = tmp_path / "page.html"
    script = installed / "bin" / "perfsuite"
    code = (
        f"import runpy, sys; sys.path.insert(0, {str(installed)!r}); "
        f"sys.argv = [{str(script)!r}, 'report', {str(run)!r}, '-o', {str(page)!r}]; "
        f"runpy.run_path({str(script)!r}, run_name='__main__')"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(page)
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert "perfsuite report: r1" in page.read_text()
