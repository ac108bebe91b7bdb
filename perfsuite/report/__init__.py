"""Presentation: self-contained HTML reports with interactive plotly figures.

A front end beside the CLI and the API; it shows what the analyzers return and computes
nothing new. The pages the command line writes are `perfsuite.report.pages.PAGES` (built in
`build`, `ranks_section`, `study_section`), which `perfsuite.__main__` hands to the CLI; the
package itself imports nothing. Its plotly figures are `perfsuite.figures`, shared with the
API; rows it shares with the CLI and the API are built in `perfsuite.views`, which needs no
plotly.
"""
