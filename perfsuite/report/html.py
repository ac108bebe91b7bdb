"""HTML building blocks: escaping, tables, sections, figure embedding, the page shell.

The page is self-contained: plotly.js is embedded once (gzip + base64, inflated by the
browser), figures are inline JSON, nothing is fetched from the network. Every user-supplied
string goes through `esc`; figure JSON has
`<`, `>` and `&` written as \\u escapes so no string inside it can close a script tag.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import plotly.graph_objects as go

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:0 24px 48px;color:#222}
h1{margin-top:24px}h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:40px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:14px}
.tbl{max-width:100%;overflow-x:auto}td{overflow-wrap:break-word}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#555;font-size:13px}.plot{width:100%}
nav a{margin-right:14px}code{background:#f4f4f4;padding:0 3px}
"""


def esc(value: Any) -> str:
    """HTML-escape anything shown on the page (quotes too, it may land in an attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def cell_text(value: Any) -> str:
    """A recorded value as a table cell reads: None -> "n/a", booleans -> "yes"/"no", empty
    -> "none", lists joined, dicts as "key: value, ..." (nested ones in parentheses), not as
    Python or JSON syntax."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple, dict)) and not value:
        return "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_nested(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_nested(v)}" for k, v in value.items())
    return str(value)


def _nested(value: Any) -> str:
    text = cell_text(value)
    return f"({text})" if isinstance(value, (list, tuple, dict)) and value else text


@dataclass(frozen=True)
class Titled:
    """A table cell showing `text`, with `title` (e.g. a full kernel name) on hover."""

    text: str
    title: str


def _td(value: Any, num: bool) -> str:
    cls = ' class="num"' if num else ""
    if isinstance(value, Titled):
        return f'<td{cls} title="{esc(value.title)}">{esc(value.text)}</td>'
    return f"<td{cls}>{esc(value)}</td>"


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[bool] | None = None
) -> str:
    """A table in a `div.tbl` that scrolls sideways rather than widen the page; cells are
    escaped (a `Titled` cell gets a title attribute). `numeric` marks right-aligned columns."""
    numeric = numeric or [False] * len(headers)
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(_td(c, i < len(numeric) and numeric[i]) for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="tbl"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def notes(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    return '<ul class="note">' + "".join(f"<li>{esc(n)}</li>" for n in lines) + "</ul>"


def section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{esc(section_id)}"><h2>{esc(title)}</h2>{body}</section>'


def _safe_json(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


SHARED_TEMPLATE = "plotly_white"  # the template every report figure uses (figures._LAYOUT)


@cache
def _shared_template() -> str:
    """The report's plotly template as JSON, written once per page instead of per figure
    (7 KB each)."""
    import plotly.io as pio

    return json.dumps(pio.templates[SHARED_TEMPLATE].to_plotly_json(), separators=(",", ":"))


def figure(fig: go.Figure, div_id: str) -> str:
    """A div plus an inline script handing `fig` to the page's `psDraw` (see `page`)."""
    div_id = re.sub(r"[^A-Za-z0-9_-]", "_", div_id)
    data = json.loads(fig.to_json())
    layout = data.setdefault("layout", {})
    if layout.get("template") == json.loads(_shared_template()):
        del layout["template"]  # psDraw puts the page's one copy back
    payload = _safe_json(json.dumps(data, separators=(",", ":")))
    return f'<div id="{div_id}" class="plot"></div><script>psDraw("{div_id}",{payload});</script>'


# plotly.js is 4.8 MB as shipped; gzip-compressed and base64-encoded it is about 1.9 MB. The
# page inflates it with the browser's own DecompressionStream (Chromium 80+, Firefox 113+,
# Safari 16.4+), still without any network, then draws the figures queued by psDraw.
_LOADER_HEAD = (
    "window.psQueue=[];function psDraw(id,f){if(!f.layout.template)f.layout.template=psTemplate;"
    "if(window.Plotly){Plotly.newPlot(id,f.data,"
    'f.layout,{"displaylogo":false,"responsive":true});}else{psQueue.push([id,f]);}}'
)
_LOADER_TAIL = (
    "(async function(){var b=atob(document.getElementById('plotly-gz').textContent);"
    "var u=new Uint8Array(b.length);for(var i=0;i<b.length;i++)u[i]=b.charCodeAt(i);"
    "var js=await new Response(new Blob([u]).stream().pipeThrough("
    "new DecompressionStream('gzip'))).text();var s=document.createElement('script');"
    "s.textContent=js;document.head.appendChild(s);var q=psQueue;psQueue=[];"
    "q.forEach(function(e){psDraw(e[0],e[1]);});document.body.dataset.plotsReady='1';})()"
    ".catch(function(e){var p=document.createElement('p');p.className='note';"
    "p.textContent='Charts could not be drawn (this browser lacks DecompressionStream?): '+e;"
    "document.body.prepend(p);});"
)


@cache
def _plotly_gz_b64() -> str:
    from plotly.offline import get_plotlyjs

    raw = get_plotlyjs().encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def page(title: str, sections: Sequence[tuple[str, str, str]], subtitle: str = "") -> str:
    """The whole document: plotly.js once (compressed), a nav bar, then (id, title, body)
    sections, then the loader that inflates plotly.js and draws the queued figures."""
    from plotly.offline import get_plotlyjs_version

    nav = "".join(f'<a href="#{esc(i)}">{esc(t)}</a>' for i, t, _ in sections)
    body = "".join(section(i, t, b) for i, t, b in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{_CSS}</style>"
        f"<!-- plotly.js v{esc(get_plotlyjs_version())}, gzip + base64 -->"
        f'<script type="application/octet-stream" id="plotly-gz">{_plotly_gz_b64()}</script>'
        f"<script>var psTemplate={_safe_json(_shared_template())};{_LOADER_HEAD}</script>"
        "</head><body>"
        f'<h1>{esc(title)}</h1><p class="note">{esc(subtitle)}</p><nav>{nav}</nav>'
        f"{body}<script>{_LOADER_TAIL}</script></body></html>\n"
    )
