"""Study plans, study files and the study manifest: no training, no torch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfsuite.study.folder import Study, load_study, new_manifest, write_manifest
from perfsuite.study.plan import plan
from perfsuite.study.spec import StudyError, load_study_file, spec_from_dict
from perfsuite.workloads.switches import COMMON

DIGITS = COMMON | {"label_smoothing"}


def _plan(**raw):
    spec = spec_from_dict({"workload": "digits", **raw}, "test")
    return plan(spec, DIGITS, "digits")


def test_lesion_is_full_recipe_then_minus_each_option():
    configs = _plan(kind="lesion", options=["channels_last", "bf16", "label_smoothing=0.2"])
    assert [c.name for c in configs] == [
        "full",
        "-channels_last",
        "-bf16",
        "-label_smoothing=0.2",
    ]
    assert configs[0].switches == ("channels_last", "bf16", "label_smoothing=0.2")
    assert configs[1].switches == ("bf16", "label_smoothing=0.2")
    assert configs[2].switches == ("channels_last", "label_smoothing=0.2")
    assert configs[3].switches == ("channels_last", "bf16")
    assert [c.folder for c in configs][:2] == ["configs/00-full", "configs/01-minus-channels_last"]


def test_factor_adds_options_cumulatively_in_order():
    configs = _plan(kind="factor", options="bf16,channels_last", switches=["tf32=off"])
    assert [c.name for c in configs] == ["baseline", "+bf16", "+channels_last"]
    assert [c.switches for c in configs] == [
        ("tf32=off",),
        ("tf32=off", "bf16"),
        ("tf32=off", "bf16", "channels_last"),
    ]
    assert configs[2].description == "baseline + bf16 + channels_last"


def test_batch_option_sets_the_batch_size_not_a_switch():
    configs = _plan(kind="lesion", options=["batch=256", "bf16"], switches=["lr_rule=linear"])
    assert [(c.name, c.batch_size, c.switches) for c in configs] == [
        ("full", 256, ("lr_rule=linear", "bf16")),
        ("-batch=256", None, ("lr_rule=linear", "bf16")),
        ("-bf16", 256, ("lr_rule=linear",)),
    ]


def test_batch_study_scales_lr_per_size():
    configs = _plan(kind="batch", sizes="32,128", lr_rule="sqrt", run={"batch_size": 64})
    assert [(c.name, c.batch_size, c.switches) for c in configs] == [
        ("batch=32", 32, ("lr_rule=sqrt",)),
        ("batch=128", 128, ("lr_rule=sqrt",)),
    ]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "lesion", "options": ["tta"]}, "does not support switch 'tta'"),
        ({"kind": "factor", "options": ["warp_drive"]}, "unknown switch 'warp_drive'"),
        ({"kind": "lesion", "options": ["bf16", "fp16"]}, "bf16 and fp16 exclude each other"),
        ({"kind": "factor", "options": ["bf16", "bf16"]}, "'bf16' is named more than once"),
        ({"kind": "factor", "options": ["batch=0"]}, "batch needs a positive integer"),
    ],
)
def test_bad_options_fail_before_anything_runs(raw, message):
    with pytest.raises(StudyError, match=message) as err:
        _plan(**raw)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"kind": "ablate", "options": ["bf16"]}, "field kind:"),
        ({"kind": "lesion"}, "field options:"),
        ({"kind": "batch", "sizes": []}, "field sizes:"),
        ({"kind": "lesion", "options": ["bf16"], "repeats": 0}, "field repeats: must be >= 1"),
        ({"kind": "lesion", "options": ["bf16"], "threshold": 98}, "field threshold:"),
        ({"kind": "lesion", "options": ["bf16"], "run": {"epochs": "3"}}, "field run.epochs:"),
        ({"kind": "lesion", "options": ["bf16"], "run": {"epoch": 3}}, "field run.epoch:"),
        ({"kind": "lesion", "options": ["bf16"], "colour": 1}, "field colour: unknown"),
        ({"kind": "lesion", "options": ["bf16"], "eval": {"corruptions": 1}}, "field eval.corr"),
        ({"kind": "lesion", "options": ["bf16"], "eval": {"limit": 1}}, "field eval.limit: must"),
        ({"kind": "lesion", "options": ["bf16"], "eval": {"probe": True}}, "field eval.probe:"),
    ],
)
def test_spec_errors_name_the_field(raw, field):
    with pytest.raises(StudyError) as err:
        spec_from_dict({"workload": "digits", **raw}, "my.toml")
    assert str(err.value).startswith(f"my.toml: {field}")


def test_toml_study_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(
        'kind = "factor"\nworkload = "digits"\noptions = ["channels_last", "bf16"]\n'
        "repeats = 3\nthreshold = 0.97\n[run]\nepochs = 5\ncapture = false\n"
        'set = ["width=16"]\n'
    )
    spec = load_study_file(f)
    assert (spec.kind, spec.options, spec.repeats, spec.threshold) == (
        "factor",
        ["channels_last", "bf16"],
        3,
        0.97,
    )
    assert (spec.run.epochs, spec.run.capture, spec.run.set) == (5, False, ["width=16"])
    f.write_text('kind = "factor"\nworkload = "digits"\noptions = ["bf16"]\nrepeats = "x"\n')
    with pytest.raises(StudyError, match=rf"^{f}: field repeats: expected an integer"):
        load_study_file(f)
    f.write_text("kind = \n")
    with pytest.raises(StudyError, match="not valid TOML"):
        load_study_file(f)


def _study(tmp_path):
    spec = spec_from_dict(
        {"kind": "lesion", "workload": "digits", "options": ["bf16", "channels_last"]}, "t"
    )
    configs = plan(spec, DIGITS, "digits")
    study = Study(tmp_path, "sid", spec, configs, new_manifest("sid", spec, configs))
    write_manifest(study)
    return study


def test_manifest_round_trip_and_field_errors(tmp_path):
    study = _study(tmp_path)
    loaded = load_study(tmp_path)
    assert loaded.spec == study.spec and loaded.configs == study.configs
    assert not list(tmp_path.glob(".study.json.*"))  # atomic write left no temp file
    raw = json.loads((tmp_path / "study.json").read_text())
    raw["configurations"][1]["folder"] = "../elsewhere"
    (tmp_path / "study.json").write_text(json.dumps(raw))
    with pytest.raises(StudyError, match=r"study.json: field configurations\[1\].folder"):
        load_study(tmp_path)
    raw["configurations"][1]["folder"] = "configs/01-x"
    raw["spec"]["repeats"] = -1
    (tmp_path / "study.json").write_text(json.dumps(raw))
    with pytest.raises(StudyError, match=r"study.json \(spec\): field repeats"):
        load_study(tmp_path)
    with pytest.raises(StudyError, match="no study manifest here"):
        load_study(tmp_path / "nothing")


def test_a_version_1_manifest_loads_with_all_epochs(tmp_path):
    _study(tmp_path)
    raw = json.loads((tmp_path / "study.json").read_text())
    raw["schema_version"] = 1
    raw["spec"]["run"]["keep_going"] = raw["spec"]["run"].pop("all_epochs")
    raw["spec"]["run"]["keep_going"] = True
    (tmp_path / "study.json").write_text(json.dumps(raw))
    loaded = load_study(tmp_path)
    assert loaded.spec.run.all_epochs is True
    assert (
        loaded.manifest["schema_version"] == 2
        and "keep_going" not in loaded.manifest["spec"]["run"]
    )


@pytest.mark.parametrize(
    ("name", "configs"),
    [
        ("digits-lesion", ["full", "-batch=256", "-channels_last", "-bf16"]),
        ("digits-factor", ["baseline", "+channels_last", "+batch=256"]),
        ("digits-batch", ["batch=32", "batch=64", "batch=128", "batch=256", "batch=512"]),
        ("cifar10-lesion", ["full", "-channels_last", "-batch=512"]),
        ("cifar10-factor", ["baseline", "+channels_last", "+batch=512"]),
    ],
)
def test_example_study_files_plan(name, configs):
    """The README's studies, as files: they load and plan what the README shows."""
    spec = load_study_file(Path(__file__).parents[1] / "examples" / "studies" / f"{name}.toml")
    assert [c.name for c in plan(spec, DIGITS, "digits")] == configs
    assert spec.repeats == (1 if name.startswith("cifar10") else 2) and not spec.run.capture
    if name == "cifar10-lesion":  # the README's robustness columns
        assert spec.eval.corruptions and spec.eval.limit == 500


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"kind": "lesion", "options": ["channels_last", "bf16"], "switches": ["channels_last"]},
            "option 'channels_last' is also in switches",
        ),
        (
            {"kind": "lesion", "options": ["lr_rule=sqrt", "bf16"], "switches": ["lr_rule=linear"]},
            "option 'lr_rule' is also in switches",
        ),
        (
            {"kind": "batch", "sizes": [32, 64], "lr_rule": "linear", "switches": ["lr_rule=sqrt"]},
            "switch 'lr_rule' in switches .* conflicts with the study's lr_rule=linear",
        ),
        (
            {"kind": "scaling", "nprocs": [1, 2], "switches": ["lr_rule=sqrt"]},
            "conflicts with the study's lr_rule=linear",
        ),
        (
            {"kind": "factor", "options": ["bf16"], "switches": ["tf32=on", "tf32=off"]},
            "switch 'tf32' is named more than once in switches",
        ),
    ],
)
def test_a_switch_given_as_option_and_in_switches_is_an_error(raw, message):
    """Before, the `-channels_last` configuration of the first kept channels_last on (from
    --switch), and lr_rule=sqrt and lr_rule=linear were both passed to the run."""
    with pytest.raises(StudyError, match=message) as err:
        _plan(**raw)
    assert "\n" not in str(err.value)


def test_cli_rejects_lr_rule_twice_before_creating_a_folder(tmp_path, capsys):
    from perfsuite.cli import main

    out = tmp_path / "study"
    args = ["study", "batch", "digits", "--sizes", "32,64", "--lr-rule", "linear"]
    assert main([*args, "--switch", "lr_rule=sqrt", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "lr_rule" in err and "--lr-rule" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_show_names_the_workload_target_before_any_run(tmp_path, capsys):
    """A study folder with no run yet: the heading says digits' metric and default threshold
    (it said `None >= None`)."""
    from perfsuite.cli import main

    _study(tmp_path)
    assert main(["study", "show", str(tmp_path)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "(sid): top1 >= 0.98;" in head and head.endswith("'full'")


def test_api_and_report_name_the_same_target_before_any_run(tmp_path):
    """One analysis of a study folder (perfsuite.study.folder.analyze_folder) for the CLI, the
    Python API and the report: none of them shows `None`."""
    import perfsuite
    from perfsuite.cli.study_cmd import analysis
    from perfsuite.report.study_section import study_section

    _study(tmp_path)
    study = perfsuite.open(tmp_path)
    assert (study.result.metric, study.result.threshold) == ("top1", 0.98)
    result, records = analysis(tmp_path)
    assert "top1 &gt;= 0.98; speed-ups" in study_section(result, records)
