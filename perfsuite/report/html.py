"""HTML building blocks: escaping, tables, sections, figure embedding, the page shell.

The page is self-contained: plotly.js is embedded once, figures are inline JSON, nothing is
fetched from the network. Every user-supplied string goes through `esc`; figure JSON has
`<`, `>` and `&` written as \\u escapes so no string inside it can close a script tag.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:0 24px 48px;color:#222}
h1{margin-top:24px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:40px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:14px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#555;font-size:13px}.plot{width:100%}
nav a{margin-right:14px}code{background:#f4f4f4;padding:0 3px}
"""


def esc(value: Any) -> str:
    """HTML-escape anything shown on the page (quotes too, it may land in an attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
          numeric: Sequence[bool] | None = None) -> str:
    """A table; cells are escaped. `numeric` marks right-aligned columns."""
    numeric = numeric or [False] * len(headers)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{esc(c)}</td>' if numeric[i] else f"<td>{esc(c)}</td>"
            for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def notes(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    return '<ul class="note">' + "".join(f"<li>{esc(n)}</li>" for n in lines) + "</ul>"


def section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{esc(section_id)}"><h2>{esc(title)}</h2>{body}</section>'


def _safe_json(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure(fig: go.Figure, div_id: str) -> str:
    """A div plus an inline script drawing `fig` with the page's embedded plotly.js."""
    div_id = re.sub(r"[^A-Za-z0-9_-]", "_", div_id)
    payload = _safe_json(fig.to_json())
    return (f'<div id="{div_id}" class="plot"></div><script>(function(){{var f={payload};'
            f'Plotly.newPlot("{div_id}",f.data,f.layout,'
            '{"displaylogo":false,"responsive":true});})();</script>')


def page(title: str, sections: Sequence[tuple[str, str, str]], subtitle: str = "") -> str:
    """The whole document: plotly.js once, a nav bar, then (id, title, body) sections."""
    from plotly.offline import get_plotlyjs

    nav = "".join(f'<a href="#{esc(i)}">{esc(t)}</a>' for i, t, _ in sections)
    body = "".join(section(i, t, b) for i, t, b in sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)}</title><style>{_CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>"
        f"<h1>{esc(title)}</h1><p class=\"note\">{esc(subtitle)}</p><nav>{nav}</nav>"
        f"{body}</body></html>\n"
    )
