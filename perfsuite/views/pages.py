"""The HTML pages the command line writes, as one small typed interface.

Why here: the CLI and the report are siblings on the front-end layer and never import each
other. The CLI's commands call the pages through `HtmlPages`; the report fills one in
(`perfsuite.report.pages.PAGES`); the program (`perfsuite.__main__`) hands it to the CLI.
Nothing here draws or imports plotly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: `perfsuite --help` loads this without the analysis stack
    from perfsuite.analyzers.history.verdict import SeriesVerdict
    from perfsuite.analyzers.runs.study import StudyResult
    from perfsuite.analyzers.timeline.diff import TraceDiff
    from perfsuite.analyzers.timeline.ranks import FolderScan

Record = Mapping[str, Any]
Section = tuple[str, str, str]  # (id, title, HTML body) of one section of a page
Peaks = Mapping[str, Any]  # roofs of a `perfsuite peaks --json` file, by math


@dataclass(frozen=True)
class ReportPage:
    """A built report: the page and what a script needs to know about it (`report --json`)."""

    html: str
    title: str
    sections: list[tuple[str, str]]  # (id, title) of every section, in page order
    runs: list[dict[str, Any]]  # per record, in page order: what the page says about it


@dataclass(frozen=True)
class HtmlPages:
    """Each page a command writes, as a function of what the command has analysed."""

    # `perfsuite report`: records, ops shown per run, sections shown first, a peaks file's roofs
    report: Callable[[Sequence[Record], int, Sequence[Section], Peaks | None], ReportPage]
    # `perfsuite roofline --output`: one record, ops shown, a peaks file's roofs
    roofline: Callable[[Record, int, Peaks | None], str]
    # `perfsuite timeline FOLDER --html`: a folder of rank traces
    ranks: Callable[[FolderScan], str]
    # `perfsuite timeline --diff A B --html`: the diff, ops shown
    diff: Callable[[TraceDiff, int], str]
    # a study folder's section of `perfsuite report`, and its page of `perfsuite study show -o`
    study_section: Callable[[StudyResult, Mapping[str, Sequence[Record]]], str]
    study: Callable[[StudyResult, Mapping[str, Sequence[Record]]], str]
    # `perfsuite report --history`: the history page (series judged, where they came from)
    history: Callable[[Sequence[SeriesVerdict], str], str]
    # a run report's History section: the series that hold its runs, and the runs
    history_section: Callable[[Sequence[SeriesVerdict], Sequence[Record]], str]
