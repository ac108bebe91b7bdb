"""The runner's side of the scheduler contract: it steps the workload's LR scheduler as the
workload declares (`Workload.scheduler_interval`: after every step or after each epoch) and
checks at each epoch's end that nothing else stepped it, since a schedule stepped twice as
often, or not at all, trains silently wrong. The learning rate each epoch starts with goes in
the record (`extra.lr_at_epoch_start`), so what the schedule did can be read afterwards.
"""

from __future__ import annotations

from typing import Any

from perfsuite.workloads.base import scheduler_interval


class SchedulerSteps:
    def __init__(self, workload: Any, state: Any) -> None:
        self.scheduler = getattr(state, "scheduler", None)
        self.interval = scheduler_interval(workload, self.scheduler)
        self.optimizer = getattr(state, "optimizer", None)
        self.lr_known = bool(getattr(self.optimizer, "param_groups", None))
        self.lrs: list[float] = []
        self._count: Any = None

    def section(self) -> dict[str, Any]:
        """What `extra` of the record holds (filled in place as the epochs run)."""
        out: dict[str, Any] = {}
        if self.lr_known:
            out["lr_at_epoch_start"] = self.lrs
        if self.interval is not None:
            out["scheduler_interval"] = self.interval
        return out

    def epoch_start(self) -> None:
        if self.lr_known:  # param_groups read anew: a detour's load_state_dict replaces it
            self.lrs.append(float(self.optimizer.param_groups[0]["lr"]))
        self._count = getattr(self.scheduler, "last_epoch", None)

    def after_step(self) -> None:
        if self.interval == "step":
            self.scheduler.step()

    def epoch_end(self, epoch: int, steps: int) -> None:
        if self.interval == "epoch":
            self.scheduler.step()
        now = getattr(self.scheduler, "last_epoch", None)
        if not (isinstance(now, int) and isinstance(self._count, int)):
            return  # a scheduler without torch's step counter: nothing to check
        expected = steps if self.interval == "step" else 1
        if now - self._count != expected:
            raise ValueError(
                f"the LR scheduler was stepped {now - self._count} times in epoch {epoch}, "
                f"expected {expected} (scheduler_interval={self.interval!r}: the runner steps "
                "it; train_step and the epoch hooks must not)"
            )
