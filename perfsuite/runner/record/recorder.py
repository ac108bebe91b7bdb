"""The record side of a run, shared by the workload runner and `perfsuite.track` (a user's
own loop): the run folder, evaluations with the threshold rule, throughput, atomic rewrites.

The record is rewritten atomically after every evaluation, so a run killed at any point leaves
a valid record of every epoch it finished.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from perfsuite.mllog import MLLogWriter
from perfsuite.record import new_record, new_run_id, quantity, write_record
from perfsuite.record.io import clean_stale_staging
from perfsuite.record.model import utc_now
from perfsuite.record.owner import owner_section
from perfsuite.record.tta import crossing_dict, record_crossing
from perfsuite.runner.record.environment import collect_environment, hardware_section


class Recorder:
    """Owns one run folder and its `run.json`."""

    def __init__(
        self,
        out: str | Path,
        name: str,
        task: dict[str, Any],
        device: Any,
        config: dict[str, Any],
        *,
        framework: str,
        instance_type: str | None = None,
        group: dict[str, Any] | None = None,
        mllog_benchmark: str | None = None,
        write_files: bool = True,
    ) -> None:
        self.run_id = new_run_id(name)
        self.run_dir = Path(out) / self.run_id
        self.write_files = write_files
        env = collect_environment(str(device))
        self.record = new_record(run_id=self.run_id, task=task, environment=env, config=config)
        self.record["owner"] = owner_section()  # a reader can tell when this process is gone
        self.record["group"] = group
        self.record["hardware"] = hardware_section(env, str(device), instance_type)
        self.record["framework"] = framework
        self.metric, self.threshold = task["metric"], task["threshold"]
        self.epoch_times: list[float] = []
        self.epoch_steps: list[int] = []  # steps of each epoch, where they differ (track)
        self.epoch_cpu_times: list[float] = []  # process CPU time on the clock's edges
        self.epoch_minor_faults: list[int] = []  # the process's minor page faults, same edges
        self.world_size = 1  # data-parallel ranks, each stepping on a batch of batch_size
        self.mllog = None
        self._keyed: dict[str, tuple[str, int]] = {}  # flag key -> (its text, where it was)
        if write_files:
            self._create_folder()
            if mllog_benchmark:
                self.mllog = self._open_mllog(mllog_benchmark)
                self.write()

    def _create_folder(self) -> None:
        """The run folder appears with its first record in it, never empty: the record is
        written in a hidden sibling folder that is then renamed into place (one rename), so a
        signal at any moment leaves either no run folder or one with a valid record."""
        self.run_dir.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_staging(self.run_dir.parent)  # what runs killed before this point left
        tmp = Path(tempfile.mkdtemp(prefix=f".{self.run_id}.", dir=self.run_dir.parent))
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; run folders are shared as usual
            write_record(tmp, self.record)
            os.rename(tmp, self.run_dir)  # fails if run_dir exists: ids never reuse a folder
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _open_mllog(self, benchmark: str) -> Any:
        path = self.run_dir / "mllog.txt"
        self.record["sidecars"]["mllog"] = path.name
        return MLLogWriter(path, benchmark=benchmark)

    def flag(self, text: str, *, key: str | None = None) -> None:
        """Add `text` to the record's flags. With `key` (a short stable name, kept here and
        not in the record, whose flags stay plain strings), a flag kept up to date: a later
        call with the same key replaces that flag's text where it stands, found by its text
        (not by an index that other flags added or removed in between would shift); if it is
        no longer in the list it is appended again."""
        flags = self.record["flags"]
        at = self._keyed_index(key) if key is not None else None
        if at is None:
            at = len(flags)
            flags.append(text)
        else:
            flags[at] = text
        if key is not None:
            self._keyed[key] = (text, at)

    def has_flag(self, key: str) -> bool:
        """Whether a flag was set with this key."""
        return key in self._keyed

    def _keyed_index(self, key: str) -> int | None:
        """Where the flag set with `key` stands now: the string object it wrote, else an
        equal string (someone copied the list); among several (an unkeyed twin with the same
        text), the one nearest to where it was. None if never set, or no longer there."""
        if key not in self._keyed:
            return None
        text, was = self._keyed[key]
        flags = self.record["flags"]
        if was < len(flags) and flags[was] is text:
            return was
        found = [i for i, f in enumerate(flags) if f is text]
        found = found or [i for i, f in enumerate(flags) if f == text]
        return min(found, key=lambda i: abs(i - was), default=None)

    def write(self) -> None:
        if self.write_files:
            write_record(self.run_dir, self.record)

    def add_evaluation(
        self,
        epoch: int,
        train_time_s: float,
        metrics: dict[str, float],
        *,
        train_loss: float | None = None,
        eval_time_s: float | None = None,
        samples: int | None = None,
        train_loss_epoch: float | None = None,
    ) -> bool:
        """Append one evaluation, update time-to-accuracy, rewrite; True once reached."""
        rec = self.record
        if self.metric not in metrics:
            raise ValueError(f"evaluation of epoch {epoch} has no {self.metric!r} metric")
        entry: dict[str, Any] = {"epoch": epoch, "train_time_s": train_time_s, "metrics": metrics}
        for key, value in (
            ("train_loss", train_loss),
            ("train_loss_epoch", train_loss_epoch),
            ("eval_time_s", eval_time_s),
            ("samples", samples),
        ):
            if value is not None:
                entry[key] = value
        rec["evaluations"].append(entry)
        crossing = record_crossing(rec)  # the task's direction, as every analyzer reads it
        rec["time_to_accuracy"] = crossing_dict(crossing, "measured")
        self.write()  # before the MLPerf line: a kill in between keeps the evaluation
        if self.mllog:
            self.mllog.eval(epoch, metrics[self.metric], samples or 0)
        return bool(crossing.reached)

    def set_throughput(
        self, steps_per_epoch: int, batch_size: int | None, samples_per_epoch: int | None = None
    ) -> None:
        """Step time from the median epoch; the first epoch (one-off costs) is left out once
        there are others. Epochs of different lengths (perfsuite.track fills `epoch_steps`: a
        loop may cut one short) give the median of each epoch's time / its own steps, since
        the median epoch's time over another epoch's steps is no step time; epochs without
        steps are left out. The sample rate is `samples_per_epoch` over that epoch's
        `steps_per_epoch` steps when known (all ranks together), since batch_size / step_time
        would overstate it by a partial last batch; with neither known there is no rate."""
        times = self.epoch_times
        if not times or steps_per_epoch <= 0:
            return
        steps = self.epoch_steps
        if len(steps) != len(times):
            steps = [steps_per_epoch] * len(times)
        pairs = list(zip(times, steps, strict=True))
        clean = [p for p in pairs[1:] if p[1] > 0] or [p for p in pairs[:1] if p[1] > 0]
        if not clean:
            return
        first_out = clean[0] is not pairs[0]
        if len({s for _, s in clean}) == 1:  # equal epochs: median time / steps, as always
            per_step = statistics.median(t for t, _ in clean) / clean[0][1]
            over = f"{clean[0][1]} steps"
        else:
            per_step = statistics.median(t / s for t, s in clean)
            over = "its own steps"
        source = (
            f"median over {len(clean)} epoch(s) of epoch training wall time / "
            f"{over} (data preparation included" + ("; first epoch excluded)" if first_out else ")")
        )
        n = self.world_size
        ranks = f" x {n} ranks" if n > 1 else ""
        rate: float | None = None
        if samples_per_epoch:
            rate = samples_per_epoch / (per_step * steps_per_epoch)
            every = " (all ranks)" if n > 1 else ""
            how = f"{samples_per_epoch} samples per epoch{every} / (step_time x {steps_per_epoch})"
        elif batch_size:
            rate, how = batch_size * n / per_step, f"batch_size{ranks} / step_time"
        section: dict[str, Any] = {"step_time": quantity(per_step, "s", "measured", source)}
        if rate is not None:
            section["samples_per_s"] = quantity(rate, "sample/s", "derived", how)
        section["epoch_times_s"] = list(times)
        self.record["throughput"] = section
        if len(self.epoch_cpu_times) == len(times):
            self.record["throughput"]["epoch_cpu_times_s"] = list(self.epoch_cpu_times)
        if len(self.epoch_minor_faults) == len(times):
            self.record["throughput"]["epoch_minor_faults"] = list(self.epoch_minor_faults)

    def add_epoch_usage(self, used: Any) -> None:
        """Process CPU time and minor page faults of one epoch (a runner.clock.ClockReading
        difference on the clock's edges). CPU time counts every thread (telemetry's sampler
        included) but not what other guests of a shared host took, so it shows work capture
        added; page faults show the allocator's state, apart from timing noise."""
        self.epoch_cpu_times.append(used.cpu)
        if used.faults is not None:
            self.epoch_minor_faults.append(used.faults)

    def set_data(
        self,
        kind: str,
        description: str,
        stall_s: list[float],
        source: Any = None,
        samples: int | None = None,
    ) -> None:
        """The record's `data` section: the source, how long steps waited for batches and, when
        `samples` (examples delivered in the timed epochs) is known, the rate it delivered."""
        total = sum(stall_s)
        train = sum(self.epoch_times) or None
        self.record["data"] = {
            "kind": kind,
            "description": description,
            "num_workers": getattr(source, "num_workers", None),
            "pinned_memory": getattr(source, "pin", None),
            "stall_time": quantity(
                total,
                "s",
                "measured",
                "host time inside next(batches) during timed epochs (loading, decoding and "
                "host-side augmentation; device-side work queued asynchronously is not in it)",
            ),
            "stall_fraction": (total / train) if train else None,
            "stall_per_epoch_s": list(stall_s),
        }
        if samples is not None:
            self.record["data"]["samples_delivered"] = samples
            self.record["data"]["delivered_rate"] = quantity(
                samples / train if train else None,
                "sample/s",
                "derived",
                "examples the source delivered in timed epochs / their training time: the rate "
                "training consumed; the loader could supply at least this much, and it is the "
                "loader's own limit only when stall_fraction is large",
            )

    def finish(self) -> None:
        rec = self.record
        if rec["status"] == "running":
            rec["status"] = "reached" if rec["time_to_accuracy"]["reached"] else "not_reached"

    def start_mllog(self, batch_size: int, seed: int, lr: float) -> None:
        """MLPerf's init and `run_start`, just before the first timed epoch."""
        if self.mllog:
            self.mllog.start(
                {
                    "global_batch_size": batch_size,
                    "seed": seed,
                    "opt_base_learning_rate": lr,
                    "submission_platform": self.record["hardware"]["name"],
                }
            )

    def stop_mllog(self) -> None:
        """MLPerf's `run_stop` when training stops, before the work after it (threshold
        checkpoint, profile window, inference latency, counters), so the log's time to train
        is the run's; success = the target was reached. Idempotent: `close` logs it for a run
        that ends otherwise (crashed, diverged, interrupted)."""
        # The log's run_stop first: a record that says training ended always has it in its
        # log (a kill between the two leaves a record read as interrupted, whose log's stop
        # agrees with its evaluations: perfsuite.record.mllog_check).
        self._log_stop()
        if "training_ended_at" not in self.record.setdefault("extra", {}):
            # a reader of a run killed from here on shows training's outcome, saying that
            # the work after it was interrupted (perfsuite.record.io.load_record)
            self.record["extra"]["training_ended_at"] = utc_now()
            self.write()

    def _log_stop(self) -> None:
        if self.mllog:
            self.mllog.stop(success=bool(self.record["time_to_accuracy"]["reached"]))

    def close(self) -> None:
        self._log_stop()  # a run ending otherwise (crashed, interrupted) logs its stop too
        self.write()
