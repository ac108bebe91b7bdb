"""One rank of a data-parallel run (DistributedDataParallel), started by torchrun.

`perfsuite run W --nproc N` starts N of these through `runner/launch/torchrun.py`. Every rank runs
the
ordinary loop (`loop._Run`) with four differences, all made here so the loop keeps one code
path:

- data: the rank trains on its shard of every epoch (`runner/launch/shard.py`); the global batch is
  the per-rank batch x N. The learning rate follows the run's `lr_rule` switch from the
  per-rank batch to the global batch (`none`, the default, keeps the recipe's rate);
- model: wrapped in DistributedDataParallel after the state is built (`_distribute`), so the
  warm-up already runs the real data-parallel step (DDP rebuilds its buckets after its first
  step: that one-off cost stays out of the clock). FLOPs are counted on the rank's eager module
  (the local step; the all-reduce is communication, not counted);
- evaluation: once, on rank 0, its metrics broadcast to the others, so every rank takes the
  same stop and profile-window decisions and the threshold rule is the single-process one.
  Rank 0's replica is evaluated; DDP keeps parameters equal across ranks (BatchNorm running
  statistics are rank 0's, as DDP broadcasts rank 0's buffers at every forward);
- timing: at every epoch end, off the clock, the ranks exchange their epoch time, steps,
  samples, input stall and loss (one all_gather); rank 0 writes them into the record's
  `distributed.per_rank`. With capture on, every rank's profile window (taken together, since
  the window's steps are collective) yields the collectives' in-flight time per step.

Rank 0 writes the run record; the other ranks run with their records in a scratch folder that
the launcher removes, and skip what would disturb rank 0's measurements (the ceilings
micro-benchmark, inference latency). Rank 0 measures inference after training on its own,
with no collective: the others may have left by then.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfsuite.backends import torch_backend
from perfsuite.devices.accelerators import devices_used
from perfsuite.record import quantity
from perfsuite.runner.engine.engine import Diverged, Terminated
from perfsuite.runner.launch.executor import config_error_types
from perfsuite.runner.launch.shard import ShardedSource
from perfsuite.runner.measure.comm import comm_from_ops, comm_share
from perfsuite.runner.routes.run import RunOptions, _Run
from perfsuite.workloads.switches import scaled_lr

NO_WINDOW = "capture off: no profiler window was taken, so no collective was timed"


class _RankWorkload:
    """The run's workload as one rank sees it: sharded training data, evaluation on rank 0."""

    def __init__(self, inner: Any, run: DistributedRun) -> None:
        self._inner, self._run = inner, run
        self.__wrapped__ = inner  # what it stands for (the scheduler declaration is read there)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def load_data(self, data_dir: str | None, device: Any) -> Any:
        return self._run.shard(self._inner.load_data(data_dir, device))

    def synthetic_data(self, device: Any, seed: int) -> Any:
        return self._run.shard(self._inner.synthetic_data(device, seed))

    def evaluate(self, model: Any, data: Any) -> Any:
        import torch.distributed as dist

        box = [self._inner.evaluate(model, data) if self._run.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]


class DistributedRun(_Run):
    """One rank of a data-parallel run; rank 0 owns the record."""

    def __init__(self, opts: RunOptions, rank: int, world: int, backend_name: str) -> None:
        super().__init__(opts)
        self.rank, self.world = rank, world
        self.rec.world_size = world
        self.workload = _RankWorkload(self.workload, self)
        per_rank = self.recipe.batch_size
        recipe_lr = self.recipe.lr
        self.recipe.lr = scaled_lr(recipe_lr, per_rank, per_rank * world, self.switches.lr_rule)
        self.record["config"]["recipe_values"] = self.recipe.to_dict()
        self.per_rank: list[dict[str, Any]] = [_rank_entry(k) for k in range(world)]
        self.record["distributed"] = {
            "world_size": world,
            "backend": backend_name,
            "launcher": "torchrun (torch.distributed.run --standalone)",
            "threads_per_rank": opts.threads,
            "per_rank_batch_size": per_rank,
            "global_batch_size": per_rank * world,
            "lr": {
                "rule": self.switches.lr_rule,
                "recipe": recipe_lr,
                "used": self.recipe.lr,
                "source": f"lr_rule={self.switches.lr_rule} from the per-rank batch "
                f"{per_rank} to the global batch {per_rank * world}",
            },
            "sharding": None,
            "evaluation": "rank 0 evaluates its replica; the metrics are broadcast to the others",
            "per_rank": self.per_rank,
            "communication": _no_comm(NO_WINDOW if not opts.capture else "no window taken yet"),
        }
        # the accelerators the run used: one GPU per rank (a CPU run stays one machine)
        self.record["hardware"]["count"] = devices_used(self.record) or 1

    # -- hooks --------------------------------------------------------------------------------

    def shard(self, data: Any) -> ShardedSource:
        sharded = ShardedSource(data, self.rank, self.world, self.recipe.batch_size)
        self.record["distributed"]["sharding"] = sharded.method
        if not sharded.by_index:
            self.rec.flag(
                "data sharded by batch: every rank prepares the whole epoch and keeps its "
                "batches, so data preparation does not scale with processes"
            )
        return sharded

    def _distribute(self) -> None:
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP

        st = self.state
        dev = self.backend.device
        ddp = DDP(st.module, device_ids=[dev.gpu_index] if dev.is_gpu else None)
        if st.model is st.module:
            st.model = ddp
        else:
            mode = self.switches.compile
            st.model = torch.compile(ddp, mode=None if mode == "default" else mode)

    def _setup(self) -> None:
        super()._setup()
        # DDP wraps the module; only torch.compile makes the run "compiled".
        effect = self.record["switches"]["effect"]
        if self.switches.compile is None and "compiled" in effect:
            effect["compiled"] = None
        threads = _gather({"rank": self.rank, "threads": _threads()})
        for entry, got in zip(self.per_rank, threads, strict=True):
            entry["threads"] = got["threads"]

    def _train_epoch(self, epoch: int) -> tuple[float, float, int, int]:
        diverged = None
        seconds, loss, steps, samples = 0.0, float("nan"), 0, 0
        try:
            seconds, loss, steps, samples = super()._train_epoch(epoch)
        except Diverged as exc:
            diverged = str(exc)
        # Off the clock: every rank's numbers of this epoch, to every rank.
        mine = {
            "seconds": seconds,
            "steps": steps,
            "samples": samples,
            "stall_s": self.stall_s[-1] if self.stall_s and diverged is None else None,
            "loss": loss,
            "diverged": diverged,
        }
        everyone = _gather(mine)
        for k, got in enumerate(everyone):
            if got["diverged"] is not None:
                why = got["diverged"].removeprefix("did not converge: ")
                raise Diverged(f"did not converge: rank {k}: {why}")
        for entry, got in zip(self.per_rank, everyone, strict=True):
            entry["epoch_times_s"].append(got["seconds"])
            entry["steps"].append(got["steps"])
            entry["samples"].append(got["samples"])
            entry["stall_s"].append(got["stall_s"] or 0.0)
            entry["train_loss"].append(got["loss"])
            steady = entry["epoch_times_s"][1:] or entry["epoch_times_s"]
            entry["step_time_s"] = statistics.median(steady) / max(1, got["steps"])
        # Rank 0's clock for every rank: equal window sizes and decisions everywhere.
        seconds = everyone[0]["seconds"]
        mean_loss = statistics.fmean(g["loss"] for g in everyone)
        return seconds, mean_loss, everyone[0]["steps"], sum(g["samples"] for g in everyone)

    def _capture_timeline(self, epoch: int, epoch_step_s: float) -> None:
        super()._capture_timeline(epoch, epoch_step_s)
        tl = self.record.get("timeline") or {}
        comm = comm_from_ops(tl.get("ops") or [], int(tl.get("steps") or 0))
        step = (tl.get("step_time") or {}).get("value")
        everyone = _gather({"comm": comm, "step_s": step})
        for entry, got in zip(self.per_rank, everyone, strict=True):
            c = got["comm"]
            entry["comm_time_per_step_s"] = c["time_per_step_s"] if c else None
        if comm is None:
            why = "the profile window holds no collective op (gloo:/nccl:...)"
            self.record["distributed"]["communication"] = _no_comm(why)
            return
        share = comm_share(comm["time_per_step_s"], step)
        self.record["distributed"]["communication"] = {
            "time_per_step": quantity(
                comm["time_per_step_s"],
                "s",
                "measured",
                f"torch.profiler window after epoch {epoch} on rank 0: inclusive time of the "
                "process group's collectives (in flight from enqueue to completion; they "
                "overlap backward, so this bounds the exposed communication from above) / "
                f"{tl.get('steps')} steps",
            ),
            "share_of_step": share,
            "step_time_s": step,
            "ops": comm["ops"],
            "why": None,
        }

    def _measure_inference(self) -> None:
        """Rank 0 alone (the other ranks skip inference and may have left): the inner
        workload measures, so its `evaluate` broadcasts nothing and calls the `predict` that
        the batch-1 timer stands in for (the wrapper's would not reach the inner one)."""
        wrapper, self.workload = self.workload, self.workload._inner
        try:
            super()._measure_inference()
        finally:
            self.workload = wrapper

    def execute(self) -> Any:
        """Rank 0's run folder after the run (None on the other ranks)."""
        out = super().execute()
        return out if self.rank == 0 else None


def _rank_entry(rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "threads": None,
        "epoch_times_s": [],
        "steps": [],
        "samples": [],
        "stall_s": [],
        "train_loss": [],
        "step_time_s": None,
        "comm_time_per_step_s": None,
    }


def _no_comm(why: str) -> dict[str, Any]:
    return {
        "time_per_step": None,
        "share_of_step": None,
        "step_time_s": None,
        "ops": [],
        "why": why,
    }


def _threads() -> int:
    import torch

    return int(torch.get_num_threads())


def _gather(obj: Any) -> list[Any]:
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


# -- the process torchrun starts -------------------------------------------------------------


def worker(control: Path) -> int:
    """One rank: options from `control/options.json`, reply in `control/rank-<r>.json`."""
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    reply: dict[str, Any] = {"rank": rank, "run_dir": None, "error": None, "fatal": False}
    try:
        opts = RunOptions(**json.loads((control / "options.json").read_text(encoding="utf-8")))
        backend = torch_backend(opts.device)
        device = backend.rank_device(local)
        if device.is_gpu:
            torch.cuda.set_device(device.gpu_index)
        name = backend.collective_backend()
        dist.init_process_group(name)
        opts = replace(opts, device=str(device))
        if rank > 0:  # a scratch record; nothing that would disturb rank 0's measurements
            out = control / f"rank-{rank}"
            opts = replace(opts, out=str(out), measure_peaks=False, inference_repeats=0)
            opts = replace(opts, progress=False)
        run = DistributedRun(opts, rank, world, name)
        if rank == 0:
            reply["run_dir"] = str(run.run_dir)
            _write_reply(control, reply, "started")
        run.execute()
    except Exception as exc:  # every failure (Terminated included) becomes one line
        fatal = isinstance(exc, config_error_types()) and not isinstance(exc, Terminated)
        first = (str(exc).splitlines() or [""])[0][:300]
        reply["error"] = first.strip("'\"") if fatal else f"{type(exc).__name__}: {first}"
        reply["fatal"] = fatal
        reply["failed_at"] = time.time()  # the earliest failure is the cause of the others
        if rank == 0 and getattr(exc, "perfsuite_run_dir", None):
            reply["run_dir"] = str(exc.perfsuite_run_dir)  # type: ignore[attr-defined]
    finally:
        _write_reply(control, reply, f"rank-{rank}")
        if dist.is_initialized():
            with contextlib.suppress(Exception):  # a dead peer: nothing left to tear down
                dist.destroy_process_group()
    return 1 if reply["error"] else 0


def _write_reply(control: Path, reply: dict[str, Any], name: str) -> None:
    tmp = control / f".{name}.json.tmp"
    tmp.write_text(json.dumps(reply), encoding="utf-8")
    tmp.replace(control / f"{name}.json")


if __name__ == "__main__":
    sys.exit(worker(Path(sys.argv[1])))
