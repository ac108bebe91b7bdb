"""What a run shows on stderr while it works: setup phases by name as they start, then one
step-level bar over the whole training (steps/s, samples/s, ETA to the last epoch).

Cheap by construction: a step only counts in Python (tqdm redraws at most a few times a
second); nothing synchronizes the device for the bar, so on a GPU the step rate is the rate
at which steps are queued, and the epoch's samples/s (timed with a sync, as the clock is) is
the measured one. With progress off (`--quiet`, or runs side by side) everything is a no-op.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from perfsuite.fmt import printable, si


class RunProgress:
    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled = enabled
        self.label = printable(label)
        self.bar: Any = None
        self._phase_t0: float | None = None
        self._phase = ""

    def phase(self, name: str) -> None:
        """Say that `name` starts (and how long the previous phase took). A phase named while
        the training bar is open is only named: training goes on after it, so the next
        phase's timing still covers the whole training."""
        if not self.enabled:
            return
        if self.bar is not None:
            self._say(f"[perfsuite] {self.label}: {name}")
            return
        now = time.perf_counter()
        took = f"  [{self._phase}: {now - self._phase_t0:.1f} s]" if self._phase_t0 else ""
        self._phase, self._phase_t0 = name, now
        self._say(f"[perfsuite] {self.label}: {name}{took}")

    def note(self, text: str) -> None:
        """A fact the user should see before a long run, not only in the record's flags."""
        if self.enabled:
            self._say(f"[perfsuite] {self.label}: note: {text}")

    def _say(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def start_training(self, epochs: int, steps_per_epoch: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        # the phase's wall time also covers evaluations; the training clock (the record's)
        # counts training only, so the label says both are in it (capture's FLOP count and
        # profile window follow as phases of their own)
        self.phase(
            f"training and evaluation: up to {epochs} epochs x {steps_per_epoch} steps "
            "(the training clock is in the record)"
        )
        self._epochs = epochs
        self.bar = tqdm(
            total=epochs * steps_per_epoch,
            desc=self.label,
            unit="step",
            file=sys.stderr,
            leave=False,
            dynamic_ncols=True,
        )
        self.bar.set_postfix_str(f"epoch 1/{epochs}")

    def step(self) -> None:
        self.bar.update(1)

    def epoch_done(self, epoch: int, samples_per_s: float | None, metrics: str = "") -> None:
        """After epoch `epoch`: its measured samples/s and the evaluation, in the bar (named
        by the epoch they belong to: a run that stops here ends on its own epoch's line)."""
        if self.bar is None:
            return
        rate = f", {si(samples_per_s, 'sample/s')}" if samples_per_s else ""
        self.bar.set_postfix_str(
            f"epoch {epoch}/{self._epochs} done{rate}{', ' if metrics else ''}{metrics}"
        )

    def evaluating(self, epoch: int) -> None:
        """Evaluation holds the bar still (off the clock, often seconds on a large held-out
        set): say so, rather than a bar at 100% that looks hung."""
        if self.bar is not None:
            self.bar.set_postfix_str(f"epoch {epoch}/{self._epochs}: evaluating")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
