"""Pure analysis of run records: records in, plain data (dataclasses) out.

Nothing in this package imports torch or tensorflow, so a record can be analyzed on any
laptop. Grouped by concept: `roofline` (one run against its device's ceilings), `runs` (many
runs: stability, comparison, studies, leaderboards), `results` (what one run achieved: time to
accuracy, latency, generalization, cost) and `timeline` (traces). Rows shared by the front ends
live in perfsuite.views, plotting in perfsuite.report, printing in perfsuite.cli.
"""
