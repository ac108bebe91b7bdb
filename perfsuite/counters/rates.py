"""Counts from reports that hold rates: what ncu's section sets (`--set full`) store.

A report made with `ncu --set full` (the usual way people profile) keeps the SASS FP
instruction counters only as `X.sum.per_cycle_elapsed`, i.e. X.sum divided by its unit's
elapsed cycles (`<unit>__cycles_elapsed.avg`), so `X.sum = rate * cycles`. Checked on public
`--set full` reports read through `ncu_report` (a 1000 x 1000 fp32 matrix addition on a Tesla
T4 gives 1,000,000 FADD exactly; kernels padded to 977 blocks x 256 threads x 4 give
1,000,448). Those sets collect no `sm__ops_path_tensor_*` counters: only how busy the
Tensor-Core pipe was, which `tensor_activity_note` reports so that a FLOP total without Tensor-
Core work is not read as the whole story.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, MutableMapping

from perfsuite.devices import counter_metrics as m

RATE_SUFFIX = ".per_cycle_elapsed"
# in every public --set full report read (T4 to H800): the Tensor-Core pipe's busy cycles
TENSOR_BUSY = "sm__pipe_tensor_cycles_active.sum.pct_of_peak_sustained_active"


@functools.cache
def counted_names() -> tuple[str, ...]:
    """Every count `metrics.derive` can use with any formula (sorted)."""
    return tuple(sorted(m.count_names(f for fs in m.TENSOR_FORMULAS.values() for f in fs)))


def cycles_name(count: str) -> str:
    """The elapsed-cycles metric a count's per-cycle rate is divided by (same unit)."""
    return f"{count.split('__', 1)[0]}__cycles_elapsed.avg"


def counts_from_rates(values: MutableMapping[str, float | None]) -> list[str]:
    """Add `X.sum = X.sum.per_cycle_elapsed * <unit>__cycles_elapsed.avg` for the counts we use
    that the launch lacks; a count already there is kept. Returns the names added."""
    added = []
    for count in counted_names():
        if values.get(count) is not None:
            continue
        rate = values.get(count + RATE_SUFFIX)
        cycles = values.get(cycles_name(count))
        if rate is None or cycles is None:
            continue
        values[count] = float(rate) * float(cycles)
        added.append(count)
    return added


def rebuilt_note(names: Iterable[str]) -> str | None:
    """The provenance line for counts `counts_from_rates` filled in (None when none were)."""
    got = sorted(set(names))
    if not got:
        return None
    return (
        f"{len(got)} counters rebuilt from per-cycle rates (the report stores rates, as ncu's "
        f"--set full does): X.sum = X.sum{RATE_SUFFIX} * <unit>__cycles_elapsed.avg for "
        + ", ".join(got)
    )


def tensor_activity_note(
    launches: Iterable[tuple[str, Mapping[str, float | None]]], tensor_measured: bool
) -> str | None:
    """A warning when the Tensor-Core pipe was busy but no Tensor-Core FLOP counter was read:
    the FLOP totals then miss that work (None when counted, idle, or not reported)."""
    if tensor_measured:
        return None
    busy = []
    for name, values in launches:
        pct = values.get(TENSOR_BUSY)
        if pct is not None and pct > 0:
            busy.append((float(pct), name))
    if not busy:
        return None
    top, name = max(busy)
    return (
        f"Tensor Cores were busy in {len(busy)} launch(es) (up to {top:.1f}% of peak pipe "
        f"cycles, {name[:60]}) but no Tensor-Core op counter was collected: their FLOP is "
        "missing from the totals; profile with `perfsuite run ... --counters ncu` or add the "
        "sm__ops_path_tensor_* metrics of docs/counters.md to ncu --metrics"
    )
