"""Pure analysis of run records: records in, plain data (dataclasses) out.

Nothing in this package imports torch or tensorflow, so a record can be analyzed on any
laptop. Plotting lives in perfsuite.report; printing lives in perfsuite.cli.
"""
