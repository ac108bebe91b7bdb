"""The perfsuite program: the `perfsuite` console script and `python -m perfsuite`.

The composition root of the front ends: the command line (`perfsuite.cli`) and the HTML
report (`perfsuite.report`) sit side by side and never import each other; this module hands
the report's pages to the commands that write HTML. The report, and plotly with it, loads only
when such a command runs, so `perfsuite --help` and the text commands stay light.
"""

from __future__ import annotations

from collections.abc import Sequence

from perfsuite import cli
from perfsuite.views.pages import HtmlPages


def _report_pages() -> HtmlPages:
    from perfsuite.report.pages import PAGES  # plotly: only where a page is written

    return PAGES


def main(argv: Sequence[str] | None = None) -> int:
    """Run `perfsuite ARGV...` (the process's arguments when None); the exit status."""
    return cli.main(argv, html_pages=_report_pages)


if __name__ == "__main__":
    raise SystemExit(main())
