"""Progressive resizing: the training image size per epoch range, as the fast DAWNBench ImageNet
entries did (small images early, when the network learns coarse features cheaply; full size at
the end, so it trains at the resolution it is evaluated at).

A schedule is written `FIRST-LAST:SIZE` items joined by `/`, e.g. `1-5:128/6-8:192/9-:224`
(the last range may be open). Ranges must start at epoch 1, follow each other without gaps or
overlaps, and the last one must be open, so every epoch has a size. Pure Python: the switch
parser validates a schedule before anything is built.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """Epochs `first`..`last` (inclusive; `last` None: to the end) train at `size` pixels."""

    first: int
    last: int | None
    size: int


def parse_schedule(text: str) -> list[Stage]:
    """Stages of `text`; ValueError (one line) naming the first bad item."""
    stages: list[Stage] = []
    items = [part.strip() for part in text.split("/")]
    for item in items:
        epochs, sep, size_text = item.partition(":")
        first_text, dash, last_text = epochs.partition("-")
        try:
            first = int(first_text)
            last = int(last_text) if last_text.strip() else None
            size = int(size_text)
        except ValueError:
            raise ValueError(
                f"progressive_resize item {item!r}: expected FIRST-LAST:SIZE, e.g. 1-5:128"
            ) from None
        if not sep or not dash:
            raise ValueError(
                f"progressive_resize item {item!r}: expected FIRST-LAST:SIZE, e.g. 1-5:128"
            )
        if size < 8:
            raise ValueError(f"progressive_resize item {item!r}: size must be at least 8 pixels")
        expected = stages[-1].last + 1 if stages and stages[-1].last is not None else 1
        if stages and stages[-1].last is None:
            raise ValueError(f"progressive_resize item {item!r}: comes after an open range")
        if first != expected:
            raise ValueError(
                f"progressive_resize item {item!r}: must start at epoch {expected} "
                "(ranges start at 1 and follow each other without gaps)"
            )
        if last is not None and last < first:
            raise ValueError(f"progressive_resize item {item!r}: last epoch before the first")
        stages.append(Stage(first, last, size))
    last = stages[-1]
    if last.last is not None:
        raise ValueError(
            f"progressive_resize {text!r}: the last range must be open "
            f"(e.g. {last.last + 1}-:{last.size}), so every epoch has a size"
        )
    return stages


def size_for(stages: list[Stage], epoch: int) -> int:
    """The training image size of `epoch` (1-based)."""
    for stage in stages:
        if stage.first <= epoch and (stage.last is None or epoch <= stage.last):
            return stage.size
    raise ValueError(f"epoch {epoch}: not covered by the progressive_resize schedule")


def describe(stages: list[Stage]) -> str:
    """`epochs 1-5: 128 px, 6-8: 192 px, 9-: 224 px`."""
    parts = [f"{s.first}-{'' if s.last is None else s.last}: {s.size} px" for s in stages]
    return "epochs " + ", ".join(parts)
