"""Presentation: self-contained HTML reports with interactive plotly figures.

Only this package draws; it shows what the analyzers return and computes nothing new. The
entry points are `perfsuite.report.build.report_html` and `roofline_html`; the package itself
imports nothing. Rows it shares with the CLI and the API are built in `perfsuite.views`, which
needs no plotly.
"""
