"""perfsuite: end-to-end time-to-accuracy benchmarking and performance analysis.

Importing this package must stay cheap and framework-free: the analysis half runs on machines
without torch or tensorflow.
"""

__version__ = "0.1.0"
