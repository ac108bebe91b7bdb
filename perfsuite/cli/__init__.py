"""The one command-line interface: `perfsuite <command> ...`.

Each command lives in its own module under perfsuite.cli with a `register(subparsers)`
function. Command modules must not import torch at module level: `perfsuite --help` and the
analysis commands have to work, fast, on machines without it. The CLI never imports the HTML
report: the commands that write a page get it through `common.html_pages`, which the program
(`perfsuite.__main__`, the console script) wires to the report.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from perfsuite.cli.common import CLIError
from perfsuite.version import __version__
from perfsuite.views.pages import HtmlPages

# The command modules; their order is the order of `perfsuite --help`.
COMMANDS: list[str] = [
    "perfsuite.cli.run_cmd",
    "perfsuite.cli.peaks_cmd",
    "perfsuite.cli.roofline_cmd",
    "perfsuite.cli.report_cmd",
    "perfsuite.cli.flops_cmd",
    "perfsuite.cli.timeline_cmd",
    "perfsuite.cli.counters_cmd",
    "perfsuite.cli.study_cmd",
    "perfsuite.cli.stability_cmd",
    "perfsuite.cli.compare_cmd",
    "perfsuite.cli.history_cmd",
    "perfsuite.cli.thresholds_cmd",
    "perfsuite.cli.cost_cmd",
    "perfsuite.cli.import_cmd",
    "perfsuite.cli.leaderboard_cmd",
    "perfsuite.cli.eval_cmd",
    "perfsuite.cli.infer_cmd",
    "perfsuite.cli.validate_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perfsuite",
        description=(
            "Time-to-accuracy benchmarking and performance analysis for deep learning: "
            "capture instrumented runs, then analyze the run records (roofline, timelines, "
            "stability, thresholds, cost, leaderboards)."
        ),
    )
    parser.add_argument("--version", action="version", version=f"perfsuite {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for modname in COMMANDS:
        importlib.import_module(modname).register(sub)
    return parser


def main(
    argv: Sequence[str] | None = None, html_pages: Callable[[], HtmlPages] | None = None
) -> int:
    """Run one command. `html_pages` loads the pages the HTML-writing commands write (the
    report's, handed in by `perfsuite.__main__`, which is the program); without it those
    commands say so in one line and the rest work."""
    from perfsuite.fmt import PrintableStream, printable
    from perfsuite.record import RecordError

    parser = build_parser()
    args = parser.parse_args(argv)
    args.html_pages = html_pages  # read by `common.html_pages`
    stdout = sys.stdout
    sys.stdout = PrintableStream(stdout)  # type: ignore[assignment]  # record text escaped
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:  # `perfsuite ... | head`: the reader has all it wanted
        _quiet_stdout()
        return 0
    except (CLIError, RecordError) as exc:
        print(f"perfsuite: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        # the analysis commands need no framework; capture commands say what to install
        hint = " (install the capture extra: pip install torch==2.13.0 'perfsuite[capture]')"
        needs = exc.name in ("torch", "sklearn", "PIL")
        print(printable(f"perfsuite: error: {exc}{hint if needs else ''}"), file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(printable(f"perfsuite: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("perfsuite: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
