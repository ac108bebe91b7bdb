"""Tokens for the `squad` reader: word/punctuation splitting with character offsets and a
vocabulary built from the training split. Pure Python (no torch, nothing downloaded).

Why offsets: an extractive reader predicts a span of context tokens; the answer it gives is
the context text between the first token's start and the last token's end, so the scorer sees
the original characters (case, inner punctuation), exactly as the official script expects.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# A run of letters/digits (\w, Unicode-aware), or any single other non-space character.
_TOKEN = re.compile(r"\w+|[^\w\s]")

PAD, UNK = 0, 1


@dataclass(frozen=True)
class Tokens:
    """Lower-cased tokens of one text and their [start, end) character offsets in it."""

    words: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.words)

    def span_text(self, text: str, first: int, last: int) -> str:
        """The original characters of tokens first..last (inclusive)."""
        return text[self.starts[first] : self.ends[last]]

    def char_span_to_tokens(self, start: int, end: int) -> tuple[int, int] | None:
        """Token indices (first, last) covering characters [start, end), or None when the
        span covers no token (an answer offset that does not match its context)."""
        first = last = None
        for i, (s, e) in enumerate(zip(self.starts, self.ends, strict=True)):
            if e > start and s < end:
                if first is None:
                    first = i
                last = i
            elif s >= end:
                break
        return None if first is None or last is None else (first, last)


def tokenize(text: str) -> Tokens:
    """Split into words and single punctuation marks, lower-cased, with offsets."""
    words, starts, ends = [], [], []
    for m in _TOKEN.finditer(text):
        words.append(m.group().lower())
        starts.append(m.start())
        ends.append(m.end())
    return Tokens(tuple(words), tuple(starts), tuple(ends))


class Vocabulary:
    """Word -> id. 0 is padding, 1 unknown; then words by falling count (ties alphabetical),
    those seen at least `min_count` times, at most `max_size` ids in all."""

    def __init__(self, texts: Iterable[Sequence[str]], max_size: int, min_count: int = 1) -> None:
        counts: Counter[str] = Counter()
        for words in texts:
            counts.update(words)
        ranked = sorted(
            (w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w)
        )
        self.words = ["<pad>", "<unk>", *ranked[: max(0, max_size - 2)]]
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, words: Sequence[str], length: int) -> list[int]:
        """`length` ids: the words (unknown -> UNK) cut or padded with PAD."""
        out = [self.index.get(w, UNK) for w in words[:length]]
        return out + [PAD] * (length - len(out))
