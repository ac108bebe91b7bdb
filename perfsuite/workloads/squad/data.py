"""SQuAD v1.1 JSON files and predictions files, read and checked. Pure Python (no torch).

Why here and not in the workload: `perfsuite eval squad` and the workload read the same files,
and a malformed file must be refused the same way everywhere: one line naming the file and the
first offending field, e.g. `dev.json: field data[3].paragraphs[0].qas[2].answers: ...`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsuite.safeio import load_json

EXPECTED_VERSION = "1.1"


class SquadFileError(ValueError):
    """A SQuAD dataset or predictions file that cannot be used (one line, names the file)."""


@dataclass(frozen=True)
class Answer:
    text: str
    start: int  # character offset into the context


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    answers: tuple[Answer, ...]


@dataclass(frozen=True)
class Paragraph:
    context: str
    questions: tuple[Question, ...]


@dataclass(frozen=True)
class Article:
    title: str
    paragraphs: tuple[Paragraph, ...]


@dataclass(frozen=True)
class SquadFile:
    """One dataset file: its articles in file order and the version it declares."""

    path: str
    version: str
    articles: tuple[Article, ...]

    def questions(self) -> Iterator[tuple[Paragraph, Question]]:
        for art in self.articles:
            for par in art.paragraphs:
                for q in par.questions:
                    yield par, q

    def golds(self) -> list[tuple[str, list[str]]]:
        """(question id, gold answer texts) for every question, in file order (the scorer's
        input)."""
        return [(q.qid, [a.text for a in q.answers]) for _, q in self.questions()]

    def counts(self) -> dict[str, int]:
        return {
            "articles": len(self.articles),
            "paragraphs": sum(len(a.paragraphs) for a in self.articles),
            "questions": sum(1 for _ in self.questions()),
        }


def _get(obj: Any, key: str, kind: type, path: str, where: str) -> Any:
    """obj[key] checked to be of `kind`; else one line naming the field (`where.key`)."""
    field = f"{where}.{key}" if where else key
    if not isinstance(obj, dict):
        raise SquadFileError(f"{path}: field {where or '(top level)'}: expected an object")
    if key not in obj:
        raise SquadFileError(f"{path}: field {field}: missing")
    value = obj[key]
    if (kind is int and isinstance(value, bool)) or not isinstance(value, kind):
        name = {list: "a list", str: "a string", int: "an integer"}[kind]
        raise SquadFileError(f"{path}: field {field}: expected {name}, got {_type(value)}")
    return value


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def load_squad(path: str | Path, need_answers: bool = True) -> SquadFile:
    """Read a SQuAD v1.1 file (train or dev). Every question must have an id; with
    `need_answers` every question needs at least one answer (the scorer maximises over them)."""
    p = str(path)
    raw = load_json(p, SquadFileError)
    if not isinstance(raw, dict):
        raise SquadFileError(f"{p}: expected a JSON object with 'data' and 'version'")
    version = raw.get("version")
    version = str(version) if version is not None else "unknown"
    articles = []
    seen: set[str] = set()
    for i, art in enumerate(_get(raw, "data", list, p, "")):
        aw = f"data[{i}]"
        title = art.get("title", "") if isinstance(art, dict) else ""
        paragraphs = []
        for j, par in enumerate(_get(art, "paragraphs", list, p, aw)):
            pw = f"{aw}.paragraphs[{j}]"
            context = _get(par, "context", str, p, pw)
            questions = []
            for k, qa in enumerate(_get(par, "qas", list, p, pw)):
                qw = f"{pw}.qas[{k}]"
                qid = _get(qa, "id", str, p, qw)
                if qid in seen:
                    raise SquadFileError(f"{p}: field {qw}.id: duplicate question id {qid!r}")
                seen.add(qid)
                text = qa.get("question", "") if isinstance(qa, dict) else ""
                answers = []
                for m, ans in enumerate(_get(qa, "answers", list, p, qw)):
                    ansq = f"{qw}.answers[{m}]"
                    answers.append(
                        Answer(
                            _get(ans, "text", str, p, ansq), _get(ans, "answer_start", int, p, ansq)
                        )
                    )
                if need_answers and not answers:
                    raise SquadFileError(f"{p}: field {qw}.answers: no gold answer")
                questions.append(Question(qid, str(text), tuple(answers)))
            paragraphs.append(Paragraph(context, tuple(questions)))
        articles.append(Article(str(title), tuple(paragraphs)))
    return SquadFile(p, version, tuple(articles))


def load_predictions(path: str | Path) -> dict[str, str]:
    """A predictions file: one JSON object from question id to answer text."""
    p = str(path)
    raw = load_json(p, SquadFileError)
    if not isinstance(raw, dict):
        raise SquadFileError(
            f"{p}: expected a JSON object from question id to answer text, got {_type(raw)}"
        )
    for qid, answer in raw.items():
        if not isinstance(answer, str):
            raise SquadFileError(f"{p}: field {qid}: expected a string, got {_type(answer)}")
    return raw
