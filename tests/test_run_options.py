"""One source of run options (runner/options.py): `perfsuite run`'s flags, the run flags of
`perfsuite study`, the study file's [run] table and a study's run options are built from
`RunOptions`' field metadata. The expected flags, choices and parsed options below are literal
values taken from the command line as it was written flag by flag, so a flag that is lost,
renamed or read differently fails here."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from perfsuite.cli import build_parser
from perfsuite.cli.run_flags import options_from_args
from perfsuite.cli.study_cmd import spec_dict
from perfsuite.runner.options import RunOptions, option_flags
from perfsuite.study.spec import RunSettings, StudyError, spec_from_dict, study_settings

# command -> (visible flags, hidden flags)
FLAGS = {
    "run": (
        [
            "--all-epochs",
            "--batch-size",
            "--counters",
            "--data-dir",
            "--device",
            "--download",
            "--epochs",
            "--eval-from",
            "--framework",
            "--history",
            "--inference-limit",
            "--instance-type",
            "--list-switches",
            "--no-capture",
            "--no-peaks",
            "--nproc",
            "--out",
            "--parallel",
            "--price",
            "--profile-seconds",
            "--profile-steps",
            "--profiler",
            "--quiet",
            "--recipe",
            "--repeats",
            "--seed",
            "--set",
            "--switch",
            "--synthetic",
            "--threads",
            "--threshold",
            "workload",
        ],
        ["--replay-window"],
    ),
    "study lesion": (
        [
            "--all-epochs",
            "--batch-size",
            "--corruption-limit",
            "--corruptions",
            "--cpus-per-run",
            "--data-dir",
            "--device",
            "--epochs",
            "--eval-from",
            "--executor",
            "--framework",
            "--gpus-per-run",
            "--json",
            "--no-capture",
            "--opts",
            "--out",
            "--parallel",
            "--quiet",
            "--ray-address",
            "--recipe",
            "--repeats",
            "--seed",
            "--set",
            "--switch",
            "--synthetic",
            "--threads",
            "--threshold",
            "workload",
        ],
        [],
    ),
    "study factor": (
        [
            "--all-epochs",
            "--batch-size",
            "--corruption-limit",
            "--corruptions",
            "--cpus-per-run",
            "--data-dir",
            "--device",
            "--epochs",
            "--eval-from",
            "--executor",
            "--framework",
            "--gpus-per-run",
            "--json",
            "--no-capture",
            "--opts",
            "--out",
            "--parallel",
            "--quiet",
            "--ray-address",
            "--recipe",
            "--repeats",
            "--seed",
            "--set",
            "--switch",
            "--synthetic",
            "--threads",
            "--threshold",
            "workload",
        ],
        [],
    ),
    "study batch": (
        [
            "--all-epochs",
            "--batch-size",
            "--corruption-limit",
            "--corruptions",
            "--cpus-per-run",
            "--data-dir",
            "--device",
            "--epochs",
            "--eval-from",
            "--executor",
            "--framework",
            "--gpus-per-run",
            "--json",
            "--lr-rule",
            "--no-capture",
            "--out",
            "--parallel",
            "--quiet",
            "--ray-address",
            "--recipe",
            "--repeats",
            "--seed",
            "--set",
            "--sizes",
            "--switch",
            "--synthetic",
            "--threads",
            "--threshold",
            "workload",
        ],
        [],
    ),
    "study scaling": (
        [
            "--all-epochs",
            "--batch-size",
            "--corruption-limit",
            "--corruptions",
            "--cpus-per-run",
            "--data-dir",
            "--device",
            "--epochs",
            "--eval-from",
            "--executor",
            "--framework",
            "--gpus-per-run",
            "--json",
            "--lr-rule",
            "--no-capture",
            "--nproc",
            "--out",
            "--parallel",
            "--quiet",
            "--ray-address",
            "--recipe",
            "--repeats",
            "--seed",
            "--set",
            "--switch",
            "--synthetic",
            "--threads",
            "--threshold",
            "workload",
        ],
        [],
    ),
    "study run": (
        [
            "--cpus-per-run",
            "--executor",
            "--gpus-per-run",
            "--json",
            "--out",
            "--parallel",
            "--quiet",
            "--ray-address",
            "source",
        ],
        [],
    ),
    "study show": (["--json", "-o/--output", "folder"], []),
}

CHOICES = {
    "run": {
        "--framework": ["pytorch", "tensorflow"],
        "--counters": ["ncu", "cupti"],
        "--profiler": ["nsys"],
    },
    "study lesion": {"--framework": ["pytorch", "tensorflow"], "--executor": ["local", "ray"]},
    "study factor": {"--framework": ["pytorch", "tensorflow"], "--executor": ["local", "ray"]},
    "study batch": {
        "--lr-rule": ["linear", "sqrt", "none"],
        "--framework": ["pytorch", "tensorflow"],
        "--executor": ["local", "ray"],
    },
    "study scaling": {
        "--lr-rule": ["linear", "sqrt", "none"],
        "--framework": ["pytorch", "tensorflow"],
        "--executor": ["local", "ray"],
    },
    "study run": {"--executor": ["local", "ray"]},
    "study show": {},
}

# flags that take a value (the others are on/off)
TAKES_VALUE = {
    "run": [
        "--batch-size",
        "--counters",
        "--data-dir",
        "--device",
        "--epochs",
        "--eval-from",
        "--framework",
        "--history",
        "--inference-limit",
        "--instance-type",
        "--nproc",
        "--out",
        "--parallel",
        "--price",
        "--profile-seconds",
        "--profile-steps",
        "--profiler",
        "--recipe",
        "--repeats",
        "--replay-window",
        "--seed",
        "--set",
        "--switch",
        "--threads",
        "--threshold",
        "workload",
    ],
    "study lesion": [
        "--batch-size",
        "--corruption-limit",
        "--cpus-per-run",
        "--data-dir",
        "--device",
        "--epochs",
        "--eval-from",
        "--executor",
        "--framework",
        "--gpus-per-run",
        "--opts",
        "--out",
        "--parallel",
        "--ray-address",
        "--recipe",
        "--repeats",
        "--seed",
        "--set",
        "--switch",
        "--threads",
        "--threshold",
        "workload",
    ],
    "study factor": [
        "--batch-size",
        "--corruption-limit",
        "--cpus-per-run",
        "--data-dir",
        "--device",
        "--epochs",
        "--eval-from",
        "--executor",
        "--framework",
        "--gpus-per-run",
        "--opts",
        "--out",
        "--parallel",
        "--ray-address",
        "--recipe",
        "--repeats",
        "--seed",
        "--set",
        "--switch",
        "--threads",
        "--threshold",
        "workload",
    ],
    "study batch": [
        "--batch-size",
        "--corruption-limit",
        "--cpus-per-run",
        "--data-dir",
        "--device",
        "--epochs",
        "--eval-from",
        "--executor",
        "--framework",
        "--gpus-per-run",
        "--lr-rule",
        "--out",
        "--parallel",
        "--ray-address",
        "--recipe",
        "--repeats",
        "--seed",
        "--set",
        "--sizes",
        "--switch",
        "--threads",
        "--threshold",
        "workload",
    ],
    "study scaling": [
        "--batch-size",
        "--corruption-limit",
        "--cpus-per-run",
        "--data-dir",
        "--device",
        "--epochs",
        "--eval-from",
        "--executor",
        "--framework",
        "--gpus-per-run",
        "--lr-rule",
        "--nproc",
        "--out",
        "--parallel",
        "--ray-address",
        "--recipe",
        "--repeats",
        "--seed",
        "--set",
        "--switch",
        "--threads",
        "--threshold",
        "workload",
    ],
    "study run": [
        "--cpus-per-run",
        "--executor",
        "--gpus-per-run",
        "--out",
        "--parallel",
        "--ray-address",
        "source",
    ],
    "study show": ["-o/--output", "folder"],
}

RUN_FULL = [
    "run",
    "digits",
    "--data-dir",
    "D",
    "--download",
    "--out",
    "O",
    "--threshold",
    "0.9",
    "--epochs",
    "3",
    "--batch-size",
    "64",
    "--seed",
    "7",
    "--device",
    "cuda:1",
    "--framework",
    "tensorflow",
    "--recipe",
    "cpu",
    "--set",
    "lr=0.2",
    "--set",
    "width=0.5",
    "--switch",
    "bf16,channels_last",
    "--switch",
    "tta=off",
    "--synthetic",
    "--eval-from",
    "2",
    "--all-epochs",
    "--no-capture",
    "--no-peaks",
    "--profile-steps",
    "5",
    "--profile-seconds",
    "0.5",
    "--counters",
    "ncu",
    "--profiler",
    "nsys",
    "--inference-limit",
    "10",
    "--threads",
    "2",
    "--instance-type",
    "p3.2xlarge",
    "--price",
    "3.06",
    "--repeats",
    "2",
    "--parallel",
    "1",
    "--nproc",
    "2",
    "--quiet",
    "--replay-window",
    "4",
]
RUN_FULL_OPTIONS = {
    "workload": "digits",
    "framework": "tensorflow",
    "data_dir": "D",
    "out": "O",
    "threshold": "0.9",
    "epochs": 3,
    "batch_size": 64,
    "seed": 7,
    "device": "cuda:1",
    "all_epochs": True,
    "capture": False,
    "recipe": "cpu",
    "overrides": ["lr=0.2", "width=0.5"],
    "switches": ["bf16,channels_last", "tta=off"],
    "synthetic": True,
    "threads": 2,
    "counters": "ncu",
    "profiler": "nsys",
    "instance_type": "p3.2xlarge",
    "price_per_hour": 3.06,
    "group": None,
    "download": True,
    "telemetry_interval_s": 0.5,
    "profile_steps": 5,
    "profile_seconds": 0.5,
    "measure_peaks": False,
    "inference_repeats": 100,
    "inference_limit": 10,
    "progress": False,
    "eval_from": 2,
    "replay_steps": 4,
    "nproc": 2,
}
RUN_DEFAULT_OPTIONS = {
    "workload": "digits",
    "framework": "pytorch",
    "data_dir": None,
    "out": "runs",
    "threshold": None,
    "epochs": None,
    "batch_size": None,
    "seed": 0,
    "device": "cpu",
    "all_epochs": False,
    "capture": True,
    "recipe": None,
    "overrides": [],
    "switches": [],
    "synthetic": False,
    "threads": None,
    "counters": None,
    "profiler": None,
    "instance_type": None,
    "price_per_hour": None,
    "group": None,
    "download": False,
    "telemetry_interval_s": 0.5,
    "profile_steps": 3,
    "profile_seconds": 1.0,
    "measure_peaks": True,
    "inference_repeats": 100,
    "inference_limit": None,
    "progress": True,
    "eval_from": 1,
    "replay_steps": 0,
    "nproc": 1,
}

STUDY_FULL = [
    "study",
    "lesion",
    "digits",
    "--opts",
    "bf16,batch=256",
    "--repeats",
    "3",
    "--threshold",
    "95%",
    "--seed",
    "4",
    "--out",
    "S",
    "--epochs",
    "2",
    "--batch-size",
    "32",
    "--recipe",
    "cpu",
    "--set",
    "lr=0.1",
    "--switch",
    "lr_rule=linear",
    "--device",
    "cuda",
    "--framework",
    "tensorflow",
    "--data-dir",
    "D",
    "--synthetic",
    "--no-capture",
    "--eval-from",
    "2",
    "--all-epochs",
    "--threads",
    "3",
    "--corruptions",
    "--corruption-limit",
    "20",
]
STUDY_FULL_SPEC = {
    "kind": "lesion",
    "workload": "digits",
    "options": ["bf16", "batch=256"],
    "sizes": [],
    "lr_rule": "linear",
    "nprocs": [],
    "switches": ["lr_rule=linear"],
    "repeats": 3,
    "threshold": 0.95,
    "seed": 4,
    "run": {
        "epochs": 2,
        "batch_size": 32,
        "recipe": "cpu",
        "set": ["lr=0.1"],
        "device": "cuda",
        "data_dir": "D",
        "synthetic": True,
        "capture": False,
        "all_epochs": True,
        "eval_from": 2,
        "threads": 3,
        "framework": "tensorflow",
    },
    "eval": {"corruptions": True, "limit": 20, "families": []},
}
STUDY_DEFAULT_SPEC = {
    "kind": "factor",
    "workload": "digits",
    "options": ["bf16"],
    "sizes": [],
    "lr_rule": "linear",
    "nprocs": [],
    "switches": [],
    "repeats": 1,
    "threshold": None,
    "seed": 0,
    "run": {
        "epochs": None,
        "batch_size": None,
        "recipe": None,
        "set": [],
        "device": "cpu",
        "data_dir": None,
        "synthetic": False,
        "capture": True,
        "all_epochs": False,
        "eval_from": 1,
        "threads": None,
        "framework": "pytorch",
    },
    "eval": {"corruptions": False, "limit": None, "families": []},
}


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise KeyError(name)


def _command(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for part in name.split():
        parser = _subparser(parser, part)
    return parser


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {
        "/".join(a.option_strings) or a.dest: a
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    }


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_every_flag_is_kept_with_its_choices_and_value(name):
    flags = _flags(_command(name))
    visible = sorted(k for k, a in flags.items() if a.help is not argparse.SUPPRESS)
    hidden = sorted(k for k, a in flags.items() if a.help is argparse.SUPPRESS)
    assert (visible, hidden) == FLAGS[name]
    assert {k: list(a.choices) for k, a in flags.items() if a.choices} == CHOICES[name]
    takes = sorted(k for k, a in flags.items() if a.nargs != 0)
    assert takes == TAKES_VALUE[name]
    help_text = _command(name).format_help()
    for flag in visible:
        assert flag.split("/")[-1] in help_text


def test_run_command_line_gives_the_same_options():
    parser = build_parser()
    full = dataclasses.asdict(options_from_args(parser.parse_args(RUN_FULL)))
    assert full == RUN_FULL_OPTIONS
    default = dataclasses.asdict(options_from_args(parser.parse_args(["run", "digits"])))
    assert default == RUN_DEFAULT_OPTIONS
    # every field of RunOptions has this default, so the flag defaults are the options' own
    assert default == dataclasses.asdict(RunOptions("digits"))


def test_fixed_fields_replace_the_parsed_ones():
    args = build_parser().parse_args(["run", "digits", "--seed", "3"])
    group = {"id": "g", "index": 1, "size": 2}
    opts = options_from_args(args, seed=4, group=group)
    assert (opts.seed, opts.group) == (4, group)


def test_study_command_line_gives_the_same_study():
    parser = build_parser()
    spec = spec_from_dict(spec_dict(parser.parse_args(STUDY_FULL)), "command line")
    assert spec.to_dict() == STUDY_FULL_SPEC
    args = parser.parse_args(["study", "factor", "digits", "--opts", "bf16"])
    assert spec_from_dict(spec_dict(args), "command line").to_dict() == STUDY_DEFAULT_SPEC


def test_study_file_run_table_is_the_options_a_study_shares():
    keys = [f.name for f in dataclasses.fields(RunSettings)]
    assert sorted(keys) == sorted(
        ["epochs", "batch_size", "recipe", "set", "device", "data_dir", "synthetic", "capture",
         "all_epochs", "eval_from", "threads", "framework"]
    )  # fmt: skip
    shared = {flag.study: f.name for f, flag in study_settings()}
    assert shared["set"] == "overrides" and shared["all_epochs"] == "all_epochs"
    # each value is checked by its option's kind, naming the field
    base = {"kind": "lesion", "workload": "digits", "options": ["bf16"]}
    for run, field in (
        ({"eval_from": 0}, "run.eval_from"),
        ({"threads": True}, "run.threads"),
        ({"framework": "jax"}, "run.framework"),
        ({"synthetic": "yes"}, "run.synthetic"),
        ({"device": 3}, "run.device"),
        ({"set": [1]}, "run.set"),
        ({"price_per_hour": 1.0}, "run.price_per_hour"),
    ):
        with pytest.raises(StudyError, match=f"^x.toml: field {field}: "):
            spec_from_dict({**base, "run": run}, "x.toml")


def test_study_run_options_carry_every_shared_setting(tmp_path):
    from perfsuite.study.execute import run_options
    from perfsuite.study.folder import Study
    from perfsuite.study.plan import Config

    run = {
        "epochs": 2, "batch_size": 8, "recipe": "cpu", "set": ["lr=0.1"], "device": "cuda",
        "data_dir": "D", "synthetic": True, "capture": False, "all_epochs": True,
        "eval_from": 2, "threads": 3, "framework": "tensorflow",
    }  # fmt: skip
    spec = spec_from_dict(
        {"kind": "factor", "workload": "digits", "options": ["bf16"], "threshold": 0.5,
         "repeats": 2, "run": run},
        "x.toml",
    )  # fmt: skip
    config = Config(0, "base", "the baseline", ("bf16",), 16, "configs/00-base")
    study = Study(tmp_path, "sid", spec, [config], {})
    opts = run_options(study, config, 1, 5)
    got = dataclasses.asdict(opts)
    for f, flag in study_settings():
        expected = run[flag.study] if f.name != "batch_size" else 16  # the plan's batch size
        assert got[f.name] == expected, f.name
    assert (opts.seed, opts.switches, opts.threshold) == (5, ["bf16"], 0.5)
    assert opts.group == {"id": "sid:base", "index": 1, "size": 2}
    assert opts.out == str(tmp_path / "configs/00-base")


def test_every_option_flag_is_a_run_flag():
    run_flags = _flags(_command("run"))
    names = {name for key in run_flags for name in key.split("/")}
    for f, flag in option_flags():
        assert flag.name in names, f.name
