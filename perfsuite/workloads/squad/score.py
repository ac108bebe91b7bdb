"""The SQuAD v1.1 evaluation, as the official `evaluate-v1.1.py` defines it. Pure Python.

Why a module of its own: the workload's evaluation, `perfsuite eval squad` and any analyzer must
give the same figure as the official script, so there is exactly one scorer and it imports
neither torch nor anything else outside the standard library.

Definition (SQuAD v1.1): an answer is normalised by lower-casing, deleting every ASCII
punctuation character (`string.punctuation`), replacing the whole words a/an/the by a space
and collapsing white space. Exact match compares normalised strings. Token F1 splits the
normalised strings on white space and counts the common tokens as a multiset (a token common
twice counts twice); precision = common / predicted tokens, recall = common / gold tokens,
F1 = 2PR / (P + R), and 0 when nothing is common. Each question scores the maximum over its
gold answers; both figures are averaged over every question of the dev file and reported in
percent. A question without a prediction scores 0 and still counts in the average.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lower case, no ASCII punctuation, articles replaced by spaces, single spaces."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", no_punct).split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal (two empty strings are equal), else 0.0."""
    return 1.0 if normalize_answer(prediction) == normalize_answer(gold) else 0.0


def token_f1(prediction: str, gold: str) -> float:
    """Bag-of-tokens F1 of the normalised strings; 0.0 when no token is common."""
    return _f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def _f1(pred: list[str], ref: list[str]) -> float:
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_over_golds(prediction: str, golds: Sequence[str]) -> tuple[float, float]:
    """(exact match, F1) of one prediction: each the maximum over the gold answers (every
    string normalised once)."""
    if not golds:
        raise ValueError("a question has no gold answer")
    pred = normalize_answer(prediction)
    refs = [normalize_answer(g) for g in golds]
    em = max(1.0 if pred == r else 0.0 for r in refs)
    tokens = pred.split()
    return em, max(_f1(tokens, r.split()) for r in refs)


@dataclass
class SquadScore:
    """Official figures in percent, plus what the official script says on stderr."""

    exact_match: float
    f1: float
    total: int
    unanswered: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, float]:
        """The official script's output: {"exact_match": .., "f1": ..} in percent."""
        return {"exact_match": self.exact_match, "f1": self.f1}


def score(golds: Iterable[tuple[str, Sequence[str]]], predictions: Mapping[str, str]) -> SquadScore:
    """Score `predictions` (question id -> answer text) against `golds` ((id, gold texts) for
    every question of the dev file, in file order). Unanswered questions score 0; their ids are
    listed in `unanswered` (the official script prints one message for each)."""
    em_sum = f1_sum = 0.0
    total = 0
    unanswered: list[str] = []
    for qid, answers in golds:
        total += 1
        if qid not in predictions:
            unanswered.append(qid)
            continue
        em, f1 = best_over_golds(predictions[qid], answers)
        em_sum += em
        f1_sum += f1
    if total == 0:
        raise ValueError("the dev set has no questions")
    return SquadScore(100.0 * em_sum / total, 100.0 * f1_sum / total, total, unanswered)


def unanswered_message(qid: str) -> str:
    """The official script's line for a question without a prediction."""
    return f"Unanswered question {qid} will receive score 0."
