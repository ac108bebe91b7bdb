"""How many runs MLPerf's result summarizer drops at each end of a benchmark's sorted times.

Why in the record contract: the MLPerf importer stores the number in a record
(`extra.mlperf.dropped_each_end`) and the stability analysis reads it back, falling back to
this table for a record imported without the field; both read one table.
"""

from __future__ import annotations

# 4 at each end for unet3d, 1 for every other benchmark
_DROPPED = {"unet3d": 4}


def max_dropped(name: str) -> int:
    """Runs the result summarizer drops at each end of a folder's sorted times."""
    return _DROPPED.get(name, 1)
