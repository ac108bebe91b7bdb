"""Plotly figures shared by the front ends: the HTML report embeds them and the Python API
returns them (`run.figures.roofline()`), drawn from the same analyzer results and `perfsuite.views`
data so a notebook and a page show the same picture. Every module here imports plotly; the
package itself imports nothing, so the front ends load it only where they draw.
"""
