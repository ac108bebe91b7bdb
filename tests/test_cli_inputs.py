"""Input rules of the CLI: fractions, record paths, broken pipes, complete
--json, one duration/money/unit style, one --top default, removed spellings refused, help text."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from perfsuite import fmt
from perfsuite.__main__ import main
from perfsuite.cli import build_parser
from perfsuite.cli.common import TOP_DEFAULT, CLIError, fraction, resolve_run
from perfsuite.record import write_record

ROOT = Path(__file__).resolve().parents[1]


# -- thresholds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"), [("0.98", 0.98), ("98%", 0.98), ("1", 1.0), ("0", 0.0), ("92.5%", 0.925)]
)
def test_fraction_accepts_fractions_and_explicit_percent(text, value):
    assert fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["98", "1.5", "-0.1", "150%", "nan", "inf", "x", "-5%"])
def test_fraction_refuses_out_of_range_and_non_numbers(text):
    with pytest.raises(argparse.ArgumentTypeError):
        fraction(text)


def test_run_threshold_98_is_an_error_that_suggests_percent(capsys):
    # checked once the workload is known: a loss (gpt's val_loss) takes any value >= 0
    assert main(["run", "digits", "--threshold", "98"]) == 2
    err = capsys.readouterr().err
    assert "outside 0..1" in err and "98%" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["run", "gpt", "--threshold", "-1", "--synthetic"]) == 2
    assert "not a finite number >= 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "digits", "--epochs", "0"],
        ["run", "digits", "--batch-size", "0"],
        ["run", "digits", "--price", "-5"],
        ["run", "digits", "--repeats", "0"],
        ["run", "digits", "--eval-from", "0"],
        ["run", "digits", "--threads", "0"],
        ["run", "digits", "--profile-seconds", "-1"],
        ["stability", "x", "--threshold", "150%"],
        ["thresholds", "x", "--thresholds", "0.9,-5%"],
        ["study", "lesion", "digits", "--opts", "bf16", "--threshold", "2"],
    ],
)
def test_bad_numbers_are_refused_before_any_work(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert any(why in err for why in ("outside 0..1", "is not >= 1", "finite number >= 0")), err


def test_counters_on_cpu_is_refused_before_setup(capsys):
    assert main(["run", "digits", "--counters", "cupti"]) == 2
    assert "--counters cupti needs an NVIDIA GPU" in capsys.readouterr().err


def test_thresholds_list_takes_percent():
    from perfsuite.cli.thresholds_cmd import _fractions

    assert _fractions("90%,0.95,2.7") == pytest.approx([0.9, 0.95, 2.7])  # 2.7: perplexity


# -- a record argument: file, run folder, group folder ----------------------------------


def _group(tmp_path, make_record, n):
    group = tmp_path / "group"
    for i in range(n):
        write_record(group / f"run{i}", make_record([(1, 1.0 + i, 0.95)], run_id=f"run{i}"))
    return group


def test_resolve_run_file_folder_and_group_of_one(tmp_path, make_record):
    group = _group(tmp_path, make_record, 1)
    assert resolve_run(str(group)) == group / "run0" / "run.json"
    assert resolve_run(str(group / "run0")) == group / "run0" / "run.json"
    assert resolve_run(str(group / "run0" / "run.json")) == group / "run0" / "run.json"


def test_resolve_run_group_of_several_lists_them(tmp_path, make_record):
    group = _group(tmp_path, make_record, 3)
    with pytest.raises(CLIError) as exc:
        resolve_run(str(group))
    msg = str(exc.value)
    assert "holds 3 runs" in msg and "run0" in msg and "run2" in msg and "\n" not in msg


def test_roofline_on_group_folder_names_its_runs(tmp_path, make_record, capsys):
    group = _group(tmp_path, make_record, 2)
    assert main(["roofline", str(group)]) == 2
    err = capsys.readouterr().err
    assert "holds 2 runs" in err and "file not found" not in err


# -- broken pipe, complete JSON ----------------------------------------------------------


def test_broken_pipe_ends_quietly(tmp_path):
    """`perfsuite ... --json | head -c 1`: exit 0 and nothing on stderr."""
    code = "import sys; from perfsuite.cli import main; sys.exit(main(['validate', sys.argv[1]]))"
    run_dir = tmp_path / "r"
    from perfsuite.record import new_record

    task = {"metric": "top1", "threshold": 0.9, "name": "t"}
    for i in range(400):  # enough lines to overflow the pipe buffer after head exits
        write_record(run_dir / f"r{i}", new_record(run_id=f"r{i}", task=task))
    proc = subprocess.run(
        f'{sys.executable} -c "{code}" {run_dir} | head -c 1',
        shell=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_timeline_json_is_never_cut_by_top(tmp_path, capsys):
    from tests.test_timeline_synthetic import scenario, write_trace

    trace = write_trace(tmp_path / "t.json", scenario())
    assert main(["timeline", str(trace), "--json", "--top", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["time_unit"] == "s"
    assert len(doc["traces"][0]["top_kernels"]) > 1
    assert main(["timeline", str(trace), "--top", "1"]) == 0
    text = capsys.readouterr().out
    kernels = text.split("top kernels")[1].split("\n\n")[0].strip().splitlines()
    assert len(kernels) == 3  # header, rule, one row


# -- one format per kind of number -------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.5, "0.50 s"), (12.345, "12.35 s"), (59.996, "60.00 s"), (60.4, "1m00s"),
     (1200.0, "20m00s"), (7200.0, "2h00m00s"), (3725.4, "1h02m05s"), (None, "n/a")],
)  # fmt: skip
def test_duration_has_one_style(seconds, text):
    assert fmt.duration(seconds) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(5e-05, "$0.0000500"), (0.000123, "$0.000123"), (0.2, "$0.20"), (1234.5, "$1,234.50"),
     (0, "$0.00"), (-0.004, "-$0.00400")],
)  # fmt: skip
def test_usd_never_uses_exponents(value, text):
    assert fmt.usd(value) == text


def test_bytes_use_si_symbols():
    assert fmt.si(40.4e6, "byte") == "40.4 MB"
    assert fmt.si(2.5e10, "byte/s") == "25 GB/s"
    assert fmt.si(9.23e8, "FLOP") == "923 MFLOP"


# -- option names, defaults and help -------------------------------------------------------


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, subsub in _subparsers(sub):
                    yield f"{name} {inner}", subsub


def test_every_top_flag_has_one_default():
    tops = {
        name: next(a.default for a in sub._actions if "--top" in a.option_strings)
        for name, sub in _subparsers(build_parser())
        if any("--top" in a.option_strings for a in sub._actions)
    }
    assert {"roofline", "timeline", "counters", "flops", "report"} <= set(tops)
    assert set(tops.values()) == {TOP_DEFAULT}


def test_help_texts_show_no_doubled_percent():
    parser = build_parser()
    assert "%%" not in parser.format_help()
    for name, sub in _subparsers(parser):
        assert "%%" not in sub.format_help(), name


def test_run_help_lists_every_workload():
    from perfsuite.workloads import BUILTIN_WORKLOADS, workload_names

    sub = dict(_subparsers(build_parser()))["run"]
    (positional,) = [a for a in sub._actions if a.dest == "workload"]
    listed = positional.help.split("(", 1)[1].split(")", 1)[0].split(", ")
    # the registry may also hold workloads other tests registered in this process
    assert listed == list(BUILTIN_WORKLOADS) and "gpt" in listed
    assert set(listed) <= set(workload_names())


def test_roofline_output_flag():
    args = build_parser().parse_args(["roofline", "r", "-o", "y.html"])
    assert args.output == "y.html"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "digits", "--keep-going"],
        ["study", "lesion", "digits", "--opts", "bf16", "--keep-going"],
        ["study", "show", "f", "--html", "x.html"],
        ["counters", "t.json", "--force"],
        ["roofline", "r", "--html", "x.html"],
    ],
)
def test_removed_spellings_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    flag = next(a for a in argv if a in ("--keep-going", "--html", "--force"))
    assert f"unrecognized arguments: {flag}" in capsys.readouterr().err
    assert build_parser().parse_args(["run", "digits", "--all-epochs"]).all_epochs is True
    assert build_parser().parse_args(["run", "digits"]).all_epochs is False


def _top_help(command: str) -> str:
    sub = dict(_subparsers(build_parser()))[command]
    return next(a.help for a in sub._actions if "--top" in a.option_strings)


def test_top_help_promises_uncut_json_only_where_there_is_json():
    report = _top_help("report")
    assert report == f"ops shown per run in tables and bar charts (0: all; default {TOP_DEFAULT})"
    for command in ("roofline", "timeline", "counters", "flops"):
        assert _top_help(command).endswith("; --json output is never cut"), command


def test_no_capture_record_is_named_as_such_by_roofline(tmp_path, make_record, capsys):
    rec = make_record([(1, 1.0, 0.95)], config={"capture": False})
    write_record(tmp_path / "r", rec)
    assert main(["roofline", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "recorded with --no-capture" in err and "not from" not in err


# -- flops --input: one separator, every part a positive integer ----------------------------


@pytest.mark.parametrize(
    ("text", "shape"),
    [("3x32x32", (3, 32, 32)), ("3,32,32", (3, 32, 32)), ("(1, 3, 4)", (1, 3, 4)),
     ("(16,)", (16,)), ("3,224,224,", (3, 224, 224))],
)  # fmt: skip
def test_flops_input_shape_takes_commas_or_x(text, shape):
    from perfsuite.cli.flops_cmd import parse_shape

    assert parse_shape(text) == shape


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3,x", "--input '3,x': part 'x' is not a positive integer; expected integers like"),
        ("3,224,2x24", "--input '3,224,2x24': part '2x24' is not a positive integer (use ',' or "
         "'x' between dimensions, not both)"),
        ("3x32,32", "--input '3x32,32': part '3x32' is not a positive integer (use ','"),
        ("3,,4", "--input '3,,4': part 2 is empty"),
        ("3x", "--input '3x': part 2 is empty"),
        ("", "--input '': part 1 is empty"),
        ("3,1.5", "--input '3,1.5': part '1.5' is not a positive integer"),
        ("3,-2", "--input '3,-2': part '-2' is not a positive integer"),
        ("0x4", "--input '0x4': part '0' is zero"),
    ],
)  # fmt: skip
def test_flops_bad_input_shape_is_refused_before_the_model(text, message, capsys):
    # an unknown module: the error must come from --input, before any model is resolved
    assert main(["flops", "no_such_module_xyz:net", "--input", text]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"perfsuite: error: {message}"), last


def test_a_missing_command_module_fails_the_parser(monkeypatch):
    """Every listed command is built: a module that cannot be imported is an error, not a
    command left out of `perfsuite --help`."""
    import perfsuite.cli

    monkeypatch.setattr(perfsuite.cli, "COMMANDS", [*perfsuite.cli.COMMANDS, "perfsuite.cli.x"])
    with pytest.raises(ModuleNotFoundError, match=r"perfsuite\.cli\.x"):
        build_parser()


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["run", "digits", "--seed", str(2**70)], "--seed"),
        (["run", "digits", "--epochs", str(2**63)], "--epochs"),
        (["stability", "x", "--seed", str(-(2**63) - 1)], "--seed"),
        (["roofline", "x", "--top", str(2**64)], "--top"),
    ],
)
def test_an_integer_flag_out_of_range_names_the_flag(capsys, argv, flag):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert f"argument {flag}: " in line and "outside the 64-bit integer range" in line
    assert build_parser().parse_args(["run", "digits", "--seed", str(2**63 - 1)]).seed == 2**63 - 1
