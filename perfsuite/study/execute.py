"""Run a study: plan it, open (or resume) its folder, run what is missing through an executor.

Every run is an ordinary run record in `configs/NN-name/`, grouped per configuration
(`group.id` = `<study id>:<configuration>`), so `perfsuite stability` on a configuration
folder sees its repeats as one group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from perfsuite.record import new_run_id
from perfsuite.runner.launch.executor import Executor, Job, JobResult, outcome
from perfsuite.runner.routes.run import RunOptions
from perfsuite.study.folder import (
    MANIFEST,
    Study,
    config_records,
    load_study,
    new_manifest,
    pending,
    refresh_runs,
    write_manifest,
)
from perfsuite.study.plan import Config, plan
from perfsuite.study.robustness import evaluate_run
from perfsuite.study.spec import StudyError, StudySpec, study_settings
from perfsuite.workloads import get_workload


def open_study(spec: StudySpec, out: str | Path | None) -> Study:
    """Plan `spec` against its workload and create its folder, or reopen the folder of the same
    study (resume). A folder holding a different study is an error, never overwritten."""
    try:
        wl = get_workload(spec.workload, spec.run.framework)
    except (KeyError, ValueError) as exc:
        raise StudyError(str(exc).strip("'\"")) from None
    if wl.needs_data_dir and not spec.run.data_dir and not spec.run.synthetic:
        raise StudyError(f"{spec.workload} needs run.data_dir (--data-dir DIR)")
    configs = plan(spec, wl.switches, wl.name)
    study_id = new_run_id(f"study-{spec.kind}-{wl.name or 'workload'}")
    path = Path(out) if out else Path("runs") / "studies" / study_id
    if (path / MANIFEST).exists():
        study = load_study(path)
        if study.spec != spec:
            raise StudyError(
                f"{path / MANIFEST}: field spec: this folder holds a different study; "
                "resume it with `perfsuite study run DIR` or choose another --out"
            )
        if [c.to_dict() for c in study.configs] != [c.to_dict() for c in configs]:
            raise StudyError(f"{path / MANIFEST}: field configurations: differ from the plan")
        return study
    if path.exists() and any(path.iterdir()):
        raise StudyError(f"{path}: exists and is not a study folder (no {MANIFEST})")
    study = Study(path, study_id, spec, configs, new_manifest(study_id, spec, configs))
    write_manifest(study)
    return study


def run_options(study: Study, config: Config, repeat: int, seed: int) -> RunOptions:
    """The options of one run: the shared run settings plus the configuration's switches."""
    shared = {f.name: getattr(study.spec.run, str(flag.study)) for f, flag in study_settings()}
    shared = {k: list(v) if isinstance(v, list) else v for k, v in shared.items()}
    return RunOptions(
        **{
            **shared,
            "batch_size": config.batch_size,  # the plan's: the configuration's or the shared one
        },
        workload=study.spec.workload,
        out=str(study.path / config.folder),
        threshold=study.spec.threshold,
        seed=seed,
        switches=list(config.switches),
        nproc=config.nproc,
        group={
            "id": f"{study.study_id}:{config.name}",
            "index": repeat,
            "size": study.spec.repeats,
        },
    )


def evaluate_robustness(study: Study, say: Callable[[str], None]) -> None:
    """The study's generalization checks on every finished run, after all runs: evaluating
    while other runs of the study train would slow their clocks. A failing evaluation is
    reported and leaves the run record as it was."""
    for config in study.configs:
        for rec in config_records(study, config):
            run_dir = Path(rec["_path"]).parent
            try:
                what = evaluate_run(run_dir, study.spec.eval, study.spec.run.device)
            except (ValueError, NotImplementedError, OSError) as exc:
                what = f"corruptions failed: {str(exc).splitlines()[0] if str(exc) else exc}"
            say(f"[study] {config.name} {run_dir.name}: {what}")


def run_study(
    study: Study,
    executor: Executor,
    progress: Callable[[str], None] | None = None,
    show_run_progress: bool = True,
) -> list[JobResult]:
    """Run every run that has no finished record yet; the manifest is refreshed after each."""
    todo = pending(study)
    total = len(study.configs) * study.spec.repeats
    say = progress or (lambda _msg: None)
    say(f"[study] {study.path}: {total - len(todo)} of {total} runs already finished")
    jobs = [
        Job(
            replace(run_options(study, c, r, seed), progress=show_run_progress),
            key=c.name,
            label=f"seed {seed}",
        )
        for c, r, seed in todo
    ]
    finished = {
        c.name: study.spec.repeats - sum(1 for t in todo if t[0] is c) for c in study.configs
    }

    def on_start(job: Job) -> None:
        say(f"[study] {job.key}: started {job.label}")

    def on_result(res: JobResult) -> None:
        finished[res.job.key] += 1
        refresh_runs(study)
        write_manifest(study)
        what = res.error or outcome(res.run_dir)
        n, total = finished[res.job.key], study.spec.repeats
        say(f"[study] {res.job.key}: {n}/{total} done ({res.job.label}: {what})")

    results = executor.run(jobs, on_start, on_result)
    refresh_runs(study)
    write_manifest(study)
    if study.spec.eval.corruptions:
        evaluate_robustness(study, say)
    fatal = [r for r in results if r.fatal]
    if fatal:
        raise StudyError(f"configuration {fatal[0].job.key!r}: {fatal[0].error}")
    return results
