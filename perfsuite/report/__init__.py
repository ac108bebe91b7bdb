"""Presentation: self-contained HTML reports with interactive plotly figures.

Only this package draws; it shows what the analyzers return and computes nothing new. The
entry points are `perfsuite.report.build.report_html` and `roofline_html`; the package itself
imports nothing, so its plotly-free parts (`roofline_rows`, `fmt`-based tables) load where
plotly is not installed.
"""
