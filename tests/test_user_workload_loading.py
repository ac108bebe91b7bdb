"""Loading a user's `FILE.py:NAME` / `module:NAME` workload (perfsuite/workloads/user.py) and
the absolute path a run or study keeps of it (so `perfsuite eval`/`infer` and a resumed study
find the file from any directory). Every failure is one line naming the file, never a traceback;
so is `infer`/`eval` of a `perfsuite.track` record, whose model only the user's code can build.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfsuite.workloads import get_workload
from perfsuite.workloads.user import absolute_spec, load_workload_class, module_name

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = """\
from perfsuite.workloads.base import Workload
from {sibling} import WIDTH


class W(Workload):
    name = "{name}"
    width = WIDTH
"""
PLAIN = (
    "from perfsuite.workloads.base import Workload\n\n\nclass W(Workload):\n    name = 'okmod'\n"
)
DIGITS = PLAIN.replace("base import Workload", "digits.workload import DigitsWorkload").replace(
    "W(Workload)", "W(DigitsWorkload)"
)


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _cli(args: list[str], cwd: Path, script: bool = False) -> subprocess.CompletedProcess:
    exe = [str(Path(sys.executable).parent / "perfsuite")] if script else [sys.executable, "-m"]
    cmd = exe + ([] if script else ["perfsuite"]) + args
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the checkout, not the cwd, is importable
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_a_file_imports_its_siblings_from_any_directory(tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    _write(folder, "helper_sib1.py", "WIDTH = 8\n")
    path = _write(folder, "sib1.py", WORKLOAD.format(sibling="helper_sib1", name="sib1"))
    monkeypatch.chdir(tmp_path)
    before = list(sys.path)
    wl = load_workload_class(f"{path}:W")()
    assert (wl.name, wl.width) == ("sib1", 8)
    assert sys.path == before  # the folder was there only while importing


def test_module_name_is_stable_across_processes(tmp_path):
    path = _write(tmp_path, "stable.py", "X = 1\n")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    assert module_name(path) == f"perfsuite_user_stable_{digest}"
    code = (
        "import sys, pathlib; from perfsuite.workloads.user import module_name; "
        "print(module_name(pathlib.Path(sys.argv[1])))"
    )
    for seed in ("1", "2"):  # str hashes differ between these two processes
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
        assert out.stdout.strip() == module_name(path), out.stderr


def test_a_class_pickled_in_one_process_loads_in_another(tmp_path):
    path = _write(tmp_path, "pk.py", PLAIN)
    code = textwrap.dedent(
        """\
        import pickle, sys
        from perfsuite.workloads.user import load_workload_class
        cls = load_workload_class(sys.argv[1])
        if sys.argv[2] == "dump":
            sys.stdout.write(pickle.dumps(cls).hex())
        else:
            print(pickle.loads(bytes.fromhex(sys.stdin.read())) is cls)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    dump = subprocess.run(
        [sys.executable, "-c", code, f"{path}:W", "dump"],
        capture_output=True,
        text=True,
        env={**env, "PYTHONHASHSEED": "1"},
        timeout=120,
    )
    assert dump.returncode == 0, dump.stderr
    load = subprocess.run(
        [sys.executable, "-c", code, f"{path}:W", "load"],
        input=dump.stdout,
        capture_output=True,
        text=True,
        env={**env, "PYTHONHASHSEED": "2"},
        timeout=120,
    )
    assert load.stdout.strip() == "True", load.stderr[-1000:]


def test_a_syntax_error_is_one_line_with_file_and_line(tmp_path):
    path = _write(tmp_path, "bad_syntax.py", "X = 1\ndef oops(:\n")
    with pytest.raises(ValueError) as err:
        load_workload_class(f"{path}:W")
    msg = str(err.value)
    assert f"{path}:2: SyntaxError: " in msg and "\n" not in msg
    assert not any(m.startswith("perfsuite_user_bad_syntax") for m in sys.modules)


def test_an_error_while_importing_names_the_file_and_line(tmp_path):
    path = _write(tmp_path, "raises_at_import.py", "X = 1\n\nraise RuntimeError('no GPU here')\n")
    with pytest.raises(ValueError) as err:
        load_workload_class(f"{path}:W")
    assert str(err.value).startswith(f"workload '{path}:W': import failed at {path}:3:")
    assert str(err.value).endswith("RuntimeError: no GPU here")


def test_a_factory_must_return_a_workload(tmp_path):
    path = _write(
        tmp_path,
        "factories.py",
        """\
        from perfsuite.workloads.base import Workload

        class Named(Workload):
            name = "named"

        def good():
            return Named()

        def make():
            return 42
        """,
    )
    assert get_workload(f"{path}:good").name == "named"
    with pytest.raises(ValueError) as err:
        get_workload(f"{path}:make")
    assert str(err.value).startswith(f"workload '{path}:make': make() returned int")


def test_a_module_spec_is_found_in_the_current_directory(tmp_path, monkeypatch):
    _write(tmp_path, "okmod_cwd.py", PLAIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_workload_class("okmod_cwd:W")().name == "okmod"
    assert str(tmp_path) not in sys.path
    with pytest.raises(ValueError) as err:
        load_workload_class("no_such_module_here:W")
    assert "no module no_such_module_here" in str(err.value)


def test_the_console_script_runs_a_module_from_its_directory(tmp_path):
    script = Path(sys.executable).parent / "perfsuite"
    if not script.exists():
        pytest.skip("no perfsuite console script next to this Python")
    _write(tmp_path, "okmod_cli.py", DIGITS)
    proc = _cli(["run", "okmod_cli:W", "--list-switches"], tmp_path, script=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("switches of okmod_cli:W:")


def test_cli_errors_of_a_user_file_are_one_line(tmp_path):
    _write(tmp_path, "bad.py", "def oops(:\n")
    _write(tmp_path, "fact.py", "def make():\n    return 42\n")
    for spec, text in (
        ("bad.py:X", f"{tmp_path / 'bad.py'}:1: SyntaxError"),
        ("fact.py:make", "make() returned int, not a perfsuite Workload"),
    ):
        proc = _cli(["run", spec, "--list-switches"], tmp_path)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0], proc.stderr


def test_run_and_study_keep_the_absolute_path_of_a_workload_file(tmp_path, monkeypatch):
    from perfsuite.cli import build_parser
    from perfsuite.cli.run_flags import options_from_args
    from perfsuite.cli.study_cmd import spec_dict

    monkeypatch.chdir(ROOT)
    rel = "examples/my_workload.py:TinyDigits"
    full = f"{ROOT / 'examples' / 'my_workload.py'}:TinyDigits"
    assert absolute_spec(rel) == full
    assert absolute_spec("digits") == "digits" and absolute_spec("pkg.mod:W") == "pkg.mod:W"
    args = build_parser().parse_args(["run", rel])
    assert options_from_args(args, seed=0).workload == full
    args = build_parser().parse_args(["study", "lesion", rel, "--opts", "bf16"])
    assert spec_dict(args)["workload"] == full


def test_a_study_file_workload_is_kept_absolute(tmp_path, monkeypatch):
    pytest.importorskip("tomllib")
    import perfsuite.cli.study_cmd as study_cmd
    from perfsuite.cli import build_parser

    toml = _write(
        tmp_path / "elsewhere",
        "study.toml",
        'kind = "lesion"\nworkload = "examples/my_workload.py:TinyDigits"\noptions = ["bf16"]\n',
    )
    seen = []
    monkeypatch.setattr(study_cmd, "_execute", lambda spec, out, args: seen.append(spec) or 0)
    monkeypatch.chdir(ROOT)
    assert study_cmd._from_source(build_parser().parse_args(["study", "run", str(toml)])) == 0
    assert seen[0].workload == f"{ROOT / 'examples' / 'my_workload.py'}:TinyDigits"


@pytest.mark.parametrize("command", [["infer"], ["eval", "shift", "--corruptions"]])
def test_infer_and_eval_of_a_track_run_say_why_in_one_line(command, make_record, tmp_path):
    from perfsuite.record import write_record

    rec = make_record([(1, 1.0, 0.95)], run_id="track1")
    rec["config"] = {"source": "perfsuite.track (user training loop)", "device": "cpu"}
    rec["task"]["workload"] = "user loop"
    run_dir = write_record(tmp_path / "track1", rec).parent
    proc = _cli([*command, str(run_dir)], tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert err.startswith(f"perfsuite: error: {run_dir / 'run.json'}: field config.source: ")
    assert "perfsuite.track run" in err and "\n" not in err


def test_run_options_from_the_python_api_keep_the_absolute_path(monkeypatch):
    from perfsuite.runner import RunOptions

    monkeypatch.chdir(ROOT)
    opts = RunOptions(workload="examples/my_workload.py:TinyDigits")
    assert opts.workload == f"{ROOT / 'examples' / 'my_workload.py'}:TinyDigits"
    assert RunOptions(workload="digits").workload == "digits"
