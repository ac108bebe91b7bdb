"""Presentation: self-contained HTML reports with interactive plotly figures.

Only this package draws; it shows what the analyzers return and computes nothing new.
"""

from perfsuite.report.build import report_html, roofline_html

__all__ = ["report_html", "roofline_html"]
