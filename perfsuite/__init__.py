"""perfsuite: end-to-end time-to-accuracy benchmarking and performance analysis.

Importing this package must stay cheap and framework-free: the analysis half runs on machines
without torch or tensorflow.
"""

__version__ = "0.1.0"


def track(task: str, **kwargs: object) -> object:
    """Measure your own training loop into a perfsuite run record (see perfsuite.tracking)."""
    from perfsuite.tracking import track as _track

    return _track(task, **kwargs)
