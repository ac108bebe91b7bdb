"""`perfsuite eval squad DEV.json PREDICTIONS.json`: the official SQuAD v1.1 figures.

Like the official `evaluate-v1.1.py`, the scorer runs on its own: no run, no torch. It prints
`{"exact_match": .., "f1": ..}` in percent on stdout and, on stderr, one line per unanswered
question (scored 0, as the official script does) and a version warning for non-1.1 files.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from perfsuite.cli.common import CLIError, status


def register_squad(what: Any) -> None:
    """Add the `squad` sub-command to `perfsuite eval`."""
    q = what.add_parser(
        "squad",
        help="official SQuAD v1.1 exact match and F1 of a predictions file",
        description=(
            "Score PREDICTIONS.json (a JSON object from question id to answer text) against "
            "the SQuAD v1.1 file DEV.json exactly as the official evaluate-v1.1.py defines it: "
            "answers lower-cased, ASCII punctuation and the articles a/an/the removed, white "
            "space collapsed; exact match and bag-of-tokens F1, the maximum over the gold "
            "answers, averaged over every question of DEV.json, in percent. Unanswered "
            "questions score 0 (one line each on stderr)."
        ),
    )
    q.add_argument("dev", metavar="DEV.json", help="SQuAD v1.1 dataset file (e.g. dev-v1.1.json)")
    q.add_argument("predictions", metavar="PREDICTIONS.json", help="question id -> answer text")
    q.set_defaults(func=run_squad)


def run_squad(args: argparse.Namespace) -> int:
    from perfsuite.workloads.squad.data import EXPECTED_VERSION, load_predictions, load_squad
    from perfsuite.workloads.squad.score import score, unanswered_message

    try:
        dev = load_squad(args.dev)
        predictions = load_predictions(args.predictions)
        result = score(dev.golds(), predictions)
    except ValueError as exc:
        raise CLIError(str(exc).splitlines()[0]) from None
    if dev.version != EXPECTED_VERSION:
        status(f"Evaluation expects v-{EXPECTED_VERSION}, but got dataset with v-{dev.version}")
    for qid in result.unanswered:
        status(unanswered_message(qid))
    if result.unanswered:
        status(f"{len(result.unanswered)} of {result.total} questions unanswered (scored 0)")
    print(json.dumps(result.as_dict()))
    return 0
