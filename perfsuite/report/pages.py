"""The report's pages that the command line writes, filled into the interface the CLI calls
(`perfsuite.views.pages.HtmlPages`); `perfsuite.__main__` hands `PAGES` to the CLI."""

from __future__ import annotations

from perfsuite.report.build import report_page, roofline_html
from perfsuite.report.history_page import history_page, history_section
from perfsuite.report.ranks_section import diff_page, ranks_page
from perfsuite.report.study_section import study_html, study_section
from perfsuite.views.pages import HtmlPages

PAGES = HtmlPages(
    report=report_page,
    roofline=roofline_html,
    ranks=ranks_page,
    diff=diff_page,
    study_section=study_section,
    study=study_html,
    history=history_page,
    history_section=history_section,
)
