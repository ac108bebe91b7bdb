"""Question/context pairs as fixed-length token ids, and the split a run trains and is judged on.
Pure Python (lists of ints); the workload turns them into tensors.

Why the split lives here: the real benchmark trains on train-v1.1.json and is judged on every
question of dev-v1.1.json; the smoke mode (only the dev file at hand) splits the dev articles
instead, and that must be impossible to mistake for the benchmark, so the split says what it
is (`smoke`, `notes`) and the workload writes that into the record.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from perfsuite.workloads.squad.data import (
    Article,
    Question,
    SquadFileError,
    load_squad,
)
from perfsuite.workloads.squad.tokens import Tokens, Vocabulary, tokenize

TRAIN_FILE, DEV_FILE = "train-v1.1.json", "dev-v1.1.json"


@dataclass
class Split:
    """Training articles and evaluation articles, and where they came from."""

    train: tuple[Article, ...]
    eval: tuple[Article, ...]
    description: str
    smoke: bool
    notes: list[str] = field(default_factory=list)


def choose_split(data_dir: str | Path, smoke_split: float) -> Split:
    """train-v1.1.json -> train, dev-v1.1.json -> eval (the benchmark); with `smoke_split`
    in (0, 1), the first round(fraction x articles) dev articles train and the rest evaluate.
    Only the dev file and no smoke_split: a one-line error saying what to do."""
    root = Path(data_dir)
    train_path, dev_path = root / TRAIN_FILE, root / DEV_FILE
    if not dev_path.is_file():
        raise SquadFileError(f"{dev_path}: file not found (the squad workload needs {DEV_FILE})")
    if smoke_split:
        if not 0.0 < smoke_split < 1.0:
            raise ValueError(f"recipe field 'smoke_split': {smoke_split} is not in (0, 1)")
        dev = load_squad(dev_path)
        k = min(len(dev.articles) - 1, max(1, round(smoke_split * len(dev.articles))))
        return Split(
            dev.articles[:k],
            dev.articles[k:],
            f"SMOKE TEST on {dev_path}: its first {k} articles train, the other "
            f"{len(dev.articles) - k} evaluate (smoke_split={smoke_split}); not SQuAD v1.1 "
            "training data, so its F1 is not a benchmark result",
            smoke=True,
            notes=[
                "SMOKE TEST: trained on dev-v1.1.json articles (smoke_split), not on "
                "train-v1.1.json; F1/EM are not SQuAD results and time to 0.75 F1 is not a "
                "benchmark figure"
            ],
        )
    if not train_path.is_file():
        raise SquadFileError(
            f"{train_path}: file not found; time to 0.75 F1 needs the SQuAD v1.1 training set. "
            "With only the dev file, --set smoke_split=0.8 runs a labelled smoke test on it"
        )
    train, dev = load_squad(train_path), load_squad(dev_path)
    return Split(
        train.articles,
        dev.articles,
        f"SQuAD v1.1: {train_path.name} ({train.counts()['questions']:,} questions) train, "
        f"{dev_path.name} ({dev.counts()['questions']:,} questions) evaluate",
        smoke=False,
    )


@dataclass
class Encoded:
    """Token ids of one split side: contexts (N x Lc), questions (N x Lq), spans (N x 2), and
    per context token whether its word is in the question (N x Lc, 0/1: DrQA's exact-match
    feature, which a reader trained from scratch otherwise learns slowly)."""

    context: list[list[int]]
    question: list[list[int]]
    in_question: list[list[int]]
    spans: list[tuple[int, int]]
    qids: list[str]
    tokens: list[Tokens]  # context tokens per example (shared objects per paragraph)
    texts: list[str]  # context text per example
    skipped: int = 0  # training questions whose answer could not be used (see `encode`)


def build_vocabulary(articles: tuple[Article, ...], max_size: int, min_count: int) -> Vocabulary:
    """From the training articles only: their contexts (once each) and questions."""

    def texts():
        for art in articles:
            for par in art.paragraphs:
                yield tokenize(par.context).words
                for q in par.questions:
                    yield tokenize(q.question).words

    return Vocabulary(texts(), max_size, min_count)


def encode(
    articles: tuple[Article, ...],
    vocab: Vocabulary,
    max_context: int,
    max_question: int,
    training: bool,
    limit: int = 0,
) -> Encoded:
    """Questions in file order (the first `limit` when > 0), contexts padded or cut to the
    longest used context, at most `max_context` tokens. Training: the first answer's token
    span; a question is skipped when its answer offset matches no token or ends past the cut.
    Evaluation keeps every question (a cut context can only lose F1, never gain it)."""
    used: list[tuple[str, Tokens, Question]] = []
    skipped = 0
    for art in articles:
        for par in art.paragraphs:
            if limit and len(used) >= limit:
                break
            toks = tokenize(par.context)  # once per paragraph, shared by its questions
            for q in par.questions:
                if limit and len(used) >= limit:
                    break
                if training and _answer_span(toks, q, max_context) is None:
                    skipped += 1
                    continue
                used.append((par.context, toks, q))
    length = max(1, min(max_context, max((len(t) for _, t, _ in used), default=1)))
    out = Encoded([], [], [], [], [], [], [], skipped)
    for text, toks, q in used:
        q_words = tokenize(q.question).words
        asked = {w for w in q_words if w[0].isalnum()}
        out.context.append(vocab.ids(toks.words, length))
        out.question.append(vocab.ids(q_words, max_question))
        flags = [int(w in asked) for w in toks.words[:length]]
        out.in_question.append(flags + [0] * (length - len(flags)))
        span = _answer_span(toks, q, max_context) if training else None
        out.spans.append(span or (0, 0))  # evaluation: unused placeholder
        out.qids.append(q.qid)
        out.tokens.append(toks)
        out.texts.append(text)
    return out


def _answer_span(toks: Tokens, q: Question, max_context: int) -> tuple[int, int] | None:
    """Token span of the first answer, None when unusable for training."""
    ans = q.answers[0] if q.answers else None
    if ans is None:
        return None
    found = toks.char_span_to_tokens(ans.start, ans.start + len(ans.text))
    return None if found is None or found[1] >= max_context else found


def synthetic(
    n: int, length: int, q_length: int, vocab: int, max_answer: int, seed: int
) -> tuple[Encoded, list[tuple[str, list[str]]]]:
    """`n` random examples of the real shapes (`run --synthetic`: throughput without data):
    contexts of `length` random word ids whose text is `w<id> ...`, random questions, a random
    answer span of at most `max_answer` tokens, and that span's text as the gold answer, so
    the whole evaluation path (span decoding, official scorer) runs; its F1 is chance level."""
    rng = random.Random(seed)
    out = Encoded([], [], [], [], [], [], [])
    golds = []
    for i in range(n):
        ids = [rng.randrange(2, vocab) for _ in range(length)]
        question = [rng.randrange(2, vocab) for _ in range(q_length)]
        text = " ".join(f"w{t}" for t in ids)
        toks = tokenize(text)
        start = rng.randrange(length)
        end = min(length - 1, start + rng.randrange(max_answer))
        asked = set(question)
        out.context.append(ids)
        out.question.append(question)
        out.in_question.append([int(t in asked) for t in ids])
        out.spans.append((start, end))
        out.qids.append(f"synthetic-{seed}-{i}")
        out.tokens.append(toks)
        out.texts.append(text)
        golds.append((out.qids[-1], [toks.span_text(text, start, end)]))
    return out, golds
