"""Data-parallel runs (`run --nproc N`) and scaling studies.

The sharding, communication, launcher-error and scaling arithmetic run on constructed inputs;
two slow tests start real 2-process gloo runs of digits through torchrun.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from perfsuite.analyzers.results.distributed import world_size
from perfsuite.analyzers.runs.study import analyze_study
from perfsuite.record.tta import crossing_dict, record_crossing
from perfsuite.runner.launch.torchrun import _first_cause, check_options, threads_per_rank
from perfsuite.runner.measure.comm import comm_from_ops, comm_share
from perfsuite.runner.routes.run import RunOptions
from perfsuite.study.plan import plan
from perfsuite.study.render import render
from perfsuite.study.spec import StudyError, spec_from_dict
from perfsuite.workloads.switches import COMMON

DIGITS = COMMON | {"label_smoothing"}
CRASHING = Path(__file__).parent / "fixtures" / "crashing_workload.py"


# -- sharding ---------------------------------------------------------------------------------


def _source(n=10):
    import torch

    from perfsuite.workloads.data import InMemorySource

    x = torch.arange(n, dtype=torch.float32).reshape(n, 1)
    y = torch.arange(n)
    return InMemorySource(x, y, x[:3], y[:3], description="toy")


@pytest.mark.parametrize("n,world", [(10, 2), (10, 3), (7, 4)])
def test_shards_are_equal_disjoint_and_cover_the_epoch(n, world):
    import torch

    from perfsuite.runner.launch.shard import ShardedSource

    shards = [ShardedSource(_source(n), r, world, batch_size=2) for r in range(world)]
    seen = []
    for s in shards:
        g = torch.Generator().manual_seed(5)  # every rank seeds the run's generator alike
        labels = [int(v) for b in s.train_batches(2, g) for v in b.target]
        assert len(labels) == s.num_train == -(-n // world)
        seen.append(labels)
    flat = [v for labels in seen for v in labels]
    assert sorted(set(flat)) == list(range(n))  # together: the whole epoch
    assert len(flat) - n == (-n) % world  # padding repeats only what makes shards equal
    if n % world == 0:
        assert len(set(flat)) == len(flat)  # disjoint when nothing is padded


def test_ranks_draw_the_same_permutation_each_epoch_and_a_new_one_next_epoch():
    import torch

    from perfsuite.runner.launch.shard import ShardedSource

    a, b = (ShardedSource(_source(12), r, 2, batch_size=12) for r in (0, 1))
    ga, gb = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    e1 = [next(a.train_batches(12, ga)).target.tolist(), next(b.train_batches(12, gb)).target]
    e2 = [next(a.train_batches(12, ga)).target.tolist(), next(b.train_batches(12, gb)).target]
    assert set(e1[0]).isdisjoint(e1[1].tolist()) and set(e2[0]).isdisjoint(e2[1].tolist())
    assert e1[0] != e2[0]  # the generator advanced: a new permutation per epoch


def test_a_source_without_indexable_tensors_is_sharded_by_batch():
    import torch

    from perfsuite.runner.launch.shard import BY_BATCH, ShardedSource

    class Stream:
        num_train, num_eval, kind, description = 10, 0, "stream", "toy stream"

        def train_batches(self, batch_size, generator):
            src = _source(10)
            return src.train_batches(batch_size, generator)

    shards = [ShardedSource(Stream(), r, 2, batch_size=3) for r in (0, 1)]
    assert shards[0].method == BY_BATCH
    counts = [len(list(s.train_batches(3, torch.Generator().manual_seed(0)))) for s in shards]
    assert counts == [2, 2]  # 4 batches (3+3+3+1): 2 rounds of 2, equal steps per rank
    assert shards[0].num_train == 6


# -- communication from the timeline ----------------------------------------------------------


def test_collectives_per_step_and_share():
    ops = [
        {"op": "aten::convolution", "calls": 40, "total_time_s": 4.0},
        {"op": "gloo:all_reduce", "calls": 4, "total_time_s": 0.2},
        {"op": "c10d::allreduce_", "calls": 4, "total_time_s": 0.01},  # launch stub: not comm
        {"op": "gloo:broadcast", "calls": 8, "total_time_s": 0.04},
    ]
    comm = comm_from_ops(ops, steps=4)
    assert comm["time_per_step_s"] == pytest.approx(0.06)
    assert [o["op"] for o in comm["ops"]] == ["gloo:all_reduce", "gloo:broadcast"]
    assert comm["ops"][1]["calls_per_step"] == 2
    assert comm_share(comm["time_per_step_s"], 0.3) == pytest.approx(0.2)
    assert comm_from_ops(ops[:1], steps=4) is None and comm_share(None, 1.0) is None
    assert world_size({}) == 1 and world_size({"distributed": {"world_size": 4}}) == 4


# -- the launcher ------------------------------------------------------------------------------


def test_launcher_refuses_what_it_cannot_do_and_splits_the_cores(monkeypatch):
    opts = RunOptions(workload="digits", nproc=2)
    with pytest.raises(ValueError, match="--counters is not supported"):
        check_options(replace(opts, counters="ncu"))
    with pytest.raises(ValueError, match="at least 2"):
        check_options(replace(opts, nproc=1))
    monkeypatch.setattr("perfsuite.hostinfo.usable_cpus", lambda: 8)
    assert threads_per_rank(replace(opts, nproc=3)) == 2
    assert threads_per_rank(replace(opts, nproc=16)) == 1
    assert threads_per_rank(replace(opts, threads=5)) == 5


def test_the_error_names_the_rank_that_failed_first():
    closed = "RuntimeError: Connection closed by peer"
    failed = {0: (closed, 12.0), 1: ("RuntimeError: boom", 11.5), 2: ("Terminated: x", 11.0)}
    assert _first_cause(failed, [], 1, 3) == "rank 1 of 3 failed: RuntimeError: boom"
    assert _first_cause({0: failed[2]}, [], 1, 3) == "rank 0 of 3 failed: Terminated: x"
    assert "rank 1 ended without a reply" in _first_cause({}, [1], -9, 2)


def test_nproc_1_is_the_single_process_path(monkeypatch, tmp_path):
    """`--nproc 1` (the default) never reaches the launcher."""
    import perfsuite.runner.launch.torchrun as launch
    from perfsuite.cli import build_parser
    from perfsuite.cli.run_flags import options_from_args
    from perfsuite.runner.routes import run as loop

    def no_launch(opts):
        raise AssertionError("launcher used for one process")

    monkeypatch.setattr(launch, "launch", no_launch)
    monkeypatch.setattr(loop._Run, "execute", lambda self: ("single", self.record))
    args = build_parser().parse_args(["run", "digits", "--out", str(tmp_path)])
    opts = options_from_args(args, seed=0)
    assert opts.nproc == 1
    kind, rec = loop.run_workload(opts)
    assert kind == "single" and "distributed" not in rec


# -- scaling studies: plan and analysis --------------------------------------------------------


def test_scaling_plan_one_configuration_per_process_count():
    spec = spec_from_dict(
        {"kind": "scaling", "workload": "digits", "nprocs": "1,2,4", "run": {"batch_size": 32}},
        "test",
    )
    configs = plan(spec, DIGITS, "digits")
    assert [(c.name, c.nproc, c.batch_size) for c in configs] == [
        ("nproc=1", 1, 32),
        ("nproc=2", 2, 32),
        ("nproc=4", 4, 32),
    ]
    assert all(c.switches == ("lr_rule=linear",) for c in configs)
    assert configs[1].folder == "configs/01-nproc-2" and configs[1].to_dict()["nproc"] == 2
    with pytest.raises(StudyError, match="field nprocs: repeated"):
        spec_from_dict({"kind": "scaling", "workload": "digits", "nprocs": [2, 2]}, "f.toml")
    with pytest.raises(StudyError, match="only a scaling study takes nprocs"):
        spec_from_dict({"kind": "factor", "workload": "d", "options": ["bf16"], "nprocs": [1]}, "x")


def test_scaling_analysis_speedups_and_efficiencies(make_record):
    def rec(seed, nproc, epoch_s, metrics, per_epoch=1000, share=None):
        times = [epoch_s * (i + 1) for i in range(len(metrics))]
        r = make_record(list(zip(range(1, len(metrics) + 1), times, metrics, strict=True)))
        for i, ev in enumerate(r["evaluations"]):
            ev["samples"] = per_epoch * (i + 1)
        r["run_id"], r["config"] = f"n{nproc}s{seed}", {"seed": seed}
        r["time_to_accuracy"] = crossing_dict(record_crossing(r), "measured")
        r["status"] = "reached" if max(metrics) >= 0.9 else "not_reached"
        r["throughput"] = {"epoch_times_s": [epoch_s] * len(metrics)}
        if nproc > 1:
            comm = {"time_per_step": None, "share_of_step": share}
            r["distributed"] = {"world_size": nproc, "per_rank": [], "communication": comm}
        return r

    records = {
        # one process: 4 s epochs, reaches at epoch 2 -> TTA 8 s, 250 samples/s
        "nproc=1": [rec(0, 1, 4.0, [0.5, 0.95])],
        # two: 2.5 s epochs (1.6x throughput) but 3 epochs (bigger global batch) -> TTA 7.5 s
        "nproc=2": [rec(0, 2, 2.5, [0.4, 0.8, 0.92], share=0.25)],
    }
    manifest = {
        "study_id": "s",
        "spec": {"kind": "scaling", "workload": "toy", "repeats": 1},
        "configurations": [
            {"index": i, "name": f"nproc={n}", "description": "", "switches": [], "nproc": n}
            for i, n in enumerate((1, 2))
        ],
    }
    one, two = analyze_study(manifest, records).configs
    assert (one.nproc, two.nproc) == (1, 2)
    assert two.throughput_speedup == pytest.approx(1.6)
    assert two.scaling_efficiency == pytest.approx(0.8)
    assert two.tta_speedup == pytest.approx(8.0 / 7.5)
    assert two.tta_efficiency == pytest.approx(8.0 / 7.5 / 2)
    assert two.epochs_to_threshold.mean == 3 and one.epochs_to_threshold.mean == 2
    assert two.comm_share.mean == pytest.approx(0.25) and one.comm_share.mean is None
    text = render(analyze_study(manifest, records))
    assert "throughput efficiency" in text and "25.0%" in text and "0.80" in text


# -- real 2-process runs (torchrun, gloo) ------------------------------------------------------


def _ddp_options(tmp_path, **kw):
    base = dict(
        workload="digits",
        out=str(tmp_path),
        epochs=2,
        nproc=2,
        overrides=["width=8"],
        threshold=0.999,  # not reached in 2 epochs: both epochs run
        measure_peaks=False,
        profile_steps=2,
        profile_seconds=0.0,
        inference_repeats=5,
        progress=False,
    )
    return RunOptions(**{**base, **kw})


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory) -> dict:
    """A 2-process run of 2 epochs that reaches its low bar at epoch 1 and keeps going
    (--keep-going): both epochs run, with a profile window, and rank 0 measures inference on
    the threshold model after the other rank has left. Its record."""
    from perfsuite.record import load_record
    from perfsuite.runner import run_workload

    root = tmp_path_factory.mktemp("gloo")
    with pytest.MonkeyPatch.context() as mp:  # a private cache, as `private_cache` gives
        mp.setenv("PERFSUITE_CACHE_DIR", str(root / "cache"))
        # 1 epoch of width 8 is near chance (top-1 0.10): a low bar is met at epoch 1
        run_dir = run_workload(_ddp_options(root / "runs", threshold=0.05, keep_going=True))
    return load_record(run_dir)


@pytest.mark.slow
def test_two_process_gloo_run_records_both_ranks(gloo_run):
    rec = gloo_run
    run_dir = Path(rec["_dir"])
    d = rec["distributed"]
    assert d["world_size"] == 2 and d["backend"] == "gloo"
    assert d["global_batch_size"] == 2 * d["per_rank_batch_size"] == 128
    assert all(r["threads"] == d["threads_per_rank"] >= 1 for r in d["per_rank"])
    assert [r["rank"] for r in d["per_rank"]] == [0, 1]
    for r in d["per_rank"]:
        assert len(r["epoch_times_s"]) == 2 and all(t > 0 for t in r["epoch_times_s"])
        assert r["steps"] == [12, 12]  # 1,438 examples / 2 ranks = 719 -> 12 batches of 64
        assert r["samples"] == [719, 719]
    assert rec["throughput"]["epoch_times_s"] == d["per_rank"][0]["epoch_times_s"]
    assert [ev["samples"] for ev in rec["evaluations"]] == [1438, 2876]  # global samples
    step = rec["throughput"]["step_time"]["value"]
    # the samples an epoch delivered (both ranks), not 128 per step: 1,438 < 12 x 128
    assert rec["throughput"]["samples_per_s"]["value"] == pytest.approx(1438 / (12 * step))
    comm = d["communication"]
    assert comm["time_per_step"]["value"] > 0 and "gloo:all_reduce" in {
        o["op"] for o in comm["ops"]
    }
    assert comm["share_of_step"] > 0
    assert rec["extra"]["steps_per_epoch"] == 12 and (run_dir / "torchrun.log").is_file()


@pytest.mark.slow
def test_a_two_process_run_that_reaches_its_threshold_measures_inference_on_rank_0(gloo_run):
    """Rank 0 measures batch-1 latency alone after the others have left: with the inner
    workload (no broadcast to a peer that is gone) and through the timed predict."""
    rec = gloo_run
    ck, inf = rec["checkpoint"], rec["inference"]
    assert rec["status"] == "reached" and rec["time_to_accuracy"]["reached"] is True
    assert rec["time_to_accuracy"]["epoch"] == 1 and len(rec["evaluations"]) == 2
    assert "not_measured" not in inf and inf["by"] == "perfsuite run"
    assert inf["examples"] == inf["eval_size"] == 359 and inf["latency"]["value"] > 0
    # digits has no TTA: the batch-1 predictions of the threshold model (epoch 1's, not the
    # last epoch's) score what rank 0's evaluation at epoch 1 scored
    assert inf["metrics"]["top1"] == ck["value"] == rec["evaluations"][0]["metrics"]["top1"]
    assert inf["threads"] == rec["distributed"]["threads_per_rank"]
    assert rec["inference_measurements"] == [inf]


@pytest.mark.slow
def test_a_crash_on_one_rank_keeps_rank_0s_finished_epochs(tmp_path, private_cache):
    from perfsuite.record import load_record
    from perfsuite.runner import run_workload
    from perfsuite.runner.launch.torchrun import RankFailed

    opts = _ddp_options(tmp_path, workload=f"{CRASHING}:CrashOnRank1", capture=False)
    with pytest.raises(RankFailed, match=r"^rank 1 of 2 failed: RuntimeError: rank 1 fails") as e:
        run_workload(opts)
    rec = load_record(e.value.perfsuite_run_dir)
    assert rec["status"] == "crashed" and rec["error"].startswith("rank 1 of 2 failed")
    assert [ev["epoch"] for ev in rec["evaluations"]] == [1]  # epoch 1 kept
    assert len(rec["distributed"]["per_rank"][1]["epoch_times_s"]) == 1
    assert rec["distributed"]["communication"]["why"].startswith("capture off")
    assert json.loads((Path(e.value.perfsuite_run_dir) / "run.json").read_text())["run_id"]


def test_example_scaling_study_file_plans_one_and_two_processes():
    from perfsuite.study.spec import load_study_file

    spec = load_study_file(Path(__file__).parents[1] / "examples/studies/digits-scaling.toml")
    assert [(c.name, c.nproc) for c in plan(spec, DIGITS, "digits")] == [
        ("nproc=1", 1),
        ("nproc=2", 2),
    ]
    assert spec.lr_rule == "linear" and spec.run.capture


def _dist_section(world=2, share=0.2):
    comm = {"time_per_step": {"value": 0.01, "unit": "s", "provenance": "measured"}}
    return {
        "world_size": world,
        "backend": "gloo",
        "per_rank": [{"rank": r, "epoch_times_s": [1.0]} for r in range(world)],
        "communication": {**comm, "share_of_step": share},
    }


def test_the_schema_takes_the_distributed_section_and_refuses_a_bad_one(make_record, tmp_path):
    from perfsuite.record import RecordError, load_record, write_record

    old = make_record([(1, 1.0, 0.5)])
    write_record(tmp_path / "old", old)  # no `distributed`: a one-process record, as before
    assert world_size(load_record(tmp_path / "old")) == 1
    write_record(tmp_path / "new", make_record([(1, 1.0, 0.5)], distributed=_dist_section()))
    assert world_size(load_record(tmp_path / "new")) == 2
    bad = make_record([(1, 1.0, 0.5)], distributed=_dist_section(world=0))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.json").write_text(json.dumps(bad))
    with pytest.raises(RecordError, match=r"run.json: field distributed.world_size"):
        load_record(tmp_path / "bad")


def test_a_study_matches_records_to_configurations_by_process_count(make_record, tmp_path):
    from perfsuite.record import write_record
    from perfsuite.study.folder import Study, config_records, new_manifest, pending

    spec = spec_from_dict({"kind": "scaling", "workload": "digits", "nprocs": [1, 2]}, "t")
    configs = plan(spec, DIGITS, "digits")
    study = Study(tmp_path, "s", spec, configs, new_manifest("s", spec, configs))
    rec = make_record([(1, 1.0, 0.99)], run_id="one", status="reached")
    rec["config"] = {"seed": 0, "switches": ["lr_rule=linear"], "batch_size": None}
    # a 2-process record in the 1-process folder is not that configuration's run
    wrong = {**rec, "run_id": "two", "distributed": _dist_section()}
    write_record(tmp_path / configs[0].folder / "one", rec)
    write_record(tmp_path / configs[0].folder / "two", wrong)
    assert [r["run_id"] for r in config_records(study, configs[0])] == ["one"]
    assert [(c.name, seed) for c, _, seed in pending(study)] == [("nproc=2", 0)]


def test_rank_summaries_and_the_report_section(make_record):
    from perfsuite.analyzers.results.distributed import rank_imbalance, rank_summaries
    from perfsuite.report.distributed_section import distributed_section

    d = _dist_section()
    d["per_rank"] = [
        {"rank": 0, "epoch_times_s": [9.0, 2.0, 4.0], "steps": [10, 10, 10], "samples": [5] * 3},
        {"rank": 1, "epoch_times_s": [9.0, 3.0, 5.0], "steps": [10, 10, 10], "threads": 1},
    ]
    ranks = rank_summaries({"distributed": d})
    assert [r.epoch_time_s for r in ranks] == [3.0, 4.0]  # median of epochs 2-3
    assert ranks[0].step_time_s == pytest.approx(0.3) and ranks[0].samples == 15
    assert rank_imbalance(ranks) == pytest.approx(4.0 / 3.0)
    assert rank_summaries(make_record([(1, 1.0, 0.5)])) == []
    html = distributed_section([make_record([(1, 1.0, 0.5)], distributed=d, run_id="ddp")])
    assert "ddp" in html and "20.0%" in html and "1.333" in html
    assert distributed_section([make_record([(1, 1.0, 0.5)])]) == ""


def test_study_scaling_command_line_is_the_study_file_form():
    from perfsuite.cli import build_parser
    from perfsuite.cli.study_cmd import spec_dict

    args = build_parser().parse_args(
        ["study", "scaling", "digits", "--nproc", "1,2", "--lr-rule", "sqrt", "--repeats", "3"]
    )
    spec = spec_from_dict(spec_dict(args), "command line")
    assert (spec.kind, spec.nprocs, spec.lr_rule, spec.repeats) == ("scaling", [1, 2], "sqrt", 3)
    with pytest.raises(StudyError, match="command line: field nprocs"):
        spec_from_dict({**spec_dict(args), "nprocs": "1,x"}, "command line")


@pytest.mark.parametrize(("accelerator", "count"), [("cuda", 4), ("cpu", 1)])
def test_hardware_count_is_the_gpus_a_data_parallel_run_used(
    monkeypatch, tmp_path, accelerator, count
):
    """One GPU per rank: a 4-rank run on GPUs used 4 (it recorded 1, and was priced as a
    1-GPU instance); a data-parallel CPU run is one machine."""
    from perfsuite.runner.launch.distributed import DistributedRun
    from perfsuite.runner.record import recorder

    def one_device(env, device, instance_type):
        return {"name": "Tesla V100-SXM2-16GB", "accelerator": accelerator, "count": 1,
                "instance_type": instance_type}  # fmt: skip

    monkeypatch.setattr(recorder, "hardware_section", one_device)
    run = DistributedRun(_ddp_options(tmp_path, nproc=4), 0, 4, "nccl")
    assert run.record["hardware"]["count"] == count
    assert run.record["distributed"]["world_size"] == 4
