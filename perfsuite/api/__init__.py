"""The Python analysis API: run records, groups of runs and profiler traces as DataFrames.

`perfsuite.open` (runs, groups, studies), `perfsuite.trace` and `perfsuite.compare` are the
entry points; the tables are thin conversions of what the analyzers return, so they hold the
numbers the CLI prints.
Columns and units: docs/api.md. Importing this package imports pandas, never torch.
"""

from perfsuite.api.compare import compare, verdict
from perfsuite.api.group import Group
from perfsuite.api.history import History, history
from perfsuite.api.opening import KINDS, Kind, open_path, register_kind
from perfsuite.api.run import Run
from perfsuite.api.study import Study
from perfsuite.api.trace import Trace, trace
from perfsuite.api.trace_ranks import Diff, Ranks, ranks, trace_diff

__all__ = [
    "KINDS",
    "Diff",
    "Group",
    "History",
    "Kind",
    "Ranks",
    "Run",
    "Study",
    "Trace",
    "compare",
    "history",
    "open_path",
    "ranks",
    "register_kind",
    "trace",
    "trace_diff",
    "verdict",
]
