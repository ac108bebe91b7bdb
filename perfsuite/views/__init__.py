"""Shared row builders of the front ends: the rows and lines that the CLI prints, the HTML
report renders and the API tabulates, built once from analyzer results so they cannot
disagree. Presentation only: every number comes from a record or an analyzer.
"""
