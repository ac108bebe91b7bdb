"""What the training clock reads at an edge: wall time, process CPU time, minor page faults.

One reading type for `perfsuite run` and `perfsuite.track`, so both take the same quantities
on the same edges, and the tracker can take a detour's share out of an epoch by subtraction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from perfsuite.hostinfo import minor_page_faults


@dataclass(frozen=True)
class ClockReading:
    """`wall` (perf_counter, s), `cpu` (process CPU time of every thread, s), `faults` (minor
    page faults, None where the platform cannot count them). A difference of two readings is
    the usage between them."""

    wall: float = 0.0
    cpu: float = 0.0
    faults: int | None = 0

    @classmethod
    def now(cls) -> ClockReading:
        return cls(time.perf_counter(), time.process_time(), minor_page_faults())

    def __sub__(self, other: ClockReading) -> ClockReading:
        faults = None if self.faults is None or other.faults is None else self.faults - other.faults
        return ClockReading(self.wall - other.wall, self.cpu - other.cpu, faults)

    def __add__(self, other: ClockReading) -> ClockReading:
        faults = None if self.faults is None or other.faults is None else self.faults + other.faults
        return ClockReading(self.wall + other.wall, self.cpu + other.cpu, faults)
