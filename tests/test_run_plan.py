"""The run's plan: options resolved once and checked before anything runs, the same errors for
the command line, the Python API and the executors, and the seeds of the off-the-clock draws."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from perfsuite.runner import RunOptions, run_workload
from perfsuite.runner.launch.executor import run_in_process
from perfsuite.runner.routes.plan import OptionsError, Seeds, plan_run


def _opts(tmp_path, **kw) -> RunOptions:
    return RunOptions(workload="digits", out=str(tmp_path / "runs"), progress=False, **kw)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"counters": "ncu"}, "--counters ncu needs an NVIDIA GPU (--device cuda)"),
        ({"counters": "ncu", "device": "cuda", "capture": False}, "needs capture"),
        ({"nproc": 2, "framework": "tensorflow"}, "data-parallel runs are PyTorch only"),
        ({"nproc": 0}, "--nproc must be >= 1, got 0"),
        ({"profile_steps": -1}, "--profile-steps must be >= 0"),
        ({"inference_limit": 0}, "--inference-limit must be >= 1, got 0"),
        ({"switches": ["tta"]}, "does not support switch 'tta'"),
        ({"recipe": "nonesuch"}, "unknown recipe 'nonesuch'"),
        ({"overrides": ["lr"]}, "--set expects key=value"),
    ],
)
def test_wrong_options_are_refused_by_the_plan_before_a_run_folder_exists(tmp_path, kw, message):
    with pytest.raises(OptionsError) as err:
        run_workload(_opts(tmp_path, **kw))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "runs").exists()
    # the executors report it as fatal: every other job with these options would fail alike
    run_dir, error, fatal = run_in_process(_opts(tmp_path, **kw))
    assert (run_dir, fatal) == (None, True) and message in error


def test_a_workload_that_needs_data_is_refused_without_a_data_folder(tmp_path):
    with pytest.raises(OptionsError, match=r"^cifar10 needs --data-dir DIR"):
        plan_run(RunOptions(workload="cifar10", out=str(tmp_path)))
    plan_run(RunOptions(workload="cifar10", out=str(tmp_path), synthetic=True))


def test_the_plan_resolves_recipe_threshold_and_record_sections(tmp_path):
    plan = plan_run(_opts(tmp_path, epochs=3, batch_size=32, seed=4, overrides=["lr=0.2"]))
    assert (plan.recipe.epochs, plan.recipe.batch_size, plan.recipe.lr) == (3, 32, 0.2)
    assert plan.threshold == plan.workload.default_threshold == plan.task["threshold"]
    assert plan.config["recipe_values"]["lr"] == 0.2 and "progress" not in plan.config
    assert plan.framework == "pytorch" and plan.run_name == "digits" and plan.measures
    with pytest.raises(AttributeError):
        plan.threshold = 0.5  # type: ignore[misc]  # frozen: the stages read it, never change it


def test_the_off_the_clock_draws_have_seeds_of_their_own():
    """Fixed salts: a run's captured batches stay the same from version to version, and the
    counters replay draws the batches the profile window timed."""
    seeds = Seeds(3)
    assert (seeds.run, seeds.flop_count, seeds.window, seeds.warmup) == (3, 10_010, 20_014, 30_014)


def test_a_study_gets_the_plans_errors_before_its_folder_is_written(tmp_path):
    from perfsuite.study.execute import open_study
    from perfsuite.study.spec import StudyError, spec_from_dict

    raw = {"kind": "lesion", "workload": "digits", "options": ["bf16"]}
    spec = spec_from_dict({**raw, "run": {"recipe": "nonesuch"}}, "test")
    with pytest.raises(StudyError, match=r"^configuration 'full': unknown recipe 'nonesuch'"):
        open_study(spec, tmp_path / "study")
    assert not (tmp_path / "study").exists()


def test_repeats_with_wrong_options_stop_before_any_run_starts(tmp_path, capsys, monkeypatch):
    from perfsuite.cli import main
    from perfsuite.runner.launch import executor

    def no_child(*_a, **_k):
        raise AssertionError("a run started")

    monkeypatch.setattr(executor, "_spawn", no_child)
    out = tmp_path / "never"
    argv = ["run", "digits", "--repeats", "2", "--counters", "ncu", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == "perfsuite: error: --counters ncu needs an NVIDIA GPU (--device cuda)"
    assert not out.exists()
